//! The shell's half of expansion: the handles of a session's file, read back. The lookup
//! itself is pure and lives in [`crate::transcript`] (`expand`).

use serde_json::Value;

use super::error::SessionError;
use super::load::Transcript;
use super::log::Session;
use super::manager::ContextManager;
use crate::transcript::{Expansion, answer_expand, expand_tool_definition};

impl Session {
    /// The original messages behind `handle` in this session (read back from its file);
    /// `None` when none carries it.
    ///
    /// # Errors
    /// The transcript cannot be read.
    pub fn expand(&self, handle: &str) -> Result<Option<Expansion>, SessionError> {
        Ok(Transcript::read(self.path())?.expand(handle))
    }
}

impl ContextManager {
    /// The `compactor_expand` tool to offer the model (see [`expand_tool_definition`]).
    pub fn expand_tool(&self) -> Value {
        expand_tool_definition()
    }

    /// The answer to a `compactor_expand` call with `arguments` in this session, at most
    /// `max_chars` chars (see [`answer_expand`]).
    ///
    /// # Errors
    /// The transcript cannot be read.
    pub fn answer_expand(&self, arguments: &str, max_chars: usize) -> Result<String, SessionError> {
        let originals = Transcript::read(self.session().path())?.originals();
        Ok(answer_expand(&originals, arguments, max_chars))
    }
}
