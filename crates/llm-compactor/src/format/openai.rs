//! OpenAI chat completions messages (also the shape of mini-swe-agent's messages).
//!
//! A message is `{role, content?, tool_calls?, tool_call_id?, name?, ...}`. The modeled
//! keys go into [`Message`]'s fields; every other key, and a modeled key whose value the
//! model cannot hold (`tool_calls: null` or `[]`, `tool_call_id: null`, `name: null`),
//! goes into [`Message::extras`] verbatim, so export gives back the same value. A tool
//! call's unknown keys stay in [`ToolCall::extras`]; unknown keys inside its `function`
//! object are kept there under `function`.

use serde_json::{Map, Value};

use super::wire::{fill_messages, kind_of, take_messages};
use super::{FormatError, append_extras, bare_message, refuse_reserved_key};
use crate::message::{Content, Message, Part, Role, ToolCall};

/// Imports an OpenAI document: a bare array, or an object with `messages`.
pub(super) fn import_document(value: Value, source_name: &str) -> Result<(Vec<Message>, Value), FormatError> {
    match value {
        Value::Array(items) => Ok((import_messages(items, source_name, true)?, Value::Null)),
        Value::Object(object) => {
            let (items, envelope) = take_messages(object, source_name, "an OpenAI conversation object")?;
            Ok((import_messages(items, source_name, true)?, Value::Object(envelope)))
        }
        other => Err(FormatError::whole(
            source_name,
            format!(
                "an OpenAI conversation is an array of messages or an object with `messages`, not {}",
                kind_of(&other)
            ),
        )),
    }
}

/// Exports an OpenAI document: a bare array when the envelope is `null`.
pub(super) fn export_document(messages: &[Message], envelope: &Value) -> Value {
    let items: Vec<Value> = messages.iter().map(export_message).collect();
    match envelope {
        Value::Object(_) => Value::Object(fill_messages(envelope, items)),
        _ => Value::Array(items),
    }
}

/// Imports OpenAI-shaped messages; `require_tool_call_id` makes a `tool` message without
/// `tool_call_id` an error.
pub(super) fn import_messages(
    items: Vec<Value>,
    source_name: &str,
    require_tool_call_id: bool,
) -> Result<Vec<Message>, FormatError> {
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            import_message(item, require_tool_call_id).map_err(|problem| FormatError::at(source_name, index, problem))
        })
        .collect()
}

fn import_message(value: Value, require_tool_call_id: bool) -> Result<Message, String> {
    let Value::Object(object) = value else {
        return Err(format!("a message must be an object, not {}", kind_of(&value)));
    };
    let mut role = None;
    let mut content = Content::Absent;
    let mut tool_calls = Vec::new();
    let mut tool_call_id = None;
    let mut name = None;
    let mut extras = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("role", Value::String(text)) => role = Some(Role::from(text.as_str())),
            ("role", other) => return Err(format!("role must be a string, not {}", kind_of(&other))),
            ("content", value) => content = Content::from_value(value)?,
            ("tool_calls", Value::Array(items)) if !items.is_empty() => {
                tool_calls = items
                    .into_iter()
                    .enumerate()
                    .map(|(j, item)| import_tool_call(j, item))
                    .collect::<Result<_, _>>()?;
            }
            ("tool_calls", value @ (Value::Null | Value::Array(_))) => {
                extras.insert(key, value);
            }
            ("tool_calls", other) => return Err(format!("tool_calls must be an array, not {}", kind_of(&other))),
            ("tool_call_id", Value::String(text)) => tool_call_id = Some(text),
            ("name", Value::String(text)) => name = Some(text),
            (field @ ("tool_call_id" | "name"), Value::Null) => {
                extras.insert(field.to_owned(), Value::Null);
            }
            (field @ ("tool_call_id" | "name"), other) => {
                return Err(format!("{field} must be a string, not {}", kind_of(&other)));
            }
            (_, value) => {
                refuse_reserved_key(&key, "")?;
                extras.insert(key, value);
            }
        }
    }
    let Some(role) = role else {
        return Err("the message has no role".into());
    };
    if require_tool_call_id && role == Role::Tool && tool_call_id.is_none() {
        return Err("a tool message has no tool_call_id".into());
    }
    let mut message = bare_message(role);
    message.content = content;
    message.tool_calls = tool_calls;
    message.tool_call_id = tool_call_id;
    message.name = name;
    message.extras = extras;
    Ok(message)
}

fn import_tool_call(j: usize, value: Value) -> Result<ToolCall, String> {
    let Value::Object(object) = value else {
        return Err(format!("tool call {j} must be an object, not {}", kind_of(&value)));
    };
    let mut id = None;
    let mut function = None;
    let mut extras = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("id", Value::String(text)) => id = Some(text),
            ("id", other) => return Err(format!("tool call {j}: id must be a string, not {}", kind_of(&other))),
            ("function", Value::Object(object)) => {
                let (name, arguments, unknown) = import_function(j, object)?;
                if !unknown.is_empty() {
                    extras.insert("function".into(), Value::Object(unknown));
                }
                function = Some((name, arguments));
            }
            ("function", other) => {
                return Err(format!(
                    "tool call {j}: function must be an object, not {}",
                    kind_of(&other)
                ));
            }
            (_, value) => {
                refuse_reserved_key(&key, &format!("tool call {j}: "))?;
                extras.insert(key, value);
            }
        }
    }
    let Some(id) = id else {
        return Err(format!("tool call {j} has no id"));
    };
    let Some((name, arguments)) = function else {
        return Err(format!("tool call {j} has no function"));
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
        extras,
    })
}

fn import_function(j: usize, object: Map<String, Value>) -> Result<(String, String, Map<String, Value>), String> {
    let mut name = None;
    let mut arguments = None;
    let mut unknown = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("name", Value::String(text)) => name = Some(text),
            ("arguments", Value::String(text)) => arguments = Some(text),
            // The API says a string, but some OpenAI-compatible servers and clients send
            // the object itself: kept as its JSON text, and written back as an object.
            ("arguments", object @ Value::Object(_)) => {
                arguments = Some(object.to_string());
                unknown.insert(ARGUMENTS_OBJECT_KEY.into(), Value::Bool(true));
            }
            (field @ ("name" | "arguments"), other) => {
                return Err(format!(
                    "tool call {j}: function.{field} must be a string, not {}",
                    kind_of(&other)
                ));
            }
            (_, value) => {
                refuse_reserved_key(&key, &format!("tool call {j}: function."))?;
                unknown.insert(key, value);
            }
        }
    }
    let name = name.ok_or_else(|| format!("tool call {j}: function has no name"))?;
    let arguments = arguments.ok_or_else(|| format!("tool call {j}: function has no arguments"))?;
    Ok((name, arguments, unknown))
}

/// Exports one message as an OpenAI-shaped object. Anthropic tool-use placeholders and
/// the Anthropic grouping hint are left out.
pub(super) fn export_message(message: &Message) -> Value {
    let mut object = Map::new();
    object.insert("role".into(), Value::String(message.role.as_str().into()));
    insert_content(&mut object, &message.content);
    if !message.tool_calls.is_empty() {
        let calls = message.tool_calls.iter().map(export_tool_call).collect();
        object.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &message.tool_call_id {
        object.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    if let Some(name) = &message.name {
        object.insert("name".into(), Value::String(name.clone()));
    }
    append_extras(&mut object, &message.extras);
    Value::Object(object)
}

/// Writes `content` as `object`'s `content` (nothing when absent), without Anthropic's
/// tool-use placeholders.
pub(super) fn insert_content(object: &mut Map<String, Value>, content: &Content) {
    match content {
        Content::Absent => {}
        Content::Parts(parts) => {
            let parts = parts
                .iter()
                .filter(|p| !matches!(p, Part::ToolUse { .. }))
                .map(Part::to_value)
                .collect();
            object.insert("content".into(), Value::Array(parts));
        }
        other => {
            object.insert("content".into(), other.to_value());
        }
    }
}

/// Marks (in a call's unknown `function` fields) arguments that came as a JSON object
/// rather than the JSON text the API specifies; the exporter writes them back as they came.
pub(super) const ARGUMENTS_OBJECT_KEY: &str = "_llm_compactor_arguments_object";

fn export_tool_call(call: &ToolCall) -> Value {
    let mut function = Map::new();
    function.insert("name".into(), Value::String(call.name.clone()));
    let unknown = match call.extras.get("function") {
        Some(Value::Object(unknown)) => Some(unknown),
        _ => None,
    };
    let as_object = unknown
        .is_some_and(|u| u.contains_key(ARGUMENTS_OBJECT_KEY))
        .then(|| serde_json::from_str::<Value>(&call.arguments).ok())
        .flatten()
        .filter(Value::is_object);
    function.insert(
        "arguments".into(),
        as_object.unwrap_or_else(|| Value::String(call.arguments.clone())),
    );
    if let Some(unknown) = unknown {
        append_extras(&mut function, unknown);
    }
    let mut object = Map::new();
    object.insert("id".into(), Value::String(call.id.clone()));
    for (key, value) in &call.extras {
        if key == "function" {
            object.insert(key.clone(), Value::Object(std::mem::take(&mut function)));
        } else if key != "id" {
            object.insert(key.clone(), value.clone());
        }
    }
    if !function.is_empty() {
        object.insert("function".into(), Value::Object(function));
    }
    Value::Object(object)
}
