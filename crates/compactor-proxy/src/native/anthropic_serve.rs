//! Anthropic's on-demand compaction (beta `compact-2026-09-04`: a top-level
//! `compaction` parameter on `POST /v1/messages`), answered by the proxy for an upstream
//! without it: a forced pass over the request's conversation, as a round of its session,
//! and a Messages response holding one `compaction` block ([`super::anthropic_block`])
//! with `stop_reason: "compaction"`, streamed or not as the client asked.

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use super::anthropic_block::{COMPACTION_BLOCK, resolve_blocks, sealed_block};
use super::seal::owner_of;
use super::serve::requested_round;
use crate::api::Api;
use crate::error::ProxyError;
use crate::identity::SESSION_HEADER;
use crate::state::AppState;

/// The request parameter that asks for on-demand compaction.
const PARAMETER: &str = "compaction";

/// What the Messages route does with a request once the proxy's own compaction has read
/// it ([`on_messages`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum MessagesCompaction {
    /// A compaction request for an upstream without compaction: the proxy answers it
    /// ([`serve_messages_compaction`]).
    Serve,
    /// A compaction request for an upstream that has it: forwarded as it came.
    Forward,
    /// Any other request; `rewritten` when its blocks of ours were opened or no-op blocks
    /// dropped (the body must be written again).
    Continue {
        /// The request changed.
        rewritten: bool,
    },
}

/// Reads a Messages request for Anthropic's compaction, before anything else does:
/// opens the compaction blocks this proxy wrote into the turns they stand for; for an
/// upstream without compaction (`--native-compaction serve`, or `auto` once learned)
/// drops the no-op blocks (`content: null`) and the `compact-*` betas from `headers`
/// (such an upstream would refuse or ignore them), and says a compaction request is the
/// proxy's to answer. A request that carried a block of ours goes on in the session that
/// wrote it (`x-compactor-session`, unless the client sent one; never forwarded).
///
/// # Errors
/// 400 naming a block of ours that is forged, altered or another client's.
pub(crate) fn on_messages(
    state: &AppState,
    headers: &mut HeaderMap,
    request: &mut Value,
) -> Result<MessagesCompaction, ProxyError> {
    let serving = state.serves_compaction.load(std::sync::atomic::Ordering::Relaxed);
    let asks = request.get(PARAMETER).is_some_and(|v| !v.is_null());
    if asks && !serving {
        return Ok(MessagesCompaction::Forward);
    }
    let opened = resolve_blocks(request, &state.config.sealer, headers).map_err(ProxyError::BadRequest)?;
    state.metrics.native_messages.blocks_resolved(opened.blocks);
    let mut rewritten = opened.blocks > 0;
    // The conversation goes on in the session that wrote the block (its first user
    // message is now the summary's: the digest would start another); a request that
    // names another session itself is refused: a block opens only where it was given.
    if let Some(session) = opened.session {
        match headers.get(SESSION_HEADER) {
            Some(named) if named.as_bytes() != session.as_bytes() => {
                return Err(ProxyError::BadRequest(format!(
                    "messages: a compaction block of another session was sent in session {:?}: a \
                     compaction block opens only in the session it was given to",
                    String::from_utf8_lossy(named.as_bytes())
                )));
            }
            Some(_) => {}
            None => {
                if let Ok(value) = HeaderValue::from_str(&session) {
                    headers.insert(SESSION_HEADER, value);
                }
            }
        }
    }
    if serving {
        rewritten |= drop_noop_blocks(request) > 0;
        without_compaction_betas(headers);
    }
    Ok(if asks {
        MessagesCompaction::Serve
    } else {
        MessagesCompaction::Continue { rewritten }
    })
}

/// A `POST /v1/messages/count_tokens` body read as [`on_messages`] reads a request (the
/// API accepts the `compaction` parameter there and ignores it: for an upstream without
/// compaction it is removed); the body to forward when it changed.
///
/// # Errors
/// 400 naming a block of ours that is forged, altered or another client's.
pub(crate) fn on_count_tokens(
    state: &AppState,
    headers: &mut HeaderMap,
    body: &Bytes,
) -> Result<Option<Bytes>, ProxyError> {
    let Ok(mut value) = serde_json::from_slice::<Value>(body) else {
        return Ok(None);
    };
    if !value.is_object() {
        return Ok(None);
    }
    let changed = match on_messages(state, headers, &mut value)? {
        MessagesCompaction::Forward => false,
        MessagesCompaction::Serve => value.as_object_mut().and_then(|o| o.remove(PARAMETER)).is_some(),
        MessagesCompaction::Continue { rewritten } => rewritten,
    };
    Ok(changed.then(|| Bytes::from(serde_json::to_vec(&value).unwrap_or_else(|_| body.to_vec()))))
}

/// Removes the compaction blocks that hold no summary (`content: null`: a failed or
/// empty compaction, which the API treats as a no-op) and the turns left empty; how many.
fn drop_noop_blocks(request: &mut Value) -> usize {
    let Some(Value::Array(messages)) = request.get_mut("messages") else {
        return 0;
    };
    let mut dropped = 0;
    for message in messages.iter_mut() {
        if let Some(Value::Array(blocks)) = message.get_mut("content") {
            let before = blocks.len();
            blocks.retain(|b| {
                !(b.get("type").and_then(Value::as_str) == Some(COMPACTION_BLOCK)
                    && b.get("content").is_none_or(Value::is_null)
                    && b.get("encrypted_content").is_none_or(Value::is_null))
            });
            dropped += before - blocks.len();
        }
    }
    if dropped > 0 {
        messages.retain(|m| m.get("content").and_then(Value::as_array).is_none_or(|b| !b.is_empty()));
    }
    dropped
}

/// Drops the `compact-*` betas from `anthropic-beta` (the header goes when none is left).
fn without_compaction_betas(headers: &mut HeaderMap) {
    let Some(current) = headers.get("anthropic-beta").and_then(|v| v.to_str().ok()) else {
        return;
    };
    let kept: Vec<&str> = current
        .split(',')
        .map(str::trim)
        .filter(|beta| !beta.is_empty() && !beta.starts_with("compact-"))
        .collect();
    if kept.len() == current.split(',').filter(|b| !b.trim().is_empty()).count() {
        return;
    }
    match HeaderValue::from_str(&kept.join(",")) {
        Ok(value) if !kept.is_empty() => {
            headers.insert("anthropic-beta", value);
        }
        _ => {
            headers.remove("anthropic-beta");
        }
    }
}

/// Answers an on-demand compaction request (`request`, its blocks of ours already
/// opened) itself: the session's round with a pass forced (`Attempt::Requested`), and a
/// Messages response whose content is one `compaction` block standing for the compacted
/// conversation (`content: null` when there was nothing to compact: the client keeps its
/// conversation, as with the API's failed compaction).
///
/// # Errors
/// 400 for a body that is not a Messages request; the store's and the proxy's own
/// failures as in every round.
pub(crate) async fn serve_messages_compaction(
    state: &AppState,
    headers: &HeaderMap,
    mut request: Value,
) -> Result<Response, ProxyError> {
    if let Some(object) = request.as_object_mut() {
        object.remove(PARAMETER);
    }
    let owner = owner_of(headers);
    let (request, prepared) = requested_round(state, headers, Api::Anthropic, request, None, "compaction").await?;
    let usage = prepared.done.as_ref().map(|done| done.usage).unwrap_or_default();
    let compacted = prepared.done.is_some() || prepared.removed > 0;
    let block = if compacted {
        let kept = prepared.messages.len();
        let text = match prepared.done.as_ref().and_then(|done| done.summary.clone()) {
            Some(summary) => summary,
            None => format!(
                "The conversation so far, compacted by llm-compactor: {kept} messages, older tool results shortened."
            ),
        };
        let (value, _) = request.wire.to_value(prepared.messages);
        let turns = match value.get("messages") {
            Some(Value::Array(turns)) => turns.clone(),
            _ => Vec::new(),
        };
        sealed_block(&state.config.sealer, &owner, &text, &turns, &request.identity.key)
    } else {
        json!({"type": COMPACTION_BLOCK, "content": null})
    };
    state.metrics.native_messages.served();
    tracing::info!(
        session = %request.identity.key,
        compacted,
        "served an Anthropic compaction request"
    );
    Ok(compaction_answer(&request.model, block, usage, request.stream))
}

/// A Messages answer holding `block` alone, `stop_reason: "compaction"`, billed `usage`:
/// JSON, or the stream when `stream`.
pub(crate) fn compaction_answer(model: &str, block: Value, usage: llm_compactor::Usage, stream: bool) -> Response {
    let message = json!({
        "id": format!("msg_cmp_{}", uuid::Uuid::new_v4().simple()),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "compaction",
        "stop_sequence": null,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_write_tokens,
            "cache_read_input_tokens": usage.cache_read_tokens,
        },
    });
    if stream {
        sse(message)
    } else {
        axum::Json(message).into_response()
    }
}

/// `message` as the Messages stream: `message_start` (no content yet),
/// `content_block_start` / one `compaction_delta` with the whole block /
/// `content_block_stop` (as the API streams a compaction block), `message_delta` with
/// the stop reason, `message_stop`.
fn sse(message: Value) -> Response {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let block = &message["content"][0];
    let mut body = event("message_start", json!({"type": "message_start", "message": start}));
    body.push_str(&event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": COMPACTION_BLOCK, "content": null}}),
    ));
    body.push_str(&event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {
            "type": "compaction_delta",
            "content": block["content"],
            "encrypted_content": block.get("encrypted_content").cloned().unwrap_or(Value::Null),
        }}),
    ));
    body.push_str(&event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    body.push_str(&event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "compaction", "stop_sequence": null},
               "usage": {"output_tokens": message["usage"]["output_tokens"]}}),
    ));
    body.push_str(&event("message_stop", json!({"type": "message_stop"})));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_compaction_betas_are_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "anthropic-beta",
            "compact-2026-09-04, interleaved-thinking-2025-05-14,compact-2026-01-12"
                .parse()
                .unwrap(),
        );
        without_compaction_betas(&mut headers);
        assert_eq!(headers["anthropic-beta"], "interleaved-thinking-2025-05-14");
        headers.insert("anthropic-beta", "compact-2026-09-04".parse().unwrap());
        without_compaction_betas(&mut headers);
        assert!(headers.get("anthropic-beta").is_none());
        headers.insert("anthropic-beta", "a,b".parse().unwrap());
        without_compaction_betas(&mut headers);
        assert_eq!(headers["anthropic-beta"], "a,b");
    }

    #[test]
    fn no_op_blocks_and_the_turns_they_leave_empty_go() {
        let mut request = json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "compaction", "content": null}]},
            {"role": "assistant", "content": [{"type": "compaction", "content": null}, {"type": "text", "text": "ok"}]},
            {"role": "assistant", "content": [{"type": "compaction", "content": "theirs"}]},
        ]});
        assert_eq!(drop_noop_blocks(&mut request), 2);
        assert_eq!(
            request["messages"],
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                {"role": "assistant", "content": [{"type": "compaction", "content": "theirs"}]},
            ])
        );
    }
}
