//! A forwarded Messages request that asks the provider to drop, not refuse, thinking
//! blocks bound to a prefix the proxy changed (the library's
//! `llm_compactor::plan::binding::with_drop_block`): the body's `thinking` field and the
//! `anthropic-beta` header, nothing of the conversation.

use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use llm_compactor::plan::binding::{with_binding_beta, with_drop_block};
use serde_json::Value;

/// The header that carries Anthropic betas.
const BETA_HEADER: &str = "anthropic-beta";

/// `body` and `headers` asking for `drop_block`, or `None` when the body does not turn
/// thinking on, already asks, or is not JSON.
pub fn apply(body: &Bytes, headers: &HeaderMap) -> Option<(Bytes, HeaderMap)> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    if !with_drop_block(&mut value) {
        return None;
    }
    let body = Bytes::from(serde_json::to_vec(&value).ok()?);
    let mut headers = headers.clone();
    let current = headers.get(BETA_HEADER).and_then(|v| v.to_str().ok());
    if let Some(beta) = with_binding_beta(current)
        && let Ok(value) = HeaderValue::from_str(&beta)
    {
        headers.insert(BETA_HEADER, value);
    }
    Some((body, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_and_the_beta_header_ask_for_drop_block() {
        let body =
            Bytes::from_static(br#"{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"messages":[]}"#);
        let mut headers = HeaderMap::new();
        headers.insert(BETA_HEADER, HeaderValue::from_static("context-management-2025-06-27"));
        let (out, headers) = apply(&body, &headers).unwrap();
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value["thinking"]["block_binding"]["prefix_mismatch_behavior"],
            "drop_block"
        );
        assert_eq!(
            headers[BETA_HEADER],
            "context-management-2025-06-27,thinking-binding-controls-2026-08-01"
        );
        assert!(apply(&out, &headers).is_none(), "asked once");
        assert!(apply(&Bytes::from_static(br#"{"messages":[]}"#), &HeaderMap::new()).is_none());
    }
}
