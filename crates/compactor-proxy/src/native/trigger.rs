//! Codex's remote compaction (its "v2"): a `POST /v1/responses` whose input ends with a
//! `{"type": "compaction_trigger"}` item, streamed, answered by a response whose output
//! holds exactly one `compaction` item (Codex refuses any other count); Codex then keeps
//! its recent user messages and that item as its whole history. Codex sends it only to a
//! provider named `OpenAI` or an Azure one (its `ProviderCapabilities::from_config`), so
//! a model behind any other upstream never gets it answered.
//!
//! The proxy answers it itself for an upstream without it: the trigger item taken out,
//! the conversation is a round of its session with a pass forced (as
//! `/v1/responses/compact`), and the answer's one item is sealed for the request's
//! credential and stands for the whole conversation the round left (a window item: the
//! items before it in Codex's next input are dropped when it is opened). Under `auto`
//! the upstream is asked first; an answer of 400, 404, 405, 422 or 501 (it does not
//! know the item) makes the proxy answer this and every later one itself.

use std::sync::atomic::Ordering;

use axum::http::{HeaderMap, Method, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use super::NativeCompaction;
use super::emit::events_of;
use super::items::{compaction_item, input_items};
use super::seal::owner_of;
use super::serve::{requested_round, responses_usage, unix_now};
use crate::api::Api;
use crate::error::ProxyError;
use crate::state::AppState;

/// The type of the input item with which Codex asks the server to compact.
pub(crate) const TRIGGER_ITEM: &str = "compaction_trigger";

/// True when a Responses request's input holds a [`TRIGGER_ITEM`].
pub(crate) fn has_trigger(request: &Value) -> bool {
    request["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(is_trigger))
}

fn is_trigger(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some(TRIGGER_ITEM)
}

/// True when an upstream's `status` for a trigger request says it does not know it.
fn refused(status: u16) -> bool {
    matches!(status, 400 | 422) || NativeCompaction::lacks_endpoint(status)
}

/// Answers a trigger request (`value`: its body, compaction items opened; `carried`:
/// the session the latest one named), asking the upstream first under `auto` until it
/// refused one; `None` when the request is the upstream's (`forward`, or it answered).
///
/// # Errors
/// As [`super::serve_compaction`]: a body the codec cannot read, the store's failures;
/// and the upstream unreachable when it is asked.
pub(crate) async fn answer_trigger(
    state: &AppState,
    method: Method,
    path: &str,
    headers: &HeaderMap,
    body: Bytes,
    value: Value,
    carried: Option<String>,
) -> Result<Result<Response, reqwest::Response>, ProxyError> {
    if !state.serves_compaction.load(Ordering::Relaxed) {
        let response = crate::upstream::send(&state.client, &state.config, method, path, headers, body).await?;
        if state.config.native_compaction != NativeCompaction::Auto || !refused(response.status().as_u16()) {
            return Ok(Err(response));
        }
        tracing::info!(
            status = response.status().as_u16(),
            "the upstream does not know compaction_trigger: the proxy answers it from now on"
        );
        state.serves_compaction.store(true, Ordering::Relaxed);
    }
    serve_trigger(state, headers, value, carried).await.map(Ok)
}

async fn serve_trigger(
    state: &AppState,
    headers: &HeaderMap,
    mut value: Value,
    carried: Option<String>,
) -> Result<Response, ProxyError> {
    let stream = value["stream"].as_bool() == Some(true);
    if let Some(Value::Array(items)) = value.get_mut("input") {
        items.retain(|item| !is_trigger(item));
    }
    let (request, prepared) =
        requested_round(state, headers, Api::Responses, value, carried, "compaction_trigger").await?;
    let summary = prepared.done.as_ref().and_then(|done| done.summary.clone());
    let usage = prepared.done.as_ref().map(|done| done.usage).unwrap_or_default();
    let window = input_items(&request.wire, prepared.messages);
    let sealed = state
        .config
        .sealer
        .seal_window(&owner_of(headers), &window, &request.identity.key);
    let item = compaction_item(sealed, summary.as_deref());
    state.metrics.native.served();
    tracing::info!(
        session = %request.identity.key,
        items = window.len(),
        summarized = summary.is_some(),
        "served compaction_trigger"
    );
    let created_at = unix_now();
    let response = json!({
        "id": format!("resp_cmp_{}", uuid::Uuid::new_v4().simple()),
        "object": "response",
        "created_at": created_at,
        "status": "completed",
        "model": request.model,
        "output": [item],
        "usage": responses_usage(&usage),
    });
    if !stream {
        return Ok(axum::Json(response).into_response());
    }
    Ok((
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        events_of(&response),
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trigger_is_found_in_the_input_only() {
        assert!(has_trigger(
            &json!({"input": [{"role": "user", "content": "x"}, {"type": "compaction_trigger"}]})
        ));
        assert!(!has_trigger(
            &json!({"input": [{"type": "compaction", "encrypted_content": "x"}]})
        ));
        assert!(!has_trigger(&json!({"input": "compaction_trigger"})));
        assert!(refused(400) && refused(404) && refused(501) && !refused(200) && !refused(429));
    }
}
