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

/// Call identities interned as small integers, equal exactly when their
/// [`call_identity`] strings are equal, without a string per call.
///
/// Every pass over a slice takes the identity of every call (the loop breaker needs to
/// know which calls were answered twice), so this is per-call work on every round of a
/// loop that plans over a slice. Owning a `String` per call was a fifth of it (an
/// allocation, a copy, a UTF-8 check and a free per call); here each identity is written
/// once, at the end of one buffer that holds every distinct identity back to back, and
/// the buffer is cut back when the identity was seen before.
#[derive(Clone, Debug, Default)]
pub(crate) struct IdentityTable {
    /// Every distinct identity's bytes (the tool's name, a NUL, the canonical
    /// arguments), back to back.
    bytes: Vec<u8>,
    /// Per interned id: the end of its bytes (its start is the previous id's end).
    ends: Vec<usize>,
    table: hashbrown::HashTable<u32>,
    hasher: foldhash::quality::RandomState,
}

impl IdentityTable {
    /// The id of the call `name(arguments)`: the next unused one for an identity not seen
    /// before, in order of first appearance (so the ids are the same on every run).
    pub(crate) fn intern(&mut self, name: &str, arguments: &str) -> u32 {
        use std::hash::BuildHasher;
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        write_canonical_arguments(arguments, &mut self.bytes);
        let IdentityTable {
            bytes,
            ends,
            table,
            hasher,
        } = self;
        let span = |id: u32| {
            let id = id as usize;
            let from = if id == 0 { 0 } else { ends[id - 1] };
            &bytes[from..ends[id]]
        };
        let key = &bytes[start..];
        let hash = hasher.hash_one(key);
        if let Some(&id) = table.find(hash, |&id| span(id) == key) {
            bytes.truncate(start);
            return id;
        }
        let id = ends.len() as u32;
        table.insert_unique(hash, id, |&id| hasher.hash_one(span(id)));
        ends.push(bytes.len());
        id
    }

    /// How many distinct identities are interned.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Two calls get one id exactly when their identity strings are equal, and ids
        /// are handed out in order of first appearance.
        #[test]
        fn interned_ids_are_equal_exactly_when_the_identities_are(
            calls in prop::collection::vec(
                (prop::sample::select(vec!["read", "bash", "re"]), prop::sample::select(vec![
                    r#"{"path": "a"}"#, r#"{"path":"a"}"#, r#"{ "b": 1, "path": "a" }"#,
                    r#"{"path":"a","b":1}"#, "a", "", "ad", r#"{"path": "\u0061"}"#,
                ])),
                0..40,
            )
        ) {
            let mut table = IdentityTable::default();
            let ids: Vec<u32> = calls.iter().map(|(name, arguments)| table.intern(name, arguments)).collect();
            let identities: Vec<String> = calls.iter().map(|(name, arguments)| call_identity(name, arguments)).collect();
            let mut first_seen: Vec<&String> = Vec::new();
            for (identity, &id) in identities.iter().zip(&ids) {
                match first_seen.iter().position(|seen| *seen == identity) {
                    Some(position) => prop_assert_eq!(id as usize, position),
                    None => {
                        prop_assert_eq!(id as usize, first_seen.len());
                        first_seen.push(identity);
                    }
                }
            }
            prop_assert_eq!(table.len(), first_seen.len());
        }
    }
}
