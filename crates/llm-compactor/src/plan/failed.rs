//! Recognising a tool result that failed.
//!
//! A re-read that failed must not supersede the good copy it repeats (the duplicate
//! identity rule of aging), or the stub would tell the model to "re-run the call", which
//! fails again, and the only good copy is gone. Formats mark failure differently; the
//! importers keep the wire fields in [`Message::extras`], so a result failed when:
//! - `is_error: true` (Anthropic `tool_result` blocks, MCP `CallToolResult`), or
//! - `status` is `"error"` or `"failed"` (OpenAI Responses `function_call_output`,
//!   LangChain `ToolMessage`), or
//! - `error` is a non-empty string or an object (OpenHands-style error observations).
//!
//! Text heuristics ("Error:" at the start of the content) are deliberately not used: a
//! file that starts with that word is not a failed read.

use serde_json::Value;

use crate::message::Message;

/// True when `message` is a tool result its format marks as failed.
///
/// ```
/// use llm_compactor::message::Message;
/// use llm_compactor::plan::is_failed_result;
/// let mut failed = Message::tool("1", "permission denied");
/// failed.extras.insert("is_error".into(), true.into());
/// assert!(is_failed_result(&failed));
/// assert!(!is_failed_result(&Message::tool("1", "Error: is the first word of this file")));
/// ```
pub fn is_failed_result(message: &Message) -> bool {
    if !message.is_tool_result() {
        return false;
    }
    // One pass over the (few) extras, not three hashed lookups: this runs for every
    // tool result on every pass.
    let (mut is_error, mut status, mut error) = (None, None, None);
    for (key, value) in &message.extras {
        match key.as_str() {
            "is_error" => is_error = Some(value),
            "status" => status = Some(value),
            "error" => error = Some(value),
            _ => {}
        }
    }
    if is_error.and_then(Value::as_bool) == Some(true) {
        return true;
    }
    if status
        .and_then(Value::as_str)
        .is_some_and(|s| s.eq_ignore_ascii_case("error") || s.eq_ignore_ascii_case("failed"))
    {
        return true;
    }
    match error {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Object(_)) => true,
        _ => false,
    }
}
