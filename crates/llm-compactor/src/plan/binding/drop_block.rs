//! Asking Anthropic to drop, not refuse, the thinking blocks an edit invalidated.
//!
//! Why this remedy for a proxy: a pass summarizes or stubs the history before the kept
//! turns, so every thinking block in them is bound to a prefix that is no longer sent.
//! Removing them is allowed for finished turns, but not for the last assistant turn of a
//! tool loop still in progress (with thinking on it must start with its thinking block),
//! and an agent like Claude Code runs one long tool loop per prompt: there is no turn
//! boundary to wait for. The documented answer that always sends is
//! `thinking.block_binding.prefix_mismatch_behavior: "drop_block"` with the beta header
//! `thinking-binding-controls-2026-08-01`: the API drops the invalid blocks (and lists
//! them in `input_transformations`) instead of answering 400. The conversation on the
//! wire stays what the transcript records; only the request's `thinking` field and a
//! beta header change.

use serde_json::{Map, Value};

/// The beta that makes `thinking.block_binding` available.
pub const BINDING_BETA: &str = "thinking-binding-controls-2026-08-01";

/// True when a Messages request turns thinking on (`thinking.type` `enabled` or
/// `adaptive`).
pub fn thinking_enabled(request: &Value) -> bool {
    matches!(
        request.pointer("/thinking/type").and_then(Value::as_str),
        Some("enabled" | "adaptive")
    )
}

/// True when the request already asks for invalid blocks to be dropped.
pub fn asks_drop_block(request: &Value) -> bool {
    request
        .pointer("/thinking/block_binding/prefix_mismatch_behavior")
        .and_then(Value::as_str)
        == Some("drop_block")
}

/// Sets `thinking.block_binding.prefix_mismatch_behavior` to `"drop_block"` on a request
/// that turns thinking on; false (nothing changed) when thinking is off, or the request
/// already says so.
///
/// ```
/// use llm_compactor::plan::binding::with_drop_block;
/// let mut request = serde_json::json!({"thinking": {"type": "enabled", "budget_tokens": 1024}, "messages": []});
/// assert!(with_drop_block(&mut request));
/// assert_eq!(request["thinking"]["block_binding"]["prefix_mismatch_behavior"], "drop_block");
/// assert!(!with_drop_block(&mut request));
/// ```
pub fn with_drop_block(request: &mut Value) -> bool {
    if !thinking_enabled(request) || asks_drop_block(request) {
        return false;
    }
    let Some(Value::Object(thinking)) = request.get_mut("thinking") else {
        return false;
    };
    let binding = thinking
        .entry("block_binding")
        .or_insert_with(|| Value::Object(Map::new()));
    if !binding.is_object() {
        *binding = Value::Object(Map::new());
    }
    if let Value::Object(binding) = binding {
        binding.insert("prefix_mismatch_behavior".into(), Value::String("drop_block".into()));
    }
    true
}

/// The `anthropic-beta` header value with [`BINDING_BETA`] added (comma-separated, as the
/// API reads several betas); `None` when it is already there.
///
/// ```
/// use llm_compactor::plan::binding::with_binding_beta;
/// assert_eq!(with_binding_beta(None).as_deref(), Some("thinking-binding-controls-2026-08-01"));
/// assert_eq!(
///     with_binding_beta(Some("context-management-2025-06-27")).as_deref(),
///     Some("context-management-2025-06-27,thinking-binding-controls-2026-08-01")
/// );
/// assert_eq!(with_binding_beta(Some("thinking-binding-controls-2026-08-01")), None);
/// ```
pub fn with_binding_beta(current: Option<&str>) -> Option<String> {
    crate::format::context_management::with_beta(current, BINDING_BETA)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_thinking_request_gets_drop_block() {
        let mut off = json!({"messages": []});
        assert!(!with_drop_block(&mut off));
        assert_eq!(off, json!({"messages": []}));
        let mut disabled = json!({"thinking": {"type": "disabled"}});
        assert!(!with_drop_block(&mut disabled));
        let mut adaptive =
            json!({"thinking": {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "error"}}});
        assert!(with_drop_block(&mut adaptive));
        assert!(asks_drop_block(&adaptive));
    }
}
