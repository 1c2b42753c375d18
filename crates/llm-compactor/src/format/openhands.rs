//! OpenHands event streams, import only: one record's `history` as messages.
//!
//! OpenHands logs events, not chat messages: an action the agent took (with
//! `tool_call_metadata` naming the model response and the tool call it came from) and an
//! observation answering it. We rebuild the conversation the model saw: the `system`
//! action is the system prompt, user `message` actions are user turns, actions of one
//! model response become one assistant turn (its text and every tool call), their
//! observations become tool results, and an agent `message` without a tool call is
//! assistant text. Bookkeeping events (`recall` and its observation) are skipped. There
//! is no export: the event stream carries far more than a conversation.

use serde_json::Value;

use super::wire::kind_of;
use super::{FormatError, bare_message};
use crate::message::{Content, Message, Role, ToolCall};

/// The messages of one OpenHands record (an object with `history`, or the history array).
///
/// # Errors
/// A record without a `history` array, or an event that is not an object (named by its
/// index in `history`).
pub fn import_history(record: &Value, source_name: &str) -> Result<Vec<Message>, FormatError> {
    let history = match record {
        Value::Array(events) => events,
        Value::Object(object) => match object.get("history") {
            Some(Value::Array(events)) => events,
            Some(other) => {
                return Err(FormatError::whole(
                    source_name,
                    format!("`history` must be an array, not {}", kind_of(other)),
                ));
            }
            None => return Err(FormatError::whole(source_name, "an OpenHands record has no `history`")),
        },
        other => {
            return Err(FormatError::whole(
                source_name,
                format!(
                    "an OpenHands record is an object with `history`, not {}",
                    kind_of(other)
                ),
            ));
        }
    };
    let mut messages: Vec<Message> = Vec::new();
    let mut last_response: Option<String> = None;
    for (index, event) in history.iter().enumerate() {
        if !event.is_object() {
            return Err(FormatError::at(
                source_name,
                index,
                format!("an event must be an object, not {}", kind_of(event)),
            ));
        }
        let text = |key: &str| event.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let source = event.get("source").and_then(Value::as_str).unwrap_or_default();
        let metadata = event.get("tool_call_metadata").filter(|m| m.is_object());
        if let Some(action) = event.get("action").and_then(Value::as_str) {
            let content = event
                .pointer("/args/content")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| text("message"));
            match (action, metadata) {
                ("system", _) => messages.push(Message::system(content)),
                ("message", None) if source == "user" => messages.push(Message::user(content)),
                ("message", None) if source == "agent" => messages.push(Message::assistant(content)),
                (_, Some(metadata)) => {
                    let call = tool_call(event, metadata);
                    let response = metadata.pointer("/model_response/id").and_then(Value::as_str);
                    let same_turn = response.is_some()
                        && response.map(str::to_owned) == last_response
                        && messages.last().is_some_and(|m| m.role == Role::Assistant);
                    if same_turn && let Some(turn) = messages.last_mut() {
                        turn.tool_calls.push(call);
                    } else {
                        let said = metadata
                            .pointer("/model_response/choices/0/message/content")
                            .and_then(Value::as_str);
                        let mut turn = bare_message(Role::Assistant);
                        turn.content = said.map_or(Content::Null, |s| Content::Text(s.to_owned()));
                        turn.tool_calls.push(call);
                        messages.push(turn);
                    }
                    last_response = response.map(str::to_owned);
                }
                _ => {}
            }
        } else if event.get("observation").is_some()
            && let Some(id) = metadata.and_then(|m| m.get("tool_call_id")).and_then(Value::as_str)
        {
            let mut result = Message::tool(id, text("content"));
            result.name = metadata
                .and_then(|m| m.get("function_name"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            messages.push(result);
        }
    }
    Ok(messages)
}

/// The tool call behind an action: the model's own call when the response holds it, else
/// one rebuilt from the action's arguments.
fn tool_call(event: &Value, metadata: &Value) -> ToolCall {
    let id = metadata.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
    let name = metadata
        .get("function_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let from_response = metadata
        .pointer("/model_response/choices/0/message/tool_calls")
        .and_then(Value::as_array)
        .and_then(|calls| calls.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(id)))
        .and_then(|c| c.pointer("/function/arguments"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let arguments = from_response.unwrap_or_else(|| event.get("args").map(Value::to_string).unwrap_or_default());
    let mut call = ToolCall::new(id, name, arguments);
    call.extras.insert("type".into(), Value::String("function".into()));
    call
}
