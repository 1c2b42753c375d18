//! `POST /v1/responses/compact`, answered by the proxy: a forced pass over the request's
//! conversation, as a round of its session, and the documented `response.compaction`
//! object whose output is the compacted conversation with the summary sealed into a
//! `compaction` item.

use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use llm_compactor::message::{Content, Message};

use super::items::{compaction_item, input_items};
use super::resolve::resolve_items;
use super::seal::{Sealer, owner_of};
use crate::api::{self, Api, ParseError, Wire};
use crate::client_key::ClientAuth;
use crate::error::ProxyError;
use crate::sessions::{Attempt, Prepared, Round};
use crate::state::AppState;

/// Answers a compaction request (`body`, as the client sent it) itself.
///
/// # Errors
/// 400 for a body that is not a Responses request, for `previous_response_id` (the
/// proxy keeps no responses: the conversation must come as `input`), and for a
/// compaction item it did not seal for this client; 501 for input items the codec does
/// not model; the store's and the proxy's own failures as in every round.
pub(crate) async fn serve_compaction(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, ProxyError> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| ProxyError::BadRequest(format!("/v1/responses/compact: the body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(ProxyError::BadRequest(
            "/v1/responses/compact: the body must be a JSON object".to_owned(),
        ));
    }
    if value.get("previous_response_id").is_some_and(|v| !v.is_null()) {
        return Err(ProxyError::BadRequest(
            "/v1/responses/compact: previous_response_id is not supported here (the proxy compacts for an upstream \
             without this endpoint and keeps no responses): send the conversation as `input`"
                .to_owned(),
        ));
    }
    let owner = owner_of(headers);
    let sealer = &state.config.sealer;
    let resolved = resolve_items(&mut value, sealer, headers).map_err(ProxyError::BadRequest)?;
    state.metrics.native.items_resolved(resolved.opened);
    let (request, prepared) = requested_round(
        state,
        headers,
        Api::Responses,
        value,
        resolved.session,
        "/v1/responses/compact",
    )
    .await?;
    let summary = prepared.done.as_ref().and_then(|done| done.summary.as_deref());
    let usage = prepared.done.as_ref().map(|done| done.usage).unwrap_or_default();
    let output = output_items(&request.wire, prepared.messages, summary, sealer, &owner);
    state.metrics.native.served();
    tracing::info!(
        session = %request.identity.key,
        items = output.len(),
        summarized = summary.is_some(),
        "served /v1/responses/compact"
    );
    let created_at = unix_now();
    let body = json!({
        "id": format!("resp_cmp_{}", uuid::Uuid::new_v4().simple()),
        "object": "response.compaction",
        "created_at": created_at,
        "output": output,
        "usage": responses_usage(&usage),
    });
    Ok(axum::Json(body).into_response())
}

/// A round of `value`'s session (a Responses request whose compaction items are opened
/// already; `carried`: the session the latest one named) with a pass forced, as
/// [`Attempt::Requested`]: the parsed request and what the round prepared. `route`
/// names the request in errors.
///
/// # Errors
/// 400 for a body that is not a Responses request, 501 for input items the codec does
/// not model, the store's and the proxy's own failures as in every round.
pub(crate) async fn requested_round(
    state: &AppState,
    headers: &HeaderMap,
    api: Api,
    value: Value,
    carried: Option<String>,
    route: &str,
) -> Result<(api::Request, Prepared), ProxyError> {
    // The round's "original" is the conversation the session sees (the items resolved).
    let original = Bytes::from(serde_json::to_vec(&value).map_err(|e| ProxyError::Internal(e.to_string()))?);
    let request = match api::parse_value(api, value, headers, &state.config.wire.session_from) {
        Ok(mut request) => {
            super::carry_session(&mut request.identity, carried).map_err(ProxyError::BadRequest)?;
            request
        }
        Err(ParseError::Invalid(problem)) => return Err(ProxyError::BadRequest(problem)),
        Err(ParseError::Unsupported(why)) => return Err(ProxyError::Unsupported(format!("{route}: {why}"))),
    };
    let compactor = state.config.budgets.for_model(&request.model)?;
    let fallback = state.config.budgets.base().counter().clone();
    let session = state.sessions.get(&request.identity.key, &fallback);
    let client_auth = if state.config.client_key {
        ClientAuth::of(headers)
    } else {
        ClientAuth::default()
    };
    let prepared = {
        let mut guard = session.lock().await;
        let round = Round {
            config: &state.config,
            compactor: &compactor,
            metrics: &state.metrics,
            api,
            request: &request,
            original: &original,
            attempt: Attempt::Requested,
            auth: &client_auth,
            threshold: None,
        };
        guard.prepare(&round).await?
    };
    Ok((request, prepared))
}

/// The output of a served compaction: `messages` (the compacted conversation) as
/// Responses input items, the summary message (the one whose text is `summary`) replaced
/// by a `compaction` item that seals it for `owner`. The instructions stay out (the
/// client sends them with each request).
pub(crate) fn output_items(
    wire: &Wire,
    mut messages: Vec<Message>,
    summary: Option<&str>,
    sealer: &Sealer,
    owner: &str,
) -> Vec<Value> {
    let at = summary.and_then(|text| messages.iter().position(|m| m.content.text() == text));
    let Some(at) = at else {
        return input_items(wire, messages);
    };
    // The summary as the item the codec writes for it, then a marker in its place, so
    // that its position among the exported items is found whatever the grouping.
    let summary_item = match input_items(wire, vec![messages[at].clone()]).as_slice() {
        [item] => item.clone(),
        _ => json!({"role": "user", "content": messages[at].content.text()}),
    };
    let marker = format!("llmc-compaction-{}", uuid::Uuid::new_v4().simple());
    messages[at].content = Content::Text(marker.clone());
    let mut items = input_items(wire, messages);
    let compaction = compaction_item(sealer.seal(owner, &summary_item), summary);
    match items.iter().position(|item| item.to_string().contains(&marker)) {
        Some(i) => items[i] = compaction,
        None => items.push(compaction),
    }
    items
}

/// A Responses answer's `usage` for what a served pass's summarizer was billed.
pub(crate) fn responses_usage(usage: &llm_compactor::Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

/// Seconds since the Unix epoch (a served answer's `created_at`).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
