//! Recognising a conversation's wire format from its shape.
//!
//! The rules, first match wins: an array is OpenAI; an object whose `trajectory_format`
//! mentions mini-swe-agent, or with the trajectory key set (`info`, `messages` and
//! `trajectory_format` or `instance_id`), is mini-swe-agent; an object with `messages`
//! and a top-level `system`, or with Anthropic-only content blocks (`tool_use`,
//! `tool_result`, `thinking`, `redacted_thinking`, an `image` with a `source`), is
//! Anthropic; any other object with a `messages` array is OpenAI.

use serde_json::Value;

use super::Format;
use super::wire::kind_of;

/// The input is not a conversation in any format we know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{problem}")]
#[non_exhaustive]
pub struct DetectError {
    /// What the input looks like instead.
    pub problem: String,
}

/// Detects the wire format of a parsed conversation.
///
/// ```
/// use llm_compactor::format::{detect, Format};
/// use serde_json::json;
/// assert_eq!(detect(&json!([{"role": "user", "content": "hi"}])), Ok(Format::OpenAi));
/// assert_eq!(detect(&json!({"system": "s", "messages": []})), Ok(Format::Anthropic));
/// assert!(detect(&json!({"prompt": "hi"})).is_err());
/// ```
///
/// # Errors
/// A value that is neither an array nor an object with a `messages` array.
pub fn detect(value: &Value) -> Result<Format, DetectError> {
    let object = match value {
        Value::Array(_) => return Ok(Format::OpenAi),
        Value::Object(object) => object,
        other => {
            return Err(DetectError {
                problem: format!(
                    "not a conversation: expected an array of messages or an object with `messages`, found {}",
                    kind_of(other)
                ),
            });
        }
    };
    if object
        .get("trajectory_format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.contains("mini-swe-agent"))
    {
        return Ok(Format::MiniSweAgent);
    }
    let messages = match object.get("messages") {
        Some(Value::Array(messages)) => messages,
        Some(other) => {
            return Err(DetectError {
                problem: format!(
                    "not a conversation: `messages` must be an array, not {}",
                    kind_of(other)
                ),
            });
        }
        None => {
            let keys: Vec<&str> = object.keys().map(String::as_str).take(8).collect();
            return Err(DetectError {
                problem: format!(
                    "not a conversation: expected an array of messages or an object with `messages`, \
                     found an object with keys [{}]",
                    keys.join(", ")
                ),
            });
        }
    };
    if object.contains_key("info") && (object.contains_key("trajectory_format") || object.contains_key("instance_id")) {
        return Ok(Format::MiniSweAgent);
    }
    if object.contains_key("system") || messages.iter().any(has_anthropic_block) {
        return Ok(Format::Anthropic);
    }
    Ok(Format::OpenAi)
}

fn has_anthropic_block(message: &Value) -> bool {
    let Some(blocks) = message.get("content").and_then(Value::as_array) else {
        return false;
    };
    blocks
        .iter()
        .any(|block| match block.get("type").and_then(Value::as_str) {
            Some("tool_use" | "tool_result" | "thinking" | "redacted_thinking") => true,
            Some("image") => block.get("source").is_some(),
            _ => false,
        })
}
