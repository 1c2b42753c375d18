//! Media at the door: the newest few kept, the rest a placeholder, and the oldest of
//! those kept given up while the conversation weighs more than one request may.
//!
//! A message is the unit: its content is replaced whole (an [`Elision`]), its text kept
//! in order and each media part written as a one-line placeholder with the message's
//! handle. So a message is kept only when all its media are, and only the user and tool
//! messages whose parts are all text or media are taken (a thinking block, a tool use or
//! a part the crate does not model would not survive a content made of text).

use serde_json::Value;

use super::{DoorRules, current_turn_start};
use crate::message::media::is_media_type;
use crate::message::{Content, Message, Part, Role};
use crate::plan::{Elision, handle_of};

/// Bytes of a content as it travels: text as UTF-8, a structured part by the strings and
/// keys of its JSON (the payloads of media parts, mostly), without allocating it.
///
/// ```
/// use llm_compactor::message::{Content, Part};
/// use llm_compactor::plan::content_bytes;
/// use serde_json::json;
/// assert_eq!(content_bytes(&Content::Text("héllo".into())), 6);
/// let image = Part::Other(json!({"type": "image", "source": {"type": "base64", "data": "QUJD".repeat(1000)}}));
/// assert!(content_bytes(&Content::Parts(vec![image])) > 4_000);
/// ```
pub fn content_bytes(content: &Content) -> usize {
    match content {
        Content::Absent | Content::Null => 0,
        Content::Text(text) => text.len(),
        Content::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                Part::Text { text, .. } => text.len() + 24,
                Part::Thinking { thinking, .. } => thinking.len() + 32,
                Part::ToolUse { id } => id.len() + 24,
                Part::Other(value) => value_bytes(value),
            })
            .sum(),
    }
}

fn value_bytes(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| value_bytes(v) + 1).sum::<usize>(),
        Value::Object(members) => 2 + members.iter().map(|(k, v)| k.len() + 4 + value_bytes(v)).sum::<usize>(),
    }
}

/// The placeholder of a media part of `kind` weighing `bytes`, in the message `handle`
/// names.
///
/// ```
/// use llm_compactor::plan::media_placeholder;
/// assert_eq!(
///     media_placeholder("image", 612_000, "#0123456789"),
///     "[image elided by the harness: 612000 bytes #0123456789; call compactor_expand with \"#0123456789\" to read the message whole]"
/// );
/// ```
pub fn media_placeholder(kind: &str, bytes: usize, handle: &str) -> String {
    let kind = if kind.is_empty() { "media" } else { kind };
    format!(
        "[{kind} elided by the harness: {bytes} bytes {handle}; call compactor_expand with \"{handle}\" to read the message whole]"
    )
}

/// The media parts of `message` when it is one the door may rewrite, else 0.
fn media_parts(message: &Message) -> usize {
    if !matches!(message.role, Role::User | Role::Tool) || message.is_sticky() {
        return 0;
    }
    let Content::Parts(parts) = &message.content else {
        return 0;
    };
    let mut media = 0;
    for part in parts {
        match part {
            Part::Text { .. } => {}
            Part::Other(value) if is_media_type(value) => media += 1,
            _ => return 0,
        }
    }
    media
}

/// The text content that stands for `message` (at `index`) with its media placeholders.
fn flattened(index: usize, message: &Message) -> String {
    let handle = handle_of(index, message);
    let Content::Parts(parts) = &message.content else {
        return message.content.text();
    };
    let lines: Vec<String> = parts
        .iter()
        .map(|part| match part {
            Part::Other(value) => {
                let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
                media_placeholder(kind, value_bytes(value), &handle)
            }
            other => other.text_ref().unwrap_or_default().to_owned(),
        })
        .collect();
    lines.join("\n")
}

/// The placeholders of the media the door takes from `messages`, once `before` (the
/// capped tool results) are applied.
pub(super) fn placeholders(messages: &[Message], rules: &DoorRules, before: &[Elision]) -> Vec<Elision> {
    let protected_from = current_turn_start(messages);
    let capped: std::collections::BTreeSet<usize> = before.iter().map(|e| e.index).collect();
    // Candidates, newest first: (index, media parts).
    let candidates: Vec<(usize, usize)> = messages[..protected_from]
        .iter()
        .enumerate()
        .rev()
        .filter(|(i, _)| !capped.contains(i))
        .map(|(i, m)| (i, media_parts(m)))
        .filter(|&(_, n)| n > 0)
        .collect();
    let protected_media: usize = messages[protected_from..]
        .iter()
        .map(|m| match &m.content {
            Content::Parts(parts) => parts
                .iter()
                .filter(|p| matches!(p, Part::Other(v) if is_media_type(v)))
                .count(),
            _ => 0,
        })
        .sum();
    // The newest messages holding at most `keep_media` media in all (the unanswered
    // turn's counted first); every older one goes.
    let mut kept = protected_media;
    let mut split = candidates.len();
    for (k, &(_, n)) in candidates.iter().enumerate() {
        if kept + n > rules.keep_media {
            split = k;
            break;
        }
        kept += n;
    }
    // Then the oldest kept ones, while the content is over the byte ceiling.
    let mut out: Vec<Elision> = candidates[split..]
        .iter()
        .map(|&(index, _)| Elision {
            index,
            stub: flattened(index, &messages[index]),
        })
        .collect();
    // The content's bytes with every elision so far applied (without copying it).
    let stubs: std::collections::BTreeMap<usize, usize> =
        before.iter().chain(&out).map(|e| (e.index, e.stub.len())).collect();
    let mut bytes: usize = messages
        .iter()
        .enumerate()
        .map(|(i, m)| stubs.get(&i).copied().unwrap_or_else(|| content_bytes(&m.content)))
        .sum();
    for &(index, _) in candidates[..split].iter().rev() {
        if bytes <= rules.max_request_bytes {
            break;
        }
        let stub = flattened(index, &messages[index]);
        bytes = bytes - content_bytes(&messages[index].content) + stub.len();
        out.push(Elision { index, stub });
    }
    out
}
