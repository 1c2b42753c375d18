//! Cache marks are request annotations, not content: stripping them from a conversation
//! before it is recorded, compared or rewritten.
//!
//! # Why
//!
//! A client that places its own breakpoints moves them every request: Claude Code marks
//! the last block of the last message, so the tool result that carried the mark in one
//! request arrives without it in the next. Read as content, that move is a history edit:
//! the proxy took it for one on 36 of 51 requests, forked the session every time (37
//! transcripts for one run, a pass that re-elided the whole history each time, prepared
//! passes never installed), and the marks it had stored with the messages came back as
//! stale breakpoints (5 to 17 per request, where Anthropic refuses more than 4).
//!
//! A mark also changes a message's shape: a client that marks a string content writes it
//! as one text block for that request (Anthropic renders both alike), and as the string
//! again once the mark has moved on. So a content of one plain text block is read as the
//! string it renders as.
//!
//! So a conversation the proxy records carries no `cache_control`: the session's history
//! is what was said, and where the client wants its cache breakpoints is read from its
//! current request alone, when the forwarded request is written
//! ([`super::place_breakpoints`]).

use serde_json::{Map, Value};

use super::CACHE_CONTROL;
use crate::message::{Content, Message, Part};

/// Removes every `cache_control` from `messages`: their parts (a tool result's own
/// blocks included), their wire extras (a `tool_result` block's own mark) and their tool
/// calls (a `tool_use` block's); then a content of one plain text block (no other field)
/// becomes that text as a string, the form it renders as. The number of marks removed.
///
/// ```
/// use llm_compactor::format::{Document, Format};
/// use llm_compactor::plan::breakpoints::strip_marks;
///
/// let request = serde_json::json!({"messages": [
///     {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
/// let mut messages = Document::from_value(request, Some(Format::Anthropic), "r").unwrap().into_messages();
/// assert_eq!(strip_marks(&mut messages), 1);
/// let plain = Document::from_value(
///     serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}),
///     Some(Format::Anthropic), "r").unwrap();
/// assert_eq!(messages, plain.messages());
/// ```
pub fn strip_marks(messages: &mut [Message]) -> usize {
    let mut removed = 0;
    for message in messages {
        removed += strip_map(&mut message.extras);
        for call in &mut message.tool_calls {
            removed += strip_map(&mut call.extras);
        }
        if let Content::Parts(parts) = &mut message.content {
            for part in parts.iter_mut() {
                removed += match part {
                    Part::Text { extras, .. } | Part::Thinking { extras, .. } => strip_map(extras),
                    Part::Other(Value::Object(block)) => strip_block(block),
                    Part::Other(_) | Part::ToolUse { .. } => 0,
                };
            }
            if let [Part::Text { text, extras }] = parts.as_mut_slice()
                && extras.is_empty()
                && message.tool_calls.is_empty()
            {
                message.content = Content::Text(std::mem::take(text));
            }
        }
    }
    removed
}

fn strip_map(map: &mut Map<String, Value>) -> usize {
    usize::from(map.shift_remove(CACHE_CONTROL).is_some())
}

/// A block's own mark and those of the blocks nested in its `content`.
fn strip_block(block: &mut Map<String, Value>) -> usize {
    let mut removed = strip_map(block);
    if let Some(Value::Array(inner)) = block.get_mut("content") {
        for nested in inner {
            if let Value::Object(nested) = nested {
                removed += strip_map(nested);
            }
        }
    }
    removed
}

/// True when `a` and `b` are equal once every `cache_control` (at any depth) is left
/// out, and a content of one plain text block is read as its string: the same message
/// whose breakpoint moved.
///
/// ```
/// use llm_compactor::plan::breakpoints::eq_but_marks;
/// let a = serde_json::json!({"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]});
/// let b = serde_json::json!({"role": "user", "content": [{"type": "text", "text": "x"}]});
/// assert!(eq_but_marks(&a, &b));
/// assert!(eq_but_marks(&a, &serde_json::json!({"role": "user", "content": "x"})), "one text block is its string");
/// assert!(!eq_but_marks(&a, &serde_json::json!({"role": "user", "content": "y"})));
/// ```
pub fn eq_but_marks(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let unmarked = |m: &Map<String, Value>| m.keys().filter(|k| *k != CACHE_CONTROL).count();
            unmarked(a) == unmarked(b)
                && a.iter()
                    .filter(|(k, _)| *k != CACHE_CONTROL)
                    .all(|(k, v)| b.get(k).is_some_and(|w| eq_but_marks(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(v, w)| eq_but_marks(v, w)),
        (Value::String(text), Value::Array(blocks)) | (Value::Array(blocks), Value::String(text)) => {
            lone_text(blocks) == Some(text.as_str())
        }
        _ => a == b,
    }
}

/// `value` without any `cache_control` (at any depth), a content of one plain text
/// block read as its string: what [`eq_but_marks`] compares, as a value to digest.
///
/// ```
/// use llm_compactor::plan::breakpoints::unmarked;
/// let marked = serde_json::json!([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]);
/// assert_eq!(unmarked(&marked), serde_json::json!("x"));
/// ```
pub fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(k, _)| *k != CACHE_CONTROL)
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(items) => match lone_text(items) {
            Some(text) => Value::String(text.to_owned()),
            None => Value::Array(items.iter().map(unmarked).collect()),
        },
        other => other.clone(),
    }
}

/// The text of a content that is one text block with no other field than a mark.
fn lone_text(blocks: &[Value]) -> Option<&str> {
    let [Value::Object(block)] = blocks else {
        return None;
    };
    let plain = block.keys().all(|k| k == "type" || k == "text" || k == CACHE_CONTROL);
    (plain && block.get("type").and_then(Value::as_str) == Some("text"))
        .then(|| block.get("text").and_then(Value::as_str))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Document, Format};
    use serde_json::json;

    fn read(request: Value) -> Vec<Message> {
        Document::from_value(request, Some(Format::Anthropic), "r")
            .unwrap()
            .into_messages()
    }

    #[test]
    fn every_place_a_mark_can_sit_is_stripped_and_nothing_else_changes() {
        let mark = json!({"type": "ephemeral"});
        let marked = json!({"system": [{"type": "text", "text": "rules", "cache_control": mark}],
            "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": mark}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}, "cache_control": mark}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": false, "cache_control": mark,
                 "content": [{"type": "text", "text": "a.txt", "cache_control": mark}]},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}, "cache_control": mark}]}]});
        let mut clean = marked.clone();
        let plain = read({
            for path in [
                "/system/0",
                "/messages/0/content/0",
                "/messages/1/content/1",
                "/messages/2/content/0",
                "/messages/2/content/0/content/0",
                "/messages/2/content/1",
            ] {
                clean
                    .pointer_mut(path)
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .shift_remove(CACHE_CONTROL);
            }
            clean.clone()
        });
        let mut messages = read(marked.clone());
        assert_eq!(strip_marks(&mut messages), 6);
        // The same conversation never marked: equal once its lone text blocks are read
        // as the strings they render as.
        let mut plain = plain;
        assert_eq!(strip_marks(&mut plain), 0);
        assert_eq!(plain[1].content, Content::Text("go".into()));
        assert_eq!(messages, plain);
        assert_eq!(strip_marks(&mut messages), 0, "idempotent");
        assert!(eq_but_marks(&marked, &clean));
        let mut edited = clean.clone();
        edited["messages"][2]["content"][0]["is_error"] = json!(true);
        assert!(!eq_but_marks(&marked, &edited), "a real edit is an edit");
        let string = json!({"role": "user", "content": "go"});
        assert!(
            eq_but_marks(&marked["messages"][0], &string),
            "a marked block is its string"
        );
        let cited = json!({"role": "user", "content": [{"type": "text", "text": "go", "citations": []}]});
        assert!(!eq_but_marks(&cited, &string), "a block with more than a mark is not");
    }
}
