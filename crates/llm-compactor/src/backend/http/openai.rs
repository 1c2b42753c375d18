//! The OpenAI chat-completions codec: our own thin serde, so that nothing we do not
//! understand is silently dropped or retried on our behalf.
//!
//! Request: `{model, messages: [{role: system}, ...], max_tokens | max_completion_tokens}`.
//! Answer: `choices[0].message.content`, `choices[0].finish_reason` (`length` means the
//! budget ran out), `usage.{prompt_tokens, completion_tokens,
//! prompt_tokens_details.cached_tokens}` (`prompt_tokens` already includes the cached).

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::errors::{error_text, trim};
use super::wire::{ChatReply, MaxTokensField};
use crate::message::{Message, Role};
use crate::summarize::{FailureKind, StopReason, SummarizerError};
use crate::usage::Usage;

/// The JSON body of a chat-completions request.
pub(super) fn request_body(
    model: &str,
    system: &str,
    messages: &[Message],
    max_output_tokens: u32,
    field: MaxTokensField,
) -> Value {
    let mut wire = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        wire.push(json!({"role": "system", "content": system}));
    }
    wire.extend(messages.iter().map(encode_message));
    let field = match field {
        MaxTokensField::MaxTokens => "max_tokens",
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
    };
    json!({"model": model, "messages": wire, field: max_output_tokens})
}

fn encode_message(message: &Message) -> Value {
    let role = match &message.role {
        Role::Other(_) => "user",
        role => role.as_str(),
    };
    let mut wire = Map::new();
    wire.insert("role".into(), role.into());
    let text = message.text();
    let content = if text.is_empty() && !message.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::String(text)
    };
    wire.insert("content".into(), content);
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}})
            })
            .collect();
        wire.insert("tool_calls".into(), calls.into());
    }
    if let Some(id) = &message.tool_call_id {
        wire.insert("tool_call_id".into(), id.clone().into());
    }
    Value::Object(wire)
}

#[derive(Deserialize)]
struct Completion {
    choices: Option<Vec<Choice>>,
    #[serde(default, deserialize_with = "super::wire_usage::lenient")]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<ChoiceMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<Value>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|details| details.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
        }
    }
}

/// Decodes a 2xx chat-completions body.
pub(super) fn decode(body: &[u8]) -> Result<ChatReply, SummarizerError> {
    let completion: Completion = serde_json::from_slice(body).map_err(|error| {
        SummarizerError::new(
            FailureKind::Parse,
            format!("the answer is not a chat completion: {error}"),
        )
    })?;
    let usage = completion
        .usage
        .as_ref()
        .map(WireUsage::usage)
        .map(super::wire_usage::plausible)
        .unwrap_or_default();
    let parse = |what: &str| {
        // Some proxies answer an error with status 200.
        let (_, text) = error_text(body);
        SummarizerError::new(FailureKind::Parse, format!("{what}: {}", trim(&text))).with_usage(usage)
    };
    let choice = completion
        .choices
        .and_then(|choices| choices.into_iter().next())
        .ok_or_else(|| parse("the answer has no choices"))?;
    let text = match choice.message.and_then(|message| message.content) {
        Some(Value::String(text)) => text,
        // Content parts (some compatible servers): join their text.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => return Err(parse("the answer has no message content")),
    };
    if text.trim().is_empty() {
        return Err(SummarizerError::new(FailureKind::Empty, "the model returned no text").with_usage(usage));
    }
    let stop = match choice.finish_reason.as_deref() {
        Some("length") => StopReason::Truncated,
        _ => StopReason::Complete,
    };
    Ok(ChatReply { text, stop, usage })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn encodes_tool_turns() {
        let messages = [
            Message::user("go"),
            Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "ls", "{}")]),
            Message::tool("c1", "a.txt"),
        ];
        let body = request_body("m", "sys", &messages, 99, MaxTokensField::MaxCompletionTokens);
        assert_eq!(body["max_completion_tokens"], 99);
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "sys"}));
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["name"], "ls");
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "content": "a.txt", "tool_call_id": "c1"})
        );
    }

    #[test]
    fn decodes_usage_and_stop() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"length"}],
            "usage":{"prompt_tokens":100,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":64}}}"#;
        let reply = decode(body).unwrap();
        assert_eq!(reply.stop, StopReason::Truncated);
        assert_eq!(
            reply.usage,
            Usage {
                input_tokens: 100,
                output_tokens: 7,
                cache_read_tokens: 64,
                cache_write_tokens: 0
            }
        );
        let empty = decode(br#"{"choices":[{"message":{"content":"  "}}],"usage":{"prompt_tokens":5}}"#).unwrap_err();
        assert_eq!((empty.kind, empty.usage.input_tokens), (FailureKind::Empty, 5));
        assert_eq!(decode(br#"{"choices":[]}"#).unwrap_err().kind, FailureKind::Parse);
        assert_eq!(decode(b"nope").unwrap_err().kind, FailureKind::Parse);
    }
}
