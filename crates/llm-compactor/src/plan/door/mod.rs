//! Budgets at the door (issue 41, item 3): what no conversation should carry whole,
//! whatever its budget — a tool result larger than its tool's cap, and media beyond the
//! last few or beyond what one request may weigh.
//!
//! The rule is [`door`]: a pure function of the conversation and its [`DoorRules`] that
//! answers the [`Elision`]s to make, in the shape every other in-place replacement of the
//! compactor already has (an index and the new whole content). So it is applied, recorded
//! in a session transcript (an `elision` line, by message id), replayed and expanded
//! exactly as an aging stub is: the original stays whole where the caller keeps
//! originals (the transcript, the proxy's store, the input file of a one-shot `compact`)
//! and its handle ([`super::handle_of`], the one handle scheme) reads it back byte for
//! byte through the expand path.
//!
//! - **Tool results** ([`preview_text`]): a result whose content is over its tool's cap
//!   ([`DoorRules::cap_chars`]) becomes a head/tail preview around a marker that names
//!   its size, its tool and its handle. The preview is a function of the content, the
//!   tool's name and the handle only, so the same result is capped to the same bytes on
//!   every request, the newest results of the turn in progress included.
//! - **Media** ([`media_placeholder`]): the media parts of the user and tool messages older than the
//!   newest [`DoorRules::keep_media`], and then, oldest first, as many more as it takes to
//!   bring the conversation's content under [`DoorRules::max_request_bytes`], become a
//!   one-line placeholder with the handle. The unanswered current turn (every message
//!   after the last assistant message) is never touched.
//!
//! Pure: no I/O, no clock. Idempotent: the conversation with the answer applied has
//! nothing left for the rule (a preview is under any cap, a placeholder is text).

mod media;
mod preview;
mod rules;

use std::collections::HashMap;

pub use media::{content_bytes, media_placeholder};
pub use preview::{is_door_preview, preview_text};
pub use rules::{
    DEFAULT_KEEP_MEDIA, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_PREVIEW_CHARS, DEFAULT_TOOL_CAP_TOKENS,
    DOOR_CHARS_PER_TOKEN, DoorRules,
};

use super::Elision;
use crate::message::{Message, Role};

/// The elisions the door makes in `messages` under `rules`, by index, in order.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::{DoorRules, apply_elisions, door};
/// let rules = DoorRules::default().with_tool_cap("bash", 1_000);
/// let messages = vec![
///     Message::user("list it"),
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", "{}")]),
///     Message::tool("c1", "x".repeat(200_000)),
/// ];
/// let capped = door(&messages, &rules);
/// assert_eq!(capped.len(), 1);
/// assert_eq!(capped[0].index, 2);
/// assert!(capped[0].stub.chars().count() < 2_400);
/// // Idempotent: nothing more to do on the result.
/// assert!(door(&apply_elisions(&messages, &capped), &rules).is_empty());
/// ```
pub fn door(messages: &[Message], rules: &DoorRules) -> Vec<Elision> {
    let names = tool_names(messages);
    let mut out: Vec<Elision> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        if !message.is_tool_result() || message.is_sticky() {
            continue;
        }
        let tool = message
            .tool_call_id
            .as_deref()
            .and_then(|id| names.get(id).copied())
            .or(message.name.as_deref());
        if let Some(stub) = preview::capped(index, message, tool, rules) {
            out.push(Elision { index, stub });
        }
    }
    let media = media::placeholders(messages, rules, &out);
    out.extend(media);
    out.sort_by_key(|e| e.index);
    out
}

/// The name of the call each tool call id names.
fn tool_names(messages: &[Message]) -> HashMap<&str, &str> {
    messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect()
}

/// The first message of the unanswered current turn: the one after the last assistant
/// message (0 when no assistant has spoken: the whole conversation is the turn).
pub(crate) fn current_turn_start(messages: &[Message]) -> usize {
    messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests;
