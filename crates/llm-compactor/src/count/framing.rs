//! The OpenAI chat framing rule: what a message costs beyond its text.
//!
//! The exact counters tokenize pieces of a message and add the fixed framing the chat
//! format wraps around each message. The rule is the one of OpenAI's cookbook
//! ("How to count tokens with tiktoken") for current models, which `tiktoken-rs`'s
//! `num_tokens_from_messages` also follows, with tool calls rendered as their JSON:
//!
//! ```text
//! message  = TOKENS_PER_MESSAGE                     (3: <|start|>, separator, <|end|>)
//!          + tokens(role)                           ("user", "assistant", "tool", ...)
//!          + tokens(content)                        (see below)
//!          + [tokens(name) + TOKENS_PER_NAME]       (only when `name` is present; 1)
//!          + [tokens(tool calls JSON)]              (only when there are tool calls)
//! request  = sum(message) + tools + context + REPLY_PRIMING   (3: <|start|>assistant<|message|>)
//! ```
//!
//! - `tokens(content)`: a text content is one piece; structured parts are counted part
//!   by part (text parts by their text, thinking parts by their thinking, the
//!   `tool_use` position marker as nothing, any other part by its compact JSON, but an
//!   image, audio clip or file as [`crate::message::media::MEDIA_PART_TOKENS`] plus its
//!   JSON without the inline base64, an estimate of what a provider bills for it: see
//!   [`crate::message::media`]); absent and `null` content are nothing.
//! - `tokens(tool calls JSON)`: the compact JSON array
//!   `[{"id":..,"name":..,"arguments":..}]` of the message's calls, the same rendering
//!   the heuristic counts chars of ([`tool_calls_json`]).
//! - `tool_call_id` and wire extras are not counted (the cookbook does not count them).
//! - `tools`: the compact JSON array of the declarations; `context`: its text.
//! - Text is encoded as ordinary text: a special-token string such as `<|endoftext|>`
//!   inside a message counts as the characters it is, as the chat API treats it.
//!
//! Only the reply priming is per request; everything else is per message, which keeps
//! the per-message counts additive (and memoizable).

use crate::message::json_string::json_string_chars;
use crate::message::{Content, Message, Part};

/// Framing tokens around every message.
pub const TOKENS_PER_MESSAGE: usize = 3;

/// Extra tokens when a message carries a `name`.
pub const TOKENS_PER_NAME: usize = 1;

/// Tokens that prime the reply, once per request.
pub const REPLY_PRIMING: usize = 3;

/// The compact JSON of a message's tool calls (`[{"id":..,"name":..,"arguments":..}]`,
/// keys in that order whatever serde_json's map ordering), or `None` when it has none.
///
/// ```
/// use llm_compactor::count::framing::tool_calls_json;
/// use llm_compactor::message::{Message, ToolCall};
/// let m = Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"cmd":"ls"}"#)]);
/// assert_eq!(tool_calls_json(&m).unwrap(), r#"[{"id":"c1","name":"bash","arguments":"{\"cmd\":\"ls\"}"}]"#);
/// ```
pub fn tool_calls_json(message: &Message) -> Option<String> {
    if message.tool_calls.is_empty() {
        return None;
    }
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""));
    let calls: Vec<String> = message
        .tool_calls
        .iter()
        .map(|c| {
            format!(
                r#"{{"id":{},"name":{},"arguments":{}}}"#,
                quote(&c.id),
                quote(&c.name),
                quote(&c.arguments)
            )
        })
        .collect();
    Some(format!("[{}]", calls.join(",")))
}

/// Chars of [`tool_calls_json`]'s rendering, counted without building it (0 when the
/// message has no calls): the heuristic counts every message's tool calls, and building
/// the JSON for each count was most of a hard trim's time on real trajectories.
///
/// ```
/// use llm_compactor::count::framing::{tool_calls_json, tool_calls_json_chars};
/// use llm_compactor::message::{Message, ToolCall};
/// let m = Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", "{\"cmd\":\"ls\n\"}")]);
/// assert_eq!(tool_calls_json_chars(&m), tool_calls_json(&m).unwrap().chars().count());
/// ```
pub fn tool_calls_json_chars(message: &Message) -> usize {
    let calls = &message.tool_calls;
    if calls.is_empty() {
        return 0;
    }
    // `[` `]`, the commas between calls, and per call the fixed
    // `{"id":` `,"name":` `,"arguments":` `}` around three quoted strings.
    const PER_CALL: usize = 6 + 8 + 13 + 1;
    2 + (calls.len() - 1)
        + calls
            .iter()
            .map(|c| PER_CALL + json_string_chars(&c.id) + json_string_chars(&c.name) + json_string_chars(&c.arguments))
            .sum::<usize>()
}

/// Tokens of a content under `count_text`, as the rule above says.
pub fn content_tokens(content: &Content, count_text: &dyn Fn(&str) -> usize) -> usize {
    match content {
        Content::Absent | Content::Null => 0,
        Content::Text(text) => count_text(text),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => count_text(text),
                Part::Thinking { thinking, .. } => count_text(thinking),
                Part::ToolUse { .. } => 0,
                Part::Other(value) => crate::message::media::other_part_tokens(value, count_text),
            })
            .sum(),
    }
}

/// Tokens of one message under `count_text`, framing included, as the rule above says.
///
/// ```
/// use llm_compactor::count::framing::message_tokens;
/// use llm_compactor::Message;
/// // One "token" per char, to show the arithmetic: 3 + len("user") + len("hi").
/// assert_eq!(message_tokens(&Message::user("hi"), &|t: &str| t.chars().count()), 3 + 4 + 2);
/// ```
pub fn message_tokens(message: &Message, count_text: &dyn Fn(&str) -> usize) -> usize {
    let mut tokens =
        TOKENS_PER_MESSAGE + count_text(message.role.as_str()) + content_tokens(&message.content, count_text);
    if let Some(name) = &message.name {
        tokens += count_text(name) + TOKENS_PER_NAME;
    }
    if let Some(calls) = tool_calls_json(message) {
        tokens += count_text(&calls);
    }
    tokens
}
