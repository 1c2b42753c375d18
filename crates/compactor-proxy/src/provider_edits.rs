//! What a forwarded Messages request asks the provider to do to its thinking and its old
//! tool results, beside the conversation the proxy sends: drop, not refuse, thinking
//! blocks bound to a prefix the proxy changed (`thinking.block_binding`, the library's
//! `llm_compactor::plan::binding::with_drop_block`), and clear the oldest tool results on
//! the server in place of our aging stubs (`context_management`, the library's
//! `llm_compactor::format::context_management::with_clear_tool_uses`). The body is read
//! once and written once for both, and the betas they need are added to
//! `anthropic-beta`.

use axum::http::{HeaderMap, HeaderValue};
use bytes::Bytes;
use llm_compactor::format::context_management::{CONTEXT_MANAGEMENT_BETA, with_beta, with_clear_tool_uses};
use llm_compactor::plan::binding::{BINDING_BETA, with_drop_block};
use serde_json::Value;

/// The header that carries Anthropic betas.
const BETA_HEADER: &str = "anthropic-beta";

/// The edits a request asks the provider for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProviderEdits {
    /// Ask for invalid thinking blocks to be dropped (`drop_block`).
    pub drop_block: bool,
    /// Clear every tool result but the latest this many tool uses.
    pub clear_keep: Option<usize>,
}

/// What [`apply`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The request asks for `drop_block`.
    pub drop_block: bool,
    /// The request carries our tool-result clearing.
    pub clearing: bool,
}

/// `body` and `headers` with `edits`, and what was applied; `None` when nothing applies
/// (thinking off or `drop_block` asked already, the client's own edits leave no room for
/// ours, or a body that is not JSON).
pub fn apply(
    body: &Bytes,
    headers: &HeaderMap,
    edits: ProviderEdits,
    counters: &crate::outgoing::WireCounters,
) -> Option<(Bytes, HeaderMap, Applied)> {
    if !edits.drop_block && edits.clear_keep.is_none() {
        return None;
    }
    counters.parsed();
    let mut value: Value = serde_json::from_slice(body).ok()?;
    let applied = Applied {
        drop_block: edits.drop_block && with_drop_block(&mut value),
        clearing: edits
            .clear_keep
            .is_some_and(|keep| with_clear_tool_uses(&mut value, keep)),
    };
    if applied == Applied::default() {
        return None;
    }
    counters.written();
    let body = Bytes::from(serde_json::to_vec(&value).ok()?);
    let mut headers = headers.clone();
    let betas = [
        applied.drop_block.then_some(BINDING_BETA),
        applied.clearing.then_some(CONTEXT_MANAGEMENT_BETA),
    ];
    for beta in betas.into_iter().flatten() {
        let current = headers.get(BETA_HEADER).and_then(|v| v.to_str().ok());
        if let Some(beta) = with_beta(current, beta)
            && let Ok(value) = HeaderValue::from_str(&beta)
        {
            headers.insert(BETA_HEADER, value);
        }
    }
    Some((body, headers, applied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outgoing::WireCounters;

    const DROP: ProviderEdits = ProviderEdits {
        drop_block: true,
        clear_keep: None,
    };

    #[test]
    fn the_body_and_the_beta_header_ask_for_drop_block() {
        let body =
            Bytes::from_static(br#"{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"messages":[]}"#);
        let mut headers = HeaderMap::new();
        headers.insert(BETA_HEADER, HeaderValue::from_static("context-management-2025-06-27"));
        let (out, headers, applied) = apply(&body, &headers, DROP, &WireCounters::default()).unwrap();
        assert!(applied.drop_block && !applied.clearing);
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value["thinking"]["block_binding"]["prefix_mismatch_behavior"],
            "drop_block"
        );
        assert_eq!(
            headers[BETA_HEADER],
            "context-management-2025-06-27,thinking-binding-controls-2026-08-01"
        );
        assert!(
            apply(&out, &headers, DROP, &WireCounters::default()).is_none(),
            "asked once"
        );
        assert!(
            apply(
                &Bytes::from_static(br#"{"messages":[]}"#),
                &HeaderMap::new(),
                DROP,
                &WireCounters::default()
            )
            .is_none()
        );
    }

    #[test]
    fn clearing_and_drop_block_go_out_in_one_body_with_both_betas() {
        let body = Bytes::from_static(
            br#"{"model":"m","thinking":{"type":"enabled","budget_tokens":1024},"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"messages":[]}"#,
        );
        let edits = ProviderEdits {
            drop_block: true,
            clear_keep: Some(4),
        };
        let (out, headers, applied) = apply(&body, &HeaderMap::new(), edits, &WireCounters::default()).unwrap();
        assert!(applied.drop_block && applied.clearing);
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["context_management"]["edits"][1]["keep"]["value"], 4);
        assert_eq!(
            headers[BETA_HEADER],
            "thinking-binding-controls-2026-08-01,context-management-2025-06-27"
        );
        // A request that clears tool results itself keeps its own edit, and nothing else.
        let own = Bytes::from_static(br#"{"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]}}"#);
        let clear_only = ProviderEdits {
            drop_block: false,
            clear_keep: Some(4),
        };
        assert!(apply(&own, &HeaderMap::new(), clear_only, &WireCounters::default()).is_none());
    }
}
