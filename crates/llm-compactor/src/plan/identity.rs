//! Call identity: what makes two tool calls "the same call".
//!
//! The elision loop breaker counts identities: where the same call was answered twice,
//! the model has already re-run it once after losing it, so the newest answer is
//! protected forever and every older copy is dead weight.

use crate::message::canonical::write_canonical_arguments;

/// The identity of a call: the tool's name, a NUL, and its canonical arguments (JSON
/// re-rendered with sorted keys; anything else verbatim).
///
/// ```
/// use llm_compactor::plan::call_identity;
/// assert_eq!(call_identity("fs_read", r#"{"b":1, "a":2}"#), call_identity("fs_read", r#"{"a":2,"b":1}"#));
/// assert_ne!(call_identity("fs_read", "{}"), call_identity("fs_list", "{}"));
/// ```
pub fn call_identity(name: &str, arguments: &str) -> String {
    let mut identity = Vec::with_capacity(name.len() + arguments.len() + 1);
    identity.extend_from_slice(name.as_bytes());
    identity.push(0);
    write_canonical_arguments(arguments, &mut identity);
    // The name, a NUL and `canonical_arguments`' UTF-8: UTF-8.
    String::from_utf8(identity).unwrap_or_else(|_| format!("{name}\0{arguments}"))
}
