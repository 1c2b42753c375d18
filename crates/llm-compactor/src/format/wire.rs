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
    serde_json::from_str(text).map_err(|e| {
        let full = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let reason = full.strip_suffix(&suffix).unwrap_or(&full);
        FormatError::whole(
            source_name,
            format!("invalid JSON at line {}, column {}: {reason}", e.line(), e.column()),
        )
    })
}

/// A short name for a JSON value's kind, for error messages.
pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

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
