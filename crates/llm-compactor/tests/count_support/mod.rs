//! Support for the counting tests: real conversations without the format module.
//!
//! The counting tests read mini-swe-agent trajectories with this small OpenAI-shape
//! reader (role, content, tool calls, tool_call_id, name), so that they depend on the
//! message model only.

#![allow(dead_code)]

use std::path::Path;

use llm_compactor::message::{Content, Message, Role, ToolCall};
use serde_json::Value;

/// One OpenAI-shaped message object as a [`Message`].
pub fn message_from_openai(value: &Value) -> Message {
    let role = value.get("role").and_then(Value::as_str).unwrap_or("user");
    let mut message = Message::new(Role::from(role), "");
    message.content = match value.get("content") {
        None => Content::Absent,
        Some(content) => Content::from_value(content.clone()).unwrap_or(Content::Null),
    };
    if let Some(calls) = value.get("tool_calls").and_then(Value::as_array) {
        message.tool_calls = calls
            .iter()
            .map(|call| {
                let function = call.get("function").cloned().unwrap_or(Value::Null);
                ToolCall::new(
                    call.get("id").and_then(Value::as_str).unwrap_or_default(),
                    function.get("name").and_then(Value::as_str).unwrap_or_default(),
                    function.get("arguments").and_then(Value::as_str).unwrap_or_default(),
                )
            })
            .collect();
    }
    message.tool_call_id = value.get("tool_call_id").and_then(Value::as_str).map(str::to_owned);
    message.name = value.get("name").and_then(Value::as_str).map(str::to_owned);
    message
}

/// The messages of a mini-swe-agent trajectory file.
pub fn mini_swe_agent_messages(path: &Path) -> Vec<Message> {
    let text = std::fs::read_to_string(path).expect("trajectory is readable");
    let value: Value = serde_json::from_str(&text).expect("trajectory is JSON");
    value
        .get("messages")
        .and_then(Value::as_array)
        .map(|messages| messages.iter().map(message_from_openai).collect())
        .unwrap_or_default()
}

/// Up to `per_file` messages spread evenly over the conversation (first and last
/// included).
pub fn sample<T: Clone>(items: &[T], per_file: usize) -> Vec<T> {
    if items.len() <= per_file {
        return items.to_vec();
    }
    (0..per_file)
        .map(|i| items[i * (items.len() - 1) / (per_file - 1).max(1)].clone())
        .collect()
}
