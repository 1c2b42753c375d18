//! Roles a target format cannot express, given a faithful form instead of being dropped.
//!
//! OpenAI's legacy `function` role, mini-swe-agent's `exit`, and any other role string
//! travel as [`Role::Other`]. Neither target has such a role, and silently leaving those
//! messages out of a converted conversation loses what they said. So before a
//! conversion each one gets the nearest form the target can say:
//!
//! - a `function` message that answers a call becomes that call's tool result: the
//!   nearest earlier assistant message's unanswered tool call of the same name, or its
//!   legacy `function_call` (which then becomes a real tool call, id
//!   `call_function_<index>`);
//! - any other message that comes while the latest assistant message still has a call
//!   with no answer becomes that call's tool result, under a label naming its role
//!   (mini-swe-agent's closing `exit` record carries what the final call printed; a user
//!   turn there would leave the call unanswered, which providers reject);
//! - anything else becomes a user message whose content starts with a label naming the
//!   role (`[message of role "exit"]`), so no reader mistakes it for the user's words;
//! - a message that cannot be given either form (an unknown role that carries tool
//!   calls) is refused with an error naming its index.
//!
//! With `lossy`, such messages are dropped instead, and each drop is reported.

use std::collections::HashSet;

use serde_json::Value;

use crate::message::{Content, Message, Part, Role, ToolCall};

/// A message a lossy conversion dropped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DroppedMessage {
    /// Its index in the source conversation.
    pub index: usize,
    /// Its role.
    pub role: String,
}

/// The messages with every [`Role::Other`] mapped (or, with `lossy`, dropped and
/// listed). `Err((index, problem))` for a message that has no faithful form.
pub(super) fn express_roles(
    messages: &[Message],
    lossy: bool,
) -> Result<(Vec<Message>, Vec<DroppedMessage>), (usize, String)> {
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut claimed: HashSet<String> = HashSet::new();
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut dropped = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let Role::Other(role) = &message.role else {
            out.push(message.clone());
            continue;
        };
        if lossy {
            tracing::warn!(index, role = %role, "lossy conversion: dropped a message of a role the target cannot express");
            dropped.push(DroppedMessage {
                index,
                role: role.clone(),
            });
            continue;
        }
        if role == "function"
            && let Some(result) = as_tool_result(message, index, &mut out, &answered, &mut claimed)
        {
            out.push(result);
            continue;
        }
        if message.tool_calls.is_empty()
            && let Some(id) = open_call(&out, &answered, &claimed)
        {
            // Between a call and its answers a user turn would break the conversation;
            // the message is what came back for that call (mini-swe-agent's `exit`
            // carries the submission the final call printed).
            claimed.insert(id.clone());
            let mut result = labelled_user(message, role);
            result.role = Role::Tool;
            result.tool_call_id = Some(id);
            out.push(result);
            continue;
        }
        if !message.tool_calls.is_empty() {
            return Err((
                index,
                format!(
                    "a message of role {role:?} with tool calls has no form in the target format \
                     (pass lossy / --lossy to drop it)"
                ),
            ));
        }
        out.push(labelled_user(message, role));
    }
    Ok((out, dropped))
}

/// The tool result a `function` message stands for, when an earlier assistant message
/// made the call it answers.
fn as_tool_result(
    message: &Message,
    index: usize,
    out: &mut [Message],
    answered: &HashSet<&str>,
    claimed: &mut HashSet<String>,
) -> Option<Message> {
    let name = message.name.as_deref();
    let at = out.iter().rposition(|m| m.role == Role::Assistant)?;
    let assistant = &mut out[at];
    let open = assistant.tool_calls.iter().find(|call| {
        name.is_none_or(|n| n == call.name) && !answered.contains(call.id.as_str()) && !claimed.contains(&call.id)
    });
    let id = match open {
        Some(call) => call.id.clone(),
        None => {
            // A legacy `function_call` the assistant made: make it a real tool call.
            let legacy = assistant.extras.get("function_call")?.as_object()?;
            let call_name = legacy.get("name")?.as_str()?.to_owned();
            if name.is_some_and(|n| n != call_name) {
                return None;
            }
            let arguments = match legacy.get("arguments") {
                Some(Value::String(arguments)) => arguments.clone(),
                Some(other) => other.to_string(),
                None => "{}".to_owned(),
            };
            let id = format!("call_function_{index}");
            if claimed.contains(&id) {
                return None;
            }
            assistant.extras.remove("function_call");
            assistant
                .tool_calls
                .push(ToolCall::new(id.clone(), call_name, arguments));
            id
        }
    };
    claimed.insert(id.clone());
    let mut result = message.clone();
    result.role = Role::Tool;
    result.tool_call_id = Some(id);
    Some(result)
}

/// The first call of the latest assistant message that is still open (no answer
/// anywhere, none claimed) when only its answers have followed it so far.
fn open_call(out: &[Message], answered: &HashSet<&str>, claimed: &HashSet<String>) -> Option<String> {
    let at = out.iter().rposition(|m| m.role != Role::Tool)?;
    let assistant = &out[at];
    if assistant.role != Role::Assistant {
        return None;
    }
    assistant
        .tool_calls
        .iter()
        .find(|call| !answered.contains(call.id.as_str()) && !claimed.contains(&call.id))
        .map(|call| call.id.clone())
}

/// A user message carrying `message`'s content under a label naming its role.
fn labelled_user(message: &Message, role: &str) -> Message {
    let mut label = format!("[message of role {role:?}");
    if let Some(name) = &message.name {
        label.push_str(&format!(", name {name:?}"));
    }
    label.push(']');
    let mut user = message.clone();
    user.role = Role::User;
    user.name = None;
    user.tool_call_id = None;
    user.content = match &message.content {
        Content::Text(text) if !text.is_empty() => Content::Text(format!("{label}\n{text}")),
        Content::Parts(parts) if !parts.is_empty() => {
            let mut parts = parts.clone();
            parts.insert(0, Part::text(label));
            Content::Parts(parts)
        }
        _ => Content::Text(label),
    };
    user
}
