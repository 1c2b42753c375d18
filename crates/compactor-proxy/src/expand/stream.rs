//! Streamed answers: server-sent events read one at a time, held back from the first
//! tool call on, and the follow-up answers spliced into the client's one stream.
//!
//! Why hold from the first tool call: until the answer ends, the proxy cannot know
//! whether it calls `compactor_expand`; text before any call is relayed as it comes (the
//! client streams as before), and tool calls are only usable once the answer ends anyway.
//! When the answer turns out to expand, what was held (the calls and the answer's end)
//! is dropped and the follow-up's events continue the stream; when it does not, the held
//! events are relayed unchanged.
//!
//! Splicing a follow-up into the stream the client is reading, per route:
//! - chat completions: the chunks as they come (a chunk carries no position the client
//!   has seen);
//! - Messages: the follow-up's `message_start` is dropped and its content block indices
//!   are shifted past the blocks already relayed;
//! - Responses: `response.created`/`response.in_progress` are dropped, `output_index`
//!   is shifted past the items already relayed, `sequence_number` counts on, the
//!   follow-up's response carries the first one's id (the SDKs check that a stream is
//!   one response), and the final `response.*` event's `output` starts with the items
//!   relayed before.

use bytes::Bytes;
use serde_json::{Map, Value};

use super::answer::{Answer, anthropic_answer, chat_answer, responses_answer};
use crate::api::Api;

/// One server-sent event, as it came.
#[derive(Clone, Debug)]
pub struct Event {
    raw: Bytes,
    name: Option<String>,
    data: Option<Value>,
}

impl Event {
    fn parse(raw: Bytes) -> Event {
        let text = String::from_utf8_lossy(&raw);
        let mut name = None;
        let mut data = String::new();
        for line in text.lines() {
            if let Some(value) = line.strip_prefix("event:") {
                name = Some(value.trim().to_owned());
            } else if let Some(value) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value.strip_prefix(' ').unwrap_or(value));
            }
        }
        let data = serde_json::from_str(&data).ok();
        Event { raw, name, data }
    }

    /// The event's type: its `type` field, else its `event:` name.
    fn kind(&self) -> &str {
        self.data
            .as_ref()
            .and_then(|d| d.get("type"))
            .and_then(Value::as_str)
            .or(self.name.as_deref())
            .unwrap_or_default()
    }

    fn write(name: Option<&str>, data: &Value) -> Bytes {
        let mut out = String::new();
        if let Some(name) = name {
            out.push_str("event: ");
            out.push_str(name);
            out.push('\n');
        }
        out.push_str("data: ");
        out.push_str(&data.to_string());
        out.push_str("\n\n");
        Bytes::from(out)
    }
}

/// Cuts a byte stream into events (a blank line ends one).
#[derive(Default)]
pub struct Events {
    buf: Vec<u8>,
}

impl Events {
    /// The events completed by `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        let mut line_start = 0;
        let mut at = 0;
        while let Some(offset) = self.buf[at..].iter().position(|b| *b == b'\n') {
            let end = at + offset;
            let line = &self.buf[line_start..end];
            let blank = line.is_empty() || line == b"\r";
            at = end + 1;
            line_start = at;
            if blank {
                if !self.buf[start..at].iter().all(u8::is_ascii_whitespace) {
                    out.push(Event::parse(Bytes::copy_from_slice(&self.buf[start..at])));
                }
                start = at;
            }
        }
        self.buf.drain(..start);
        out
    }

    /// What is left when the stream ends (an event without its blank line).
    pub fn finish(&mut self) -> Option<Event> {
        let rest = std::mem::take(&mut self.buf);
        (!rest.iter().all(u8::is_ascii_whitespace)).then(|| {
            let mut raw = rest;
            raw.extend_from_slice(b"\n\n");
            Event::parse(Bytes::from(raw))
        })
    }
}

/// One upstream stream, read: what to relay now, what to hold, and the answer it made.
pub struct Reader {
    api: Api,
    holding: bool,
    held: Vec<Event>,
    /// Chat completions: the message assembled from its deltas.
    chat: Map<String, Value>,
    chat_calls: Vec<Map<String, Value>>,
    /// Messages: the content blocks, and each one's partial JSON input.
    blocks: Vec<(Value, String)>,
    /// Responses: the finished output items, or the final response's output.
    items: Vec<Value>,
    final_output: Option<Vec<Value>>,
}

impl Reader {
    /// A reader of one stream of `api`.
    pub fn new(api: Api) -> Reader {
        Reader {
            api,
            holding: false,
            held: Vec::new(),
            chat: Map::new(),
            chat_calls: Vec::new(),
            blocks: Vec::new(),
            items: Vec::new(),
            final_output: None,
        }
    }

    /// Takes one event: it comes back to be relayed now, or it is held.
    pub fn take(&mut self, event: Event) -> Option<Event> {
        if self.starts_a_call(&event) || self.ends_the_answer(&event) {
            self.holding = true;
        }
        self.read(&event);
        if self.holding {
            self.held.push(event);
            None
        } else {
            Some(event)
        }
    }

    fn starts_a_call(&self, event: &Event) -> bool {
        let Some(data) = &event.data else { return false };
        match self.api {
            Api::OpenAi => data
                .pointer("/choices/0/delta/tool_calls")
                .is_some_and(|calls| !calls.is_null()),
            Api::Anthropic => {
                event.kind() == "content_block_start" && data.pointer("/content_block/type") == Some(&"tool_use".into())
            }
            Api::Responses => {
                event.kind() == "response.output_item.added"
                    && data.pointer("/item/type") == Some(&"function_call".into())
            }
        }
    }

    /// The answer's end (its finish, usage, stop or final response): held too, so an
    /// answer whose call showed no start event of its own is still caught.
    fn ends_the_answer(&self, event: &Event) -> bool {
        let Some(data) = &event.data else {
            // `data: [DONE]`.
            return self.api == Api::OpenAi && event.raw.windows(6).any(|w| w == b"[DONE]");
        };
        match self.api {
            Api::OpenAi => {
                data.pointer("/choices/0/finish_reason").is_some_and(|f| !f.is_null())
                    || data.get("choices").and_then(Value::as_array).is_some_and(Vec::is_empty)
            }
            Api::Anthropic => matches!(event.kind(), "message_delta" | "message_stop"),
            Api::Responses => matches!(
                event.kind(),
                "response.completed" | "response.incomplete" | "response.failed"
            ),
        }
    }

    fn read(&mut self, event: &Event) {
        let Some(data) = &event.data else { return };
        match self.api {
            Api::OpenAi => self.read_chat(data),
            Api::Anthropic => self.read_anthropic(event.kind(), data),
            Api::Responses => match event.kind() {
                "response.output_item.done" => self.items.extend(data.get("item").cloned()),
                "response.completed" | "response.incomplete" => {
                    self.final_output = data.pointer("/response/output").and_then(Value::as_array).cloned();
                }
                _ => {}
            },
        }
    }

    fn read_chat(&mut self, data: &Value) {
        let Some(delta) = data.pointer("/choices/0/delta").and_then(Value::as_object) else {
            return;
        };
        for (key, value) in delta {
            match (key.as_str(), value) {
                ("tool_calls", Value::Array(calls)) => {
                    for call in calls {
                        let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                        while self.chat_calls.len() <= index {
                            self.chat_calls.push(Map::new());
                        }
                        merge_delta(&mut self.chat_calls[index], call);
                    }
                }
                (_, Value::String(text)) if key != "role" => {
                    let entry = self
                        .chat
                        .entry(key.clone())
                        .or_insert_with(|| Value::String(String::new()));
                    if let Value::String(so_far) = entry {
                        so_far.push_str(text);
                    }
                }
                _ => {}
            }
        }
    }

    fn read_anthropic(&mut self, kind: &str, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        match kind {
            "content_block_start" => {
                while self.blocks.len() <= index {
                    self.blocks.push((Value::Null, String::new()));
                }
                self.blocks[index] = (data.get("content_block").cloned().unwrap_or_default(), String::new());
            }
            "content_block_delta" => {
                let Some((block, partial)) = self.blocks.get_mut(index) else {
                    return;
                };
                let delta = &data["delta"];
                let append = |block: &mut Value, field: &str, piece: &Value| {
                    let so_far = block[field].as_str().unwrap_or_default().to_owned();
                    block[field] = Value::String(so_far + piece.as_str().unwrap_or_default());
                };
                match delta["type"].as_str() {
                    Some("text_delta") => append(block, "text", &delta["text"]),
                    Some("thinking_delta") => append(block, "thinking", &delta["thinking"]),
                    Some("signature_delta") => block["signature"] = delta["signature"].clone(),
                    Some("input_json_delta") => partial.push_str(delta["partial_json"].as_str().unwrap_or_default()),
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some((block, partial)) = self.blocks.get_mut(index)
                    && !partial.is_empty()
                {
                    block["input"] = serde_json::from_str(partial).unwrap_or_else(|_| Value::Object(Map::new()));
                }
            }
            _ => {}
        }
    }

    /// The answer the stream made.
    pub fn answer(&self) -> Answer {
        match self.api {
            Api::OpenAi => {
                let mut message = self.chat.clone();
                if !self.chat_calls.is_empty() {
                    let calls = self.chat_calls.iter().cloned().map(|mut call| {
                        call.remove("index");
                        Value::Object(call)
                    });
                    message.insert("tool_calls".into(), Value::Array(calls.collect()));
                }
                if !message.contains_key("content") {
                    message.insert("content".into(), Value::Null);
                }
                chat_answer(message)
            }
            Api::Anthropic => anthropic_answer(self.blocks.iter().map(|(block, _)| block.clone()).collect()),
            Api::Responses => responses_answer(self.final_output.clone().unwrap_or_else(|| self.items.clone())),
        }
    }

    /// The events held back.
    pub fn held(self) -> Vec<Event> {
        self.held
    }
}

/// Merges a tool call delta into the call so far: strings are appended (the arguments
/// come in pieces), objects merged, anything else replaced.
fn merge_delta(so_far: &mut Map<String, Value>, delta: &Value) {
    let Some(delta) = delta.as_object() else { return };
    for (key, value) in delta {
        match (so_far.get_mut(key), value) {
            (Some(Value::String(text)), Value::String(piece)) if key != "id" && key != "type" => text.push_str(piece),
            (Some(Value::Object(inner)), Value::Object(_)) => merge_delta(inner, value),
            _ => {
                so_far.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The client's one stream, made of the upstream's streams.
pub struct Splicer {
    api: Api,
    /// Which upstream stream is being relayed (0: the first).
    stream: usize,
    /// Messages: content blocks relayed, in all streams and before this one.
    blocks: usize,
    blocks_before: usize,
    /// Responses: output items relayed (added, and done), the next sequence number.
    items: usize,
    items_before: usize,
    done_items: Vec<Value>,
    done_before: Vec<Value>,
    sequence: u64,
    /// Responses: the first response's id, which the follow-ups' lifecycle events carry
    /// (the SDKs check that a stream is one response).
    response_id: Option<Value>,
}

impl Splicer {
    /// The splicer of a client stream of `api`.
    pub fn new(api: Api) -> Splicer {
        Splicer {
            api,
            stream: 0,
            blocks: 0,
            blocks_before: 0,
            items: 0,
            items_before: 0,
            done_items: Vec::new(),
            done_before: Vec::new(),
            sequence: 0,
            response_id: None,
        }
    }

    /// A follow-up stream starts.
    pub fn next_stream(&mut self) {
        self.stream += 1;
        self.blocks_before = self.blocks;
        self.items_before = self.items;
        self.done_before = self.done_items.clone();
    }

    /// The bytes to send the client for `event`, or `None` when it is dropped.
    pub fn relay(&mut self, event: Event) -> Option<Bytes> {
        match self.api {
            Api::OpenAi => Some(event.raw),
            Api::Anthropic => self.relay_anthropic(event),
            Api::Responses => self.relay_responses(event),
        }
    }

    fn relay_anthropic(&mut self, event: Event) -> Option<Bytes> {
        let kind = event.kind().to_owned();
        if self.stream > 0 && kind == "message_start" {
            return None;
        }
        if kind == "content_block_start" {
            self.blocks += 1;
        }
        let Some(mut data) = event
            .data
            .clone()
            .filter(|_| self.stream > 0 && kind.starts_with("content_block_"))
        else {
            return Some(event.raw);
        };
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        data["index"] = Value::from(index + self.blocks_before as u64);
        Some(Event::write(event.name.as_deref(), &data))
    }

    fn relay_responses(&mut self, event: Event) -> Option<Bytes> {
        let kind = event.kind().to_owned();
        if self.stream > 0 && matches!(kind.as_str(), "response.created" | "response.in_progress") {
            return None;
        }
        let Some(mut data) = event.data.clone() else {
            return Some(event.raw);
        };
        let mut changed = false;
        if kind == "response.output_item.added" {
            self.items += 1;
        }
        if kind == "response.output_item.done" {
            self.done_items.extend(data.get("item").cloned());
        }
        if self.stream > 0
            && let Some(index) = data.get("output_index").and_then(Value::as_u64)
        {
            data["output_index"] = Value::from(index + self.items_before as u64);
            changed = true;
        }
        if let Some(id) = data.pointer_mut("/response/id") {
            match &self.response_id {
                None => self.response_id = Some(id.clone()),
                Some(first) if first != id => {
                    *id = first.clone();
                    changed = true;
                }
                Some(_) => {}
            }
        }
        if self.stream > 0
            && matches!(
                kind.as_str(),
                "response.completed" | "response.incomplete" | "response.failed"
            )
            && let Some(Value::Array(output)) = data.pointer_mut("/response/output")
        {
            let mut all = self.done_before.clone();
            all.append(output);
            *output = all;
            changed = true;
        }
        if let Some(sequence) = data.get("sequence_number").and_then(Value::as_u64) {
            if sequence != self.sequence {
                data["sequence_number"] = Value::from(self.sequence);
                changed = true;
            }
            self.sequence += 1;
        }
        Some(if changed {
            Event::write(event.name.as_deref(), &data)
        } else {
            event.raw
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events(text: &str) -> Vec<Event> {
        let mut cut = Events::default();
        let mut out = Vec::new();
        // One byte at a time: events split anywhere come out whole.
        for byte in text.as_bytes() {
            out.extend(cut.push(std::slice::from_ref(byte)));
        }
        out.extend(cut.finish());
        out
    }

    #[test]
    fn events_are_cut_at_blank_lines_whatever_the_chunks() {
        let all = events("event: a\ndata: {\"type\":\"x\"}\n\ndata: [DONE]\r\n\r\ndata: {\"n\":1}");
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].kind(), "x");
        assert_eq!(all[0].raw, Bytes::from_static(b"event: a\ndata: {\"type\":\"x\"}\n\n"));
        assert!(all[1].data.is_none());
        assert_eq!(all[2].data, Some(json!({"n": 1})));
    }

    #[test]
    fn a_chat_stream_is_relayed_until_its_first_call_and_assembles_its_answer() {
        let chunk = |delta: Value| format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta}]}));
        let text = [
            chunk(json!({"role": "assistant", "content": "Let me "})),
            chunk(json!({"content": "look."})),
            chunk(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "compactor_expand", "arguments": "{\"handles\":"}}]})),
            chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "[\"#0123456789\"]}"}}]})),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let mut reader = Reader::new(Api::OpenAi);
        let relayed = events(&text).into_iter().filter_map(|e| reader.take(e)).count();
        assert_eq!(relayed, 2);
        let answer = reader.answer();
        assert!(answer.expands());
        assert_eq!(answer.calls[0].arguments, "{\"handles\":[\"#0123456789\"]}");
        assert_eq!(answer.items[0]["content"], "Let me look.");
        assert_eq!(reader.held().len(), 3);
    }

    #[test]
    fn a_messages_follow_up_continues_the_block_indices_and_drops_its_start() {
        let mut splicer = Splicer::new(Api::Anthropic);
        let event =
            |data: Value| events(&format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())).remove(0);
        splicer
            .relay(event(json!({"type": "message_start", "message": {}})))
            .unwrap();
        splicer
            .relay(event(
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ))
            .unwrap();
        splicer.next_stream();
        assert!(
            splicer
                .relay(event(json!({"type": "message_start", "message": {}})))
                .is_none()
        );
        let out = splicer
            .relay(event(
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}),
            ))
            .unwrap();
        let spliced = events(std::str::from_utf8(&out).unwrap()).remove(0);
        assert_eq!(spliced.data.unwrap()["index"], 1);
    }

    #[test]
    fn a_responses_follow_up_counts_on_and_its_final_output_starts_with_what_was_relayed() {
        let mut splicer = Splicer::new(Api::Responses);
        let event =
            |data: Value| events(&format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())).remove(0);
        let first = json!({"type": "message", "id": "m1"});
        splicer
            .relay(event(
                json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_a"}}),
            ))
            .unwrap();
        splicer
            .relay(event(
                json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": first}),
            ))
            .unwrap();
        splicer
            .relay(event(
                json!({"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": first}),
            ))
            .unwrap();
        splicer.next_stream();
        assert!(
            splicer
                .relay(event(json!({"type": "response.created", "sequence_number": 0})))
                .is_none()
        );
        let second = json!({"type": "message", "id": "m2"});
        let out = splicer
            .relay(event(
                json!({"type": "response.completed", "sequence_number": 5, "response": {"id": "resp_b", "output": [second]}}),
            ))
            .unwrap();
        let data = events(std::str::from_utf8(&out).unwrap()).remove(0).data.unwrap();
        assert_eq!(data["sequence_number"], 3);
        assert_eq!(data["response"]["output"], json!([first, second]));
        assert_eq!(data["response"]["id"], "resp_a", "the stream stays one response");
    }
}
