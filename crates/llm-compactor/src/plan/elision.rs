//! [`Elision`]: one tool result whose content a pass replaced by a stub.
//!
//! The type lives in the pure core because the core applies elisions
//! ([`super::apply_elisions`]) and must never import from the async shell; the shell
//! (`compactor`) re-exports it under its historical path `compactor::Elision`.

use serde::{Deserialize, Serialize};

/// One elided tool result: its position in the INPUT conversation and the stub that
/// replaced its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Elision {
    /// Index into the conversation given to `compact`.
    pub index: usize,
    /// The stub text now in its content.
    pub stub: String,
}

impl Elision {
    /// The message at `index` had its content replaced by `stub`.
    pub fn new(index: usize, stub: impl Into<String>) -> Self {
        Self {
            index,
            stub: stub.into(),
        }
    }
}
