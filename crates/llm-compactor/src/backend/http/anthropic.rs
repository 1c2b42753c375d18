//! The Anthropic Messages codec.
//!
//! Request: `{model, system, messages, max_tokens}` with `x-api-key` and
//! `anthropic-version` headers. Messages must alternate user/assistant, tool calls are
//! `tool_use` blocks and their results `tool_result` blocks inside a user turn, so the
//! encoder folds consecutive same-role turns together. Answer: the `text` blocks of
//! `content`, `stop_reason` (`max_tokens` means the budget ran out), `usage` where the
//! billed prompt is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::errors::{error_text, trim};
use super::wire::ChatReply;
use crate::message::{Message, Role};
use crate::summarize::{FailureKind, StopReason, SummarizerError};
use crate::usage::Usage;

/// The `anthropic-version` header every request carries.
pub(super) const API_VERSION: &str = "2023-06-01";

/// The JSON body of a Messages request.
pub(super) fn request_body(model: &str, system: &str, messages: &[Message], max_output_tokens: u32) -> Value {
    let mut systems: Vec<String> = Vec::new();
    if !system.is_empty() {
        systems.push(system.to_owned());
    }
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match &message.role {
            Role::System | Role::Developer => {
                systems.push(message.text());
                continue;
            }
            Role::Assistant => ("assistant", assistant_blocks(message)),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                    "content": message.text(),
                })],
            ),
            Role::User | Role::Other(_) => ("user", text_block(message.text()).into_iter().collect()),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let wire: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = json!({"model": model, "max_tokens": max_output_tokens, "messages": wire});
    if !systems.is_empty() {
        body["system"] = Value::String(systems.join("\n\n"));
    }
    body
}

fn text_block(text: String) -> Option<Value> {
    // The API rejects empty text blocks.
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn assistant_blocks(message: &Message) -> Vec<Value> {
    let mut blocks: Vec<Value> = text_block(message.text()).into_iter().collect();
    for call in &message.tool_calls {
        let input = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(object @ Value::Object(_)) => object,
            _ => json!({"arguments": call.arguments}),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

#[derive(Deserialize)]
struct Reply {
    content: Option<Vec<Value>>,
    stop_reason: Option<String>,
    #[serde(default, deserialize_with = "super::wire_usage::lenient")]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let write = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self.input_tokens.saturating_add(read).saturating_add(write),
            output_tokens: self.output_tokens,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }
}

/// Decodes a 2xx Messages body.
pub(super) fn decode(body: &[u8]) -> Result<ChatReply, SummarizerError> {
    let reply: Reply = serde_json::from_slice(body).map_err(|error| {
        SummarizerError::new(
            FailureKind::Parse,
            format!("the answer is not a Messages reply: {error}"),
        )
    })?;
    let usage = reply
        .usage
        .as_ref()
        .map(WireUsage::usage)
        .map(super::wire_usage::plausible)
        .unwrap_or_default();
    let Some(blocks) = reply.content else {
        let (_, text) = error_text(body);
        return Err(SummarizerError::new(
            FailureKind::Parse,
            format!("the answer has no content: {}", trim(&text)),
        )
        .with_usage(usage));
    };
    let text: String = blocks
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if text.trim().is_empty() {
        return Err(SummarizerError::new(FailureKind::Empty, "the model returned no text").with_usage(usage));
    }
    let stop = match reply.stop_reason.as_deref() {
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::Truncated,
        _ => StopReason::Complete,
    };
    Ok(ChatReply { text, stop, usage })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn encodes_alternating_turns() {
        let messages = [
            Message::system("be brief"),
            Message::user("go"),
            Message::assistant("ok").with_tool_calls(vec![
                ToolCall::new("t1", "ls", r#"{"dir":"."}"#),
                ToolCall::new("t2", "cat", "not json"),
            ]),
            Message::tool("t1", "a.txt"),
            Message::tool("t2", "hello"),
        ];
        let body = request_body("claude-x", "sys", &messages, 64);
        assert_eq!(body["system"], "sys\n\nbe brief");
        assert_eq!(body["max_tokens"], 64);
        let wire = body["messages"].as_array().unwrap();
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"][1]["input"], json!({"dir": "."}));
        assert_eq!(wire[1]["content"][2]["input"], json!({"arguments": "not json"}));
        assert_eq!(wire[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(wire[2]["content"][1]["tool_use_id"], "t2");
    }

    #[test]
    fn decodes_usage_and_stop() {
        let body = br#"{"content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"sum"}],
            "stop_reason":"max_tokens","usage":{"input_tokens":10,"output_tokens":3,
            "cache_read_input_tokens":100,"cache_creation_input_tokens":20}}"#;
        let reply = decode(body).unwrap();
        assert_eq!((reply.text.as_str(), reply.stop), ("sum", StopReason::Truncated));
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 130,
                output_tokens: 3,
                cache_read_tokens: 100,
                cache_write_tokens: 20
            }
        );
        assert_eq!(decode(br#"{"content":[]}"#).unwrap_err().kind, FailureKind::Empty);
        assert_eq!(decode(br#"{"id":"x"}"#).unwrap_err().kind, FailureKind::Parse);
    }
}
