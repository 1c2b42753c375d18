//! Anthropic's threshold compaction (`context_management.edits` `compact_20260112`),
//! done by the proxy for an upstream without it, answered as the API answers it: when the
//! round ran a pass, the response leads with a `compaction` block standing for the
//! conversation the upstream was sent (the pass's summary and the turns it kept), sealed
//! as the on-demand block is ([`super::anthropic_block`]). The client appends the response
//! to its messages as usual; on its next request the block replaces everything before it
//! and the proxy opens it into those turns, so the client's history stays short too.

use axum::body::Body;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::anthropic_block::{COMPACTION_BLOCK, sealed_block};
use super::anthropic_serve::compaction_answer;
use super::seal::owner_of;
use crate::api::{self, Api};
use crate::sessions::Prepared;
use crate::state::AppState;
use llm_compactor::format::context_management::{Edit, edits};

/// The most of a non-streamed answer read to put the block in it (beyond it, the answer
/// goes as it came).
const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// A Messages request's threshold compaction, done by the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Threshold {
    /// `pause_after_compaction`: a round that ran a pass is answered with the block
    /// alone (`stop_reason: "compaction"`), and the upstream is not asked.
    pause: bool,
}

/// The threshold compaction a Messages request asks of an upstream that has none (the
/// proxy serves compaction for it): its answer then carries the proxy's block.
pub(crate) fn asks_threshold(state: &AppState, api: Api, request: Option<&Value>) -> Option<Threshold> {
    let request = request.filter(|r| {
        api == Api::Anthropic
            && state.serves_compaction.load(std::sync::atomic::Ordering::Relaxed)
            && edits(r).contains(&Edit::Compact)
    })?;
    let pause = request
        .pointer("/context_management/edits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|edit| {
            edit.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.starts_with("compact_"))
                && edit.get("pause_after_compaction").and_then(Value::as_bool) == Some(true)
        });
    Some(Threshold { pause })
}

/// The answer of a round that paused after its compaction (`pause_after_compaction`, and
/// the round ran a pass): the block alone, as the API answers; `None` to forward it.
pub(crate) fn paused_answer(
    threshold: Threshold,
    state: &AppState,
    headers: &HeaderMap,
    request: &api::Request,
    prepared: &Prepared,
) -> Option<Response> {
    if !threshold.pause {
        return None;
    }
    let block = threshold_block(state, headers, request, prepared)?;
    let usage = prepared.done.as_ref().map(|done| done.usage).unwrap_or_default();
    Some(compaction_answer(&request.model, block, usage, request.stream))
}

/// The block the answer to `prepared` leads with: `None` unless its round ran a pass.
pub(crate) fn threshold_block(
    state: &AppState,
    headers: &HeaderMap,
    request: &api::Request,
    prepared: &Prepared,
) -> Option<Value> {
    let done = prepared.done.as_ref()?;
    let text = done.summary.clone().unwrap_or_else(|| {
        format!(
            "The conversation so far, compacted by llm-compactor: {} messages, older tool results shortened.",
            prepared.messages.len()
        )
    });
    let (value, _) = request.wire.to_value(prepared.messages.clone());
    let turns = value
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Some(sealed_block(
        &state.config.sealer,
        &owner_of(headers),
        &text,
        &turns,
        &request.identity.key,
    ))
}

/// `response` (the upstream's answer, relayed) with `block` first in its content: in
/// the message of a JSON answer, or as the stream's first content block (its own
/// `content_block_start`, one `compaction_delta`, `content_block_stop`, and the indices of
/// the answer's blocks moved up by one). An error answer goes as it came.
pub(crate) async fn lead_with(response: Response, block: Value) -> Response {
    if !response.status().is_success() {
        return response;
    }
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (mut parts, body) = response.into_parts();
    if streamed {
        let stream = Leading {
            block: Some(block),
            buffer: Vec::new(),
        }
        .over(body);
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ANSWER).await else {
        return Response::from_parts(parts, Body::from("answer over the proxy's limit"));
    };
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut message) if message.get("content").is_some_and(Value::is_array) => {
            if let Some(Value::Array(content)) = message.get_mut("content") {
                content.insert(0, block);
            }
            Bytes::from(serde_json::to_vec(&message).unwrap_or_else(|_| bytes.to_vec()))
        }
        _ => bytes,
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(body))
}

/// The SSE rewrite: events pass one by one, the block goes in after `message_start`.
struct Leading {
    block: Option<Value>,
    buffer: Vec<u8>,
}

impl Leading {
    fn over(self, body: Body) -> impl futures_util::Stream<Item = Result<Bytes, axum::Error>> {
        futures_util::stream::unfold(
            (self, body.into_data_stream(), false),
            |(mut state, mut inner, ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    match inner.next().await {
                        Some(Ok(chunk)) => {
                            state.buffer.extend_from_slice(&chunk);
                            let out = state.complete_events();
                            if !out.is_empty() {
                                return Some((Ok(Bytes::from(out)), (state, inner, false)));
                            }
                        }
                        Some(Err(e)) => return Some((Err(e), (state, inner, true))),
                        None => {
                            let rest = std::mem::take(&mut state.buffer);
                            return (!rest.is_empty()).then(|| (Ok(Bytes::from(rest)), (state, inner, true)));
                        }
                    }
                }
            },
        )
    }

    /// The complete events in the buffer, rewritten; the incomplete tail stays.
    fn complete_events(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some((end, gap)) = event_end(&self.buffer) {
            let event: Vec<u8> = self.buffer.drain(..end + gap).collect();
            self.rewrite(&event[..end], &event[end..], &mut out);
        }
        out
    }

    fn rewrite(&mut self, event: &[u8], gap: &[u8], out: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(event);
        let name = text.lines().find_map(|l| l.strip_prefix("event:")).map(str::trim);
        let data = text
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok());
        let Some(mut data) = data else {
            out.extend_from_slice(event);
            out.extend_from_slice(gap);
            return;
        };
        let kind = data.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        if kind == "message_start" {
            out.extend_from_slice(event);
            out.extend_from_slice(gap);
            if let Some(block) = self.block.take() {
                out.extend_from_slice(block_events(&block).as_bytes());
            }
            return;
        }
        let shifted = kind.starts_with("content_block_")
            && self.block.is_none()
            && data.get("index").and_then(Value::as_u64).is_some();
        if !shifted {
            out.extend_from_slice(event);
            out.extend_from_slice(gap);
            return;
        }
        let index = data["index"].as_u64().unwrap_or_default();
        data["index"] = json!(index + 1);
        let name = name.unwrap_or(&kind);
        out.extend_from_slice(format!("event: {name}\ndata: {data}").as_bytes());
        out.extend_from_slice(gap);
    }
}

/// Where the first complete event in `buffer` ends, and the length of the blank line
/// after it (`\n\n` or `\r\n\r\n`).
fn event_end(buffer: &[u8]) -> Option<(usize, usize)> {
    let lf = buffer.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buffer.windows(4).position(|w| w == b"\r\n\r\n").map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
}

/// The block as the API streams a compaction block, at index 0.
fn block_events(block: &Value) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    [
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": COMPACTION_BLOCK, "content": null}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta",
                   "content": block["content"], "encrypted_content": block["encrypted_content"]}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_block_leads_a_stream_split_anywhere_and_the_answer_s_indices_move_up() {
        let answer = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"content\":[]}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let block = json!({"type": "compaction", "content": "summary", "encrypted_content": "llmc1.x.y"});
        for split in [1, 7, 50, answer.len()] {
            let chunks: Vec<Result<Bytes, std::io::Error>> = answer
                .as_bytes()
                .chunks(split)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            let response = Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures_util::stream::iter(chunks)))
                .unwrap();
            let out = lead_with(response, block.clone()).await;
            let text =
                String::from_utf8(axum::body::to_bytes(out.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
            let data: Vec<Value> = text
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str(d).unwrap())
                .collect();
            let kinds: Vec<(&str, Option<u64>)> = data
                .iter()
                .map(|d| (d["type"].as_str().unwrap(), d["index"].as_u64()))
                .collect();
            assert_eq!(
                kinds,
                [
                    ("message_start", None),
                    ("content_block_start", Some(0)),
                    ("content_block_delta", Some(0)),
                    ("content_block_stop", Some(0)),
                    ("content_block_start", Some(1)),
                    ("content_block_delta", Some(1)),
                    ("content_block_stop", Some(1)),
                    ("message_stop", None),
                ],
                "split {split}"
            );
            assert_eq!(data[2]["delta"]["encrypted_content"], "llmc1.x.y");
        }
    }

    #[tokio::test]
    async fn the_block_leads_a_json_answer_and_an_error_is_left_alone() {
        let block = json!({"type": "compaction", "content": "summary"});
        let ok = Response::new(Body::from(r#"{"content":[{"type":"text","text":"hi"}]}"#));
        let out = lead_with(ok, block.clone()).await;
        let body: Value =
            serde_json::from_slice(&axum::body::to_bytes(out.into_body(), 1 << 20).await.unwrap()).unwrap();
        assert_eq!(body["content"], json!([block, {"type": "text", "text": "hi"}]));
        let mut error = Response::new(Body::from("{\"error\":{}}"));
        *error.status_mut() = axum::http::StatusCode::BAD_REQUEST;
        let out = lead_with(error, block).await;
        assert_eq!(
            axum::body::to_bytes(out.into_body(), 1 << 20).await.unwrap(),
            "{\"error\":{}}"
        );
    }
}
