//! Canonical JSON: sorted keys, no insignificant whitespace.
//!
//! Two things must compare equal whatever order their keys came in: a message's digest
//! (the calibrated counter and the session both key on it) and a tool call's arguments
//! (the elision loop breaker counts call identities). Both go through here.

use serde_json::{Map, Value};

/// The canonical JSON text of a value: object keys sorted (by their UTF-8 bytes, at
/// every depth), no spaces.
///
/// ```
/// use llm_compactor::message::canonical_json;
/// let value = serde_json::json!({"b": 1, "a": {"d": [2, {"z": 0, "y": 1}], "c": null}});
/// assert_eq!(canonical_json(&value), r#"{"a":{"c":null,"d":[2,{"y":1,"z":0}]},"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    serde_json::to_string(&sorted(value)).unwrap_or_default()
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(object.len());
            for key in keys {
                out.insert(key.clone(), sorted(&object[key]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Canonical tool-call arguments: a JSON text is re-rendered canonically; anything else
/// (not JSON at all) is returned verbatim.
///
/// ```
/// use llm_compactor::message::canonical_arguments;
/// assert_eq!(canonical_arguments(r#"{ "path": "a.rs", "line": 3 }"#), r#"{"line":3,"path":"a.rs"}"#);
/// assert_eq!(canonical_arguments("ls -la"), "ls -la");
/// ```
pub fn canonical_arguments(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => canonical_json(&value),
        Err(_) => arguments.to_owned(),
    }
}
