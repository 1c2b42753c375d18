//! Canonical JSON: sorted keys, no insignificant whitespace.
//!
//! Two things must compare equal whatever order their keys came in: a message's digest
//! (the calibrated counter and the session both key on it) and a tool call's arguments
//! (the elision loop breaker counts call identities). Both go through here.

use serde_json::Value;

use super::flat_arguments::write_flat_arguments;
use super::json_string::{write_json_array, write_json_members, write_json_string, write_json_value};

/// The canonical JSON text of a value: object keys sorted (by their UTF-8 bytes, at
/// every depth), no spaces.
///
/// ```
/// use llm_compactor::message::canonical_json;
/// let value = serde_json::json!({"b": 1, "a": {"d": [2, {"z": 0, "y": 1}], "c": null}});
/// assert_eq!(canonical_json(&value), r#"{"a":{"c":null,"d":[2,{"y":1,"z":0}]},"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only JSON tokens and serde_json's escaped strings were written: valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Writes [`canonical_json`]'s text of `value` to `out`, without building a sorted copy.
/// Strings and keys are written as serde_json writes them (`super::json_string`), numbers
/// by serde_json, so the bytes are exactly serde_json's compact rendering of the value
/// with its object keys sorted.
pub(crate) fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(object) => {
            let mut members: Vec<(&String, &Value)> = object.iter().collect();
            members.sort_by(|a, b| a.0.cmp(b.0));
            write_json_members(out, members, |out, item| write_canonical(item, out));
        }
        Value::Array(items) => write_json_array(out, items, |out, item| write_canonical(item, out)),
        Value::String(text) => write_json_string(out, text),
        scalar => write_json_value(out, scalar),
    }
}

/// Canonical tool-call arguments: a JSON text is re-rendered canonically; anything else
/// (not JSON at all) is returned verbatim.
///
/// ```
/// use llm_compactor::message::canonical_arguments;
/// assert_eq!(canonical_arguments(r#"{ "path": "a.rs", "line": 3 }"#), r#"{"line":3,"path":"a.rs"}"#);
/// assert_eq!(canonical_arguments("ls -la"), "ls -la");
/// // Escapes serde_json writes itself stay; `\/` and `\u` are decoded.
/// assert_eq!(
///     canonical_arguments(r#"{"cmd": "echo \"a\"\n\/tmp \u0071\u00e9\u001F"}"#),
///     r#"{"cmd":"echo \"a\"\n/tmp qé\u001f"}"#
/// );
/// ```
pub fn canonical_arguments(arguments: &str) -> String {
    let mut out = Vec::with_capacity(arguments.len());
    write_canonical_arguments(arguments, &mut out);
    // JSON tokens, serde_json's strings and slices of the (UTF-8) arguments: UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| arguments.to_owned())
}

/// Appends [`canonical_arguments`] of `arguments` to `out` (a call's identity is written
/// into one buffer with its tool's name).
pub(crate) fn write_canonical_arguments(arguments: &str, out: &mut Vec<u8>) {
    if write_flat_arguments(arguments, out).is_some() {
        return;
    }
    write_canonical_parsed(arguments, out);
}

/// [`write_canonical_arguments`] through serde_json's full parse: what the one-scan path
/// (`super::flat_arguments`) does not accept (nested values, floats, `\/` and `\u`
/// escapes, a text that is not JSON, written verbatim), and the reference it is tested
/// against.
pub(crate) fn write_canonical_parsed(arguments: &str, out: &mut Vec<u8>) {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => write_canonical(&value, out),
        Err(_) => out.extend_from_slice(arguments.as_bytes()),
    }
}
