//! Canonical JSON: sorted keys, no insignificant whitespace.
//!
//! Two things must compare equal whatever order their keys came in: a message's digest
//! (the calibrated counter and the session both key on it) and a tool call's arguments
//! (the elision loop breaker counts call identities). Both go through here.

use serde_json::Value;

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

/// Writes [`canonical_json`]'s text of `value` to `out`, without building a sorted copy
/// (a message's digest streams it straight into its hash). Each key, string and number
/// is written by serde_json, so the bytes are exactly serde_json's compact rendering of
/// the value with its object keys sorted.
pub(crate) fn write_canonical(value: &Value, out: &mut impl std::io::Write) {
    // Writes go to memory or a hasher, which cannot fail; a failing writer only cuts the
    // text short.
    let _ = write_value(value, out);
}

fn write_value(value: &Value, out: &mut impl std::io::Write) -> std::io::Result<()> {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            out.write_all(b"{")?;
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                serde_json::to_writer(&mut *out, key)?;
                out.write_all(b":")?;
                write_value(&object[key], out)?;
            }
            out.write_all(b"}")
        }
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_value(item, out)?;
            }
            out.write_all(b"]")
        }
        scalar => serde_json::to_writer(&mut *out, scalar).map_err(std::io::Error::from),
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
