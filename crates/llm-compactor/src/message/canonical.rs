//! Canonical JSON: sorted keys, no insignificant whitespace.
//!
//! Two things must compare equal whatever order their keys came in: a message's digest
//! (the calibrated counter and the session both key on it) and a tool call's arguments
//! (the elision loop breaker counts call identities). Both go through here.

use std::collections::BTreeMap;

use serde_json::Value;
use serde_json::value::RawValue;

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
/// ```
pub fn canonical_arguments(arguments: &str) -> String {
    if let Some(canonical) = canonical_flat_object(arguments) {
        return canonical;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => canonical_json(&value),
        Err(_) => arguments.to_owned(),
    }
}

/// [`canonical_arguments`] of the usual arguments, a JSON object, without building its
/// value: every call's identity is taken on every pass (the duplicate rule of aging), and
/// parsing each into a tree of owned values was a quarter of a dry run on real
/// trajectories. The members are read as borrowed slices in key order; a string without
/// escapes is written as it stands (it cannot hold a quote or a control character, so
/// serde_json writes it the same), anything else is rendered as the full path renders it.
/// `None` (the full path) when the text is not an object or a key has an escape.
fn canonical_flat_object(text: &str) -> Option<String> {
    let members: BTreeMap<&str, &RawValue> = serde_json::from_str(text).ok()?;
    let mut out = Vec::with_capacity(text.len());
    out.push(b'{');
    for (i, (key, raw)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json_string(&mut out, key);
        out.push(b':');
        let raw = raw.get();
        if (raw.starts_with('"') && !raw.contains('\\')) || matches!(raw, "true" | "false" | "null") {
            out.extend_from_slice(raw.as_bytes());
        } else if raw.starts_with('"') {
            write_json_string(&mut out, &serde_json::from_str::<String>(raw).ok()?);
        } else {
            write_canonical(&serde_json::from_str::<Value>(raw).ok()?, &mut out);
        }
    }
    out.push(b'}');
    String::from_utf8(out).ok()
}
