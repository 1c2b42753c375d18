//! Helpers shared by the format modules: turning bytes into JSON with located errors,
//! naming JSON kinds in error messages, and the `messages` placeholder of an envelope.

use serde_json::{Map, Value};

use super::FormatError;

/// Parses bytes as UTF-8 JSON. A leading byte-order mark is tolerated.
pub(super) fn parse_json(bytes: &[u8], source_name: &str) -> Result<Value, FormatError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        FormatError::whole(
            source_name,
            format!("not valid UTF-8: invalid byte at offset {}", e.valid_up_to()),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(FormatError::whole(
            source_name,
            "empty: expected a conversation (an array of messages, or an object with `messages`)",
        ));
    }
    serde_json::from_str(text).map_err(|e| {
        if let Some(problem) = json_lines_problem(text, &e) {
            return FormatError::whole(source_name, problem);
        }
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let reason = full.strip_suffix(&suffix).unwrap_or(&full);
        FormatError::whole(
            source_name,
            format!("invalid JSON at line {}, column {}: {reason}", e.line(), e.column()),
        )
    })
}

/// When `text` failed to parse because a second JSON value follows the first on its own
/// line (JSON Lines: a session transcript, or a log of one message per line), what to
/// say instead of serde_json's "trailing characters": that is a file of another kind,
/// not a broken conversation.
fn json_lines_problem(text: &str, error: &serde_json::Error) -> Option<String> {
    if error.classify() != serde_json::error::Category::Syntax || error.column() != 1 || error.line() < 2 {
        return None;
    }
    let mut lines = text.lines().map(str::trim).filter(|line| !line.is_empty());
    let first: Value = serde_json::from_str(lines.next()?).ok()?;
    let second: Value = serde_json::from_str(lines.next()?).ok()?;
    let is_envelope =
        |v: &Value| v.get("type").is_some_and(Value::is_string) && v.get("payload").is_some() && v.get("v").is_some();
    if is_envelope(&first) && is_envelope(&second) {
        return Some(
            "a session transcript (JSON Lines of `{id, payload, ts, type, v}` records), not a conversation \
             document: replay it into its conversation first (`compactor session replay`), or run \
             `compactor session compact` on it"
                .to_owned(),
        );
    }
    Some(format!(
        "one JSON value per line (JSON Lines: line 1 is {}, line {} another value); a conversation is one \
         JSON document: an array of messages, or an object with `messages` (for a file of one message \
         per line, `jq -s . FILE` makes that array)",
        kind_of(&first),
        error.line()
    ))
}

/// A short name for a JSON value's kind, for error messages (one definition, in the
/// message model).
pub(super) use crate::message::kind_of;

/// Splits a top-level object into its `messages` array and the envelope (the object with
/// `messages` left as a `null` placeholder, so the key keeps its place).
pub(super) fn take_messages(
    mut object: Map<String, Value>,
    source_name: &str,
    what: &str,
) -> Result<(Vec<Value>, Map<String, Value>), FormatError> {
    match object.get_mut("messages") {
        Some(Value::Array(items)) => {
            let items = std::mem::take(items);
            object.insert("messages".into(), Value::Null);
            Ok((items, object))
        }
        Some(other) => Err(FormatError::whole(
            source_name,
            format!("`messages` must be an array, not {}", kind_of(other)),
        )),
        None => Err(FormatError::whole(
            source_name,
            format!("{what} has no `messages` array"),
        )),
    }
}

/// The envelope object with `messages` set (inserted at the end when absent).
pub(super) fn fill_messages(envelope: &Value, messages: Vec<Value>) -> Map<String, Value> {
    let mut object = match envelope {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    object.insert("messages".into(), Value::Array(messages));
    object
}
