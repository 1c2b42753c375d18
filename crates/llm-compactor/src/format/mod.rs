//! Wire formats: OpenAI chat completions, Anthropic Messages, mini-swe-agent
//! trajectories. Import then export gives back the identical JSON value.

use std::path::Path;

use serde_json::Value;

use crate::message::Message;

/// A supported wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// OpenAI chat completions: an array of messages, or an object with `messages`.
    OpenAi,
    /// Anthropic Messages: `{system, messages}` with content blocks.
    Anthropic,
    /// A mini-swe-agent trajectory (`*.traj.json`).
    MiniSweAgent,
}

/// Input that is not a conversation we can read, located as precisely as we can.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{source_name}{}: {problem}", index.map(|i| format!(": message {i}")).unwrap_or_default())]
pub struct FormatError {
    /// The file (or `<stdin>`).
    pub source_name: String,
    /// The message index, when the problem is in one message.
    pub index: Option<usize>,
    /// What is wrong.
    pub problem: String,
}

/// A conversation read from a file, remembering its format and every top-level field
/// beside the messages, so that it can be written back in kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    format: Format,
    messages: Vec<Message>,
    envelope: Value,
}

impl Document {
    /// Reads a conversation from JSON bytes; `format: None` detects it.
    ///
    /// # Errors
    /// Invalid UTF-8 or JSON, an unrecognised shape, or a malformed message.
    pub fn from_bytes(bytes: &[u8], format: Option<Format>, source_name: &str) -> Result<Document, FormatError> {
        let _ = (bytes, format, source_name);
        unimplemented!()
    }

    /// Reads a conversation file.
    ///
    /// # Errors
    /// As [`Document::from_bytes`], plus I/O errors.
    pub fn read_path(path: &Path, format: Option<Format>) -> Result<Document, FormatError> {
        let _ = (path, format);
        unimplemented!()
    }

    /// The detected or given format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The same document with other messages (a compacted conversation).
    pub fn with_messages(&self, messages: Vec<Message>) -> Document {
        Document {
            format: self.format,
            messages,
            envelope: self.envelope.clone(),
        }
    }

    /// The document as JSON in its own format.
    pub fn to_value(&self) -> Value {
        unimplemented!()
    }
}
