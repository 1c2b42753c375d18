//! Where a server-side compaction's item goes in the answer, as OpenAI's API puts it:
//! first in the response's `output` (the compaction ran before the model answered), and,
//! streamed, as its own `response.output_item.added` and `.done` events before the
//! model's first item, every later event's `output_index` one further and its
//! `sequence_number` two further, and the item in the final `response.completed` (or
//! `.incomplete`, `.failed`) object's `output`.
//!
//! Pure: the item and the upstream's bytes in, the client's bytes out. The route's shell
//! ([`super::server_side::with_item`]) feeds it the upstream's answer.

use serde_json::{Value, json};

/// The events that come before any output item: the item is inserted after them.
const OPENING: &[&str] = &["response.created", "response.in_progress", "response.queued"];

/// Puts `item` first in a non-streamed response's `output`; false (nothing changed) for
/// a body that has no `output` list.
pub(crate) fn into_response(body: &mut Value, item: &Value) -> bool {
    match body.get_mut("output") {
        Some(Value::Array(output)) => {
            output.insert(0, item.clone());
            true
        }
        _ => false,
    }
}

/// A whole response (`object: "response"`, its `output` and `usage`) as the events the
/// API streams for it: `response.created` (in progress, no output yet), each output
/// item added and done, `response.completed`, numbered from 0.
pub(crate) fn events_of(response: &Value) -> String {
    let mut out = String::new();
    let mut sequence = 0;
    let mut event = |mut data: Value| {
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        let name = data["type"].as_str().unwrap_or_default().to_owned();
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    if let Some(object) = created.as_object_mut() {
        object.remove("usage");
    }
    event(json!({"type": "response.created", "response": created}));
    for (index, item) in response["output"].as_array().into_iter().flatten().enumerate() {
        event(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
        event(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    event(json!({"type": "response.completed", "response": response}));
    out
}

/// Inserts a compaction item into a streamed response (server-sent events), chunk by
/// chunk: [`SseInsert::push`] each chunk of the upstream's stream as it arrives, and
/// [`SseInsert::finish`] at its end.
#[derive(Debug)]
pub(crate) struct SseInsert {
    item: Value,
    /// Bytes of an event not complete yet.
    pending: Vec<u8>,
    /// The item's events went out: later events are renumbered.
    inserted: bool,
}

impl SseInsert {
    /// An insertion of `item`.
    pub(crate) fn new(item: Value) -> Self {
        SseInsert {
            item,
            pending: Vec::new(),
            inserted: false,
        }
    }

    /// True once the item's events went out.
    pub(crate) fn inserted(&self) -> bool {
        self.inserted
    }

    /// The bytes to send the client for `chunk` of the upstream's stream (the complete
    /// events in it, rewritten; an incomplete one waits for the next chunk).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::with_capacity(self.pending.len() + 64);
        while let Some((end, separator)) = event_end(&self.pending) {
            let event: Vec<u8> = self.pending.drain(..end + separator).collect();
            self.event(&event[..end], &event[end..], &mut out);
        }
        out
    }

    /// What is left at the end of the stream (an event without its blank line, as it
    /// came).
    pub(crate) fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }

    fn event(&mut self, block: &[u8], separator: &[u8], out: &mut Vec<u8>) {
        let Some((mut data, other_lines)) = parse_event(block) else {
            out.extend_from_slice(block);
            out.extend_from_slice(separator);
            return;
        };
        let kind = data.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !self.inserted && !OPENING.contains(&kind.as_str()) && kind != "error" {
            let sequence = data.get("sequence_number").and_then(Value::as_u64);
            for (offset, name) in [(0, "response.output_item.added"), (1, "response.output_item.done")] {
                let mut event = json!({"type": name, "output_index": 0, "item": self.item});
                if let Some(n) = sequence {
                    event["sequence_number"] = json!(n + offset);
                }
                out.extend_from_slice(format!("event: {name}\ndata: {event}\n\n").as_bytes());
            }
            self.inserted = true;
        }
        if self.inserted {
            shift(&mut data, "output_index", 1);
            shift(&mut data, "sequence_number", 2);
            if let Some(Value::Array(output)) = data.get_mut("response").and_then(|r| r.get_mut("output")) {
                output.insert(0, self.item.clone());
            }
        }
        for line in other_lines {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        out.extend_from_slice(format!("data: {data}").as_bytes());
        out.extend_from_slice(separator);
    }
}

/// Adds `by` to the number at `field`, when there is one.
fn shift(data: &mut Value, field: &str, by: u64) {
    if let Some(n) = data.get(field).and_then(Value::as_u64) {
        data[field] = json!(n + by);
    }
}

/// The end of the first complete event in `bytes` and the length of the blank line that
/// ends it (`\n\n` or `\r\n\r\n`).
fn event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    let find = |needle: &[u8]| bytes.windows(needle.len()).position(|w| w == needle);
    let lf = find(b"\n\n").map(|i| (i, 2));
    let crlf = find(b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// An event's JSON `data` (its data lines joined) and its other lines (`event:`, `id:`,
/// comments), or `None` when its data is not one JSON object (`[DONE]`, a comment alone):
/// such an event is relayed as it came.
fn parse_event(block: &[u8]) -> Option<(Value, Vec<&[u8]>)> {
    let mut data = Vec::new();
    let mut other = Vec::new();
    for line in block.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match line.strip_prefix(b"data:") {
            Some(rest) => {
                if !data.is_empty() {
                    data.push(b'\n');
                }
                data.extend_from_slice(rest.strip_prefix(b" ").unwrap_or(rest));
            }
            None => other.push(line),
        }
    }
    match serde_json::from_slice::<Value>(&data) {
        Ok(value @ Value::Object(_)) => Some((value, other)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<Value> {
        text.split("\n\n")
            .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter_map(|data| serde_json::from_str(data).ok())
            .collect()
    }

    #[test]
    fn the_item_comes_first_and_everything_after_it_is_renumbered() {
        let item = json!({"id": "cmp_1", "type": "compaction", "encrypted_content": "llmc1.x"});
        let message = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": []});
        let upstream = [
            json!({"type": "response.created", "sequence_number": 0, "response": {"output": []}}),
            json!({"type": "response.in_progress", "sequence_number": 1, "response": {"output": []}}),
            json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 0, "item": message}),
            json!({"type": "response.output_text.delta", "sequence_number": 3, "output_index": 0, "content_index": 0, "delta": "hi"}),
            json!({"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": message}),
            json!({"type": "response.completed", "sequence_number": 5, "response": {"output": [message]}}),
        ];
        let text: String = upstream
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect();
        // Fed in chunks that cut events (and lines) anywhere.
        let mut insert = SseInsert::new(item.clone());
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(7) {
            out.extend(insert.push(chunk));
        }
        out.extend(insert.finish());
        assert!(insert.inserted());
        let out = String::from_utf8(out).unwrap();
        let got = events(&out);
        let kinds: Vec<&str> = got.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.output_item.done",
                "response.output_item.added",
                "response.output_text.delta",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let sequence: Vec<u64> = got.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
        assert_eq!(sequence, (0..8).collect::<Vec<_>>());
        assert_eq!(got[2]["item"], item);
        assert_eq!(got[2]["output_index"], 0);
        assert_eq!(got[4]["output_index"], 1);
        assert_eq!(got[5]["output_index"], 1);
        assert_eq!(got[7]["response"]["output"], json!([item, message]));
        assert!(out.contains("event: response.output_text.delta\ndata: "));
    }

    #[test]
    fn other_events_pass_as_they_came() {
        let mut insert = SseInsert::new(json!({"type": "compaction"}));
        let text = ": keep-alive\r\n\r\ndata: [DONE]\n\n";
        let mut out = insert.push(text.as_bytes());
        out.extend(insert.push(b"data: {\"type\": \"error\"}"));
        assert_eq!(String::from_utf8(out).unwrap(), text);
        assert!(!insert.inserted(), "an error is no place for the item");
        assert_eq!(insert.finish(), b"data: {\"type\": \"error\"}");

        let whole =
            json!({"object": "response", "status": "completed", "output": [{"type": "compaction"}], "usage": {}});
        let streamed = events(&events_of(&whole));
        let kinds: Vec<&str> = streamed.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        assert_eq!(streamed[0]["response"]["output"], json!([]));
        assert_eq!(streamed[3]["response"], whole);
        assert_eq!(streamed[3]["sequence_number"], 3);

        let mut body = json!({"object": "response", "output": [{"type": "message"}]});
        assert!(into_response(&mut body, &json!({"type": "compaction"})));
        assert_eq!(body["output"][0]["type"], "compaction");
        assert!(!into_response(&mut json!({"error": {}}), &json!({})));
    }
}
