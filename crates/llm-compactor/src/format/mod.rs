//! Wire formats: OpenAI chat completions, Anthropic Messages, mini-swe-agent trajectories.
//!
//! # Why lossless
//!
//! The compactor rewrites the middle of a conversation and hands the rest back to the
//! agent, which sends it to its provider again. Anything we silently dropped or reshaped
//! on the way (a provider-specific field, a `null` that used to be absent, a block order)
//! is a change the agent never asked for, and a change in the prefix costs the prompt
//! cache. So every importer keeps what it does not model ([`Message::extras`],
//! [`crate::message::Part::Other`], the document's envelope) and every exporter puts it
//! back: **import followed by export into the same format gives back an equal
//! [`serde_json::Value`]** (object key order aside: JSON objects are unordered and
//! `Value` equality ignores it; the exporters emit modeled fields first, then the kept
//! ones in their original order).
//!
//! # The three formats
//!
//! - [`Format::OpenAi`]: a JSON array of messages, or an object with `messages` (every
//!   other top-level key is the envelope). `system` and `developer` messages are system
//!   prompts (sticky).
//! - [`Format::Anthropic`]: `{system, messages, ...}`. The top-level `system` (a string or
//!   an array of text blocks) becomes a leading [`Role::System`] message whose content
//!   keeps the shape. An assistant turn's `tool_use` blocks become [`ToolCall`]s and leave
//!   a [`crate::message::Part::ToolUse`] placeholder where they stood. A user turn holding
//!   `tool_result` blocks becomes one [`Role::Tool`] message per block, then one user
//!   message with the remaining blocks, each carrying a grouping hint under
//!   [`ANTHROPIC_HINT_KEY`] in its extras so that export rebuilds the very same turn.
//!   Other formats never write that key.
//! - [`Format::MiniSweAgent`]: a `*.traj.json` trajectory, `{info, messages,
//!   trajectory_format, instance_id}`, whose messages are OpenAI-shaped with extra keys
//!   and a closing bookkeeping message of role `exit` ([`Role::Other`]).
//!
//! # Conversion ([`Document::to_format`]) and what it loses
//!
//! Converting produces a *valid* conversation of the target format, which means dropping
//! what the target cannot say:
//!
//! - Message-level wire extras (mini-swe-agent's `extra`, `reasoning_content`,
//!   `provider_specific_fields`, `function_call`; Anthropic's `cache_control`, `is_error`,
//!   `citations`) are dropped; only OpenAI's `refusal`, `audio` and `annotations` survive
//!   into OpenAI-shaped targets. Tool-call extras (`index`, `type`) are dropped and
//!   OpenAI calls get `type: "function"`.
//! - Messages of roles neither format knows are never dropped silently: a `function`
//!   message answering a call becomes that call's tool result, anything else (mini-swe-
//!   agent's `exit`) a user message labelled with its role; an unknown role with tool
//!   calls is refused with the message index. [`Document::to_format_lossy`] drops them
//!   instead and reports each one.
//! - OpenAI → Anthropic: leading `system`/`developer` messages become the top-level
//!   `system` (a string for one text message, else text blocks); later ones become user
//!   turns. Consecutive tool messages (and a user message right after them) become one
//!   user turn of `tool_result` blocks (then text). Tool-call arguments that are not a
//!   JSON object are wrapped as `{"arguments": "<raw>"}`. `image_url` parts become
//!   `image` blocks (data URLs as base64 sources). A tool message's `name` is dropped; a
//!   tool message without `tool_call_id` becomes a user message. Empty text parts are
//!   dropped (Anthropic rejects them). Consecutive turns of one role are merged into one
//!   turn (tool results first), so turns alternate.
//! - Anthropic → OpenAI: `thinking`/`redacted_thinking` blocks and tool-use placeholders
//!   are dropped; `image` blocks become `image_url` parts (in user turns; elsewhere a text
//!   marker); a tool result's `is_error` is dropped; a user turn's block order becomes
//!   "tool results first, then the rest" (OpenAI puts tool messages right after the call).
//!   Blocks OpenAI has no part for (documents, server tool results) become a
//!   `[<type> omitted]` text marker.
//! - Envelopes: request parameters both know (`model`, `max_tokens`, `temperature`,
//!   `top_p`, `stream`, stop sequences, `tools`, `tool_choice`) are mapped; the rest is
//!   dropped. An OpenAI target without any such parameter is a bare messages array. A
//!   mini-swe-agent target is a fresh trajectory (`info` empty).
//!
//! [`openhands`] reads OpenHands event streams (import only) into messages;
//! [`responses`] reads and writes OpenAI Responses API requests (the proxy's
//! `/v1/responses`).
//!
//! Anthropic → OpenAI → Anthropic is lossless for conversations that only use text,
//! base64 images, tool use with object inputs and tool results of text, with tool
//! results first in their user turn and no extras.

pub(crate) mod anthropic;
pub mod caller;
pub mod context_management;
mod convert;
mod detect;
mod key_order;
mod mini_swe_agent;
mod openai;
pub mod openhands;
pub mod responses;
mod roles;
mod wire;

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde_json::{Map, Value};

use crate::message::{Message, Role, ToolCall};

pub use anthropic::ANTHROPIC_HINT_KEY;
pub use detect::{DetectError, detect};
pub use roles::DroppedMessage;

/// A supported wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Format {
    /// OpenAI chat completions: an array of messages, or an object with `messages`.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages: `{system, messages}` with content blocks.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// A mini-swe-agent trajectory (`*.traj.json`).
    #[serde(rename = "mini-swe-agent")]
    MiniSweAgent,
}

impl Format {
    /// Every format, in a stable order.
    pub const ALL: [Format; 3] = [Format::OpenAi, Format::Anthropic, Format::MiniSweAgent];

    /// The format's name: `openai`, `anthropic` or `mini-swe-agent`.
    ///
    /// ```
    /// use llm_compactor::format::Format;
    /// assert_eq!(Format::MiniSweAgent.name(), "mini-swe-agent");
    /// assert_eq!("anthropic".parse::<Format>(), Ok(Format::Anthropic));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::MiniSweAgent => "mini-swe-agent",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is none of `openai`, `anthropic`, `mini-swe-agent`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown format `{0}` (expected openai, anthropic or mini-swe-agent)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// Input that is not a conversation we can read, located as precisely as we can.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{source_name}{}: {problem}", index.map(|i| format!(": message {i}")).unwrap_or_default())]
#[non_exhaustive]
pub struct FormatError {
    /// The file (or `<stdin>`).
    pub source_name: String,
    /// The message index (in the wire `messages` array), when the problem is in one message.
    pub index: Option<usize>,
    /// What is wrong (for invalid JSON, with its line and column).
    pub problem: String,
}

impl FormatError {
    /// An error about the whole input.
    pub fn whole(source_name: &str, problem: impl Into<String>) -> Self {
        FormatError {
            source_name: source_name.to_owned(),
            index: None,
            problem: problem.into(),
        }
    }

    /// An error about message `index`.
    pub fn at(source_name: &str, index: usize, problem: impl Into<String>) -> Self {
        FormatError {
            source_name: source_name.to_owned(),
            index: Some(index),
            problem: problem.into(),
        }
    }
}

/// A conversation read from a file, remembering its format and every top-level field
/// beside the messages, so that it can be written back in kind.
///
/// ```
/// use llm_compactor::format::{Document, Format};
///
/// let wire = br#"[{"role":"system","content":"Be brief."},{"role":"user","content":"hi","x":1}]"#;
/// let doc = Document::from_bytes(wire, None, "chat.json").unwrap();
/// assert_eq!(doc.format(), Format::OpenAi);
/// assert!(doc.messages()[0].sysprompt);
/// assert_eq!(doc.to_value(), serde_json::from_slice::<serde_json::Value>(wire).unwrap());
///
/// let anthropic = doc.to_format(Format::Anthropic).unwrap();
/// assert_eq!(anthropic["system"], "Be brief.");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    format: Format,
    messages: Vec<Message>,
    /// `Null` for a bare OpenAI array; otherwise the top-level object, with `messages`
    /// (and Anthropic's `system`) left as `null` placeholders that keep their key order.
    envelope: Value,
}

impl Document {
    /// Reads a conversation from JSON bytes; `format: None` detects it (see [`detect`]).
    ///
    /// # Errors
    /// Invalid UTF-8 or JSON (with line and column), an unrecognised shape, or a
    /// malformed message (with its index); each names `source_name`.
    pub fn from_bytes(bytes: &[u8], format: Option<Format>, source_name: &str) -> Result<Document, FormatError> {
        let value = wire::parse_json(bytes, source_name)?;
        Document::from_value(value, format, source_name)
    }

    /// Reads a conversation from an already parsed JSON value.
    ///
    /// # Errors
    /// As [`Document::from_bytes`], less the syntax errors.
    pub fn from_value(value: Value, format: Option<Format>, source_name: &str) -> Result<Document, FormatError> {
        let format = match format {
            Some(format) => format,
            None => detect(&value).map_err(|e| FormatError::whole(source_name, e.problem))?,
        };
        let (messages, envelope) = match format {
            Format::OpenAi => openai::import_document(value, source_name)?,
            Format::Anthropic => anthropic::import_document(value, source_name)?,
            Format::MiniSweAgent => mini_swe_agent::import_document(value, source_name)?,
        };
        tracing::debug!(source = source_name, %format, messages = messages.len(), "imported conversation");
        Ok(Document {
            format,
            messages,
            envelope,
        })
    }

    /// Reads a conversation file.
    ///
    /// # Errors
    /// As [`Document::from_bytes`], plus I/O errors (named with the path).
    pub fn read_path(path: &Path, format: Option<Format>) -> Result<Document, FormatError> {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| FormatError::whole(&name, e.to_string()))?;
        Document::from_bytes(&bytes, format, &name)
    }

    /// A new document of `format` holding `messages` and no other top-level field.
    pub fn from_messages(format: Format, messages: Vec<Message>) -> Document {
        Document {
            format,
            messages,
            envelope: convert::fresh_envelope(format),
        }
    }

    /// The detected or given format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, to change in place (their number stays: the document's shape is
    /// its envelope's).
    pub fn messages_mut(&mut self) -> &mut [Message] {
        &mut self.messages
    }

    /// The messages, by value.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The same document with other messages (a compacted conversation).
    pub fn with_messages(&self, messages: Vec<Message>) -> Document {
        Document {
            format: self.format,
            messages,
            envelope: self.envelope.clone(),
        }
    }

    /// The document as JSON in its own format. For a document read from the wire and
    /// left untouched, this is the value that was read.
    pub fn to_value(&self) -> Value {
        write(self.format, &self.messages, &self.envelope)
    }

    /// The document converted to `target` (its own format gives [`Document::to_value`]).
    /// See the module docs for what a conversion drops. No message is ever dropped:
    /// a message of a role the target cannot express gets the nearest faithful form
    /// (see [`Document::to_format_lossy`] to drop them instead).
    ///
    /// # Errors
    /// A message that has no faithful form in `target` (an unknown role with tool
    /// calls); the error names its index.
    pub fn to_format(&self, target: Format) -> Result<Value, FormatError> {
        self.convert(target, false).map(|(value, _)| value)
    }

    /// [`Document::to_format`], but a message of a role the target cannot express is
    /// dropped rather than mapped; every drop is returned (and logged as a warning).
    ///
    /// # Errors
    /// None today; the `Result` matches [`Document::to_format`].
    pub fn to_format_lossy(&self, target: Format) -> Result<(Value, Vec<DroppedMessage>), FormatError> {
        self.convert(target, true)
    }

    fn convert(&self, target: Format, lossy: bool) -> Result<(Value, Vec<DroppedMessage>), FormatError> {
        if target == self.format {
            return Ok((self.to_value(), Vec::new()));
        }
        let (expressed, dropped) = roles::express_roles(&self.messages, lossy)
            .map_err(|(index, problem)| FormatError::at(&format!("conversion to {target}"), index, problem))?;
        let messages = convert::normalize(&expressed, target);
        let envelope = convert::map_envelope(self.format, target, &self.envelope);
        let mut value = write(target, &messages, &envelope);
        if target == Format::Anthropic {
            convert::merge_consecutive_turns(&mut value);
        }
        Ok((value, dropped))
    }
}

/// Writes messages and an envelope in `format`.
fn write(format: Format, messages: &[Message], envelope: &Value) -> Value {
    match format {
        Format::OpenAi => openai::export_document(messages, envelope),
        Format::Anthropic => anthropic::export_document(messages, envelope),
        Format::MiniSweAgent => mini_swe_agent::export_document(messages, envelope),
    }
}

/// Appends to an exported `object` the fields a message (or a call) kept that its codec
/// does not model, after the modelled ones (a key already written wins), leaving out the
/// codecs' own hint keys: every exporter writes extras through here, so a new hint key
/// is one line in [`is_hint_key`], not one in each exporter.
fn append_extras(object: &mut Map<String, Value>, extras: &Map<String, Value>) {
    for (key, value) in extras {
        if !is_hint_key(key) && !object.contains_key(key) {
            object.insert(key.clone(), value.clone());
        }
    }
}

/// The namespace of the keys under which the importers keep, in a message's (or a
/// call's) extras, what they need to write it back as it came
/// ([`anthropic::ANTHROPIC_HINT_KEY`], [`responses::RESPONSES_HINT_KEY`], and the marker
/// of tool-call arguments sent as an object). The crate's own: such keys are never
/// written to the wire, and a wire document that uses one itself is refused with a
/// located error, because the key would steer how its message is written back and would
/// not be written back itself.
pub const RESERVED_KEY_PREFIX: &str = "_llm_compactor_";

/// A key of the crate's own namespace ([`RESERVED_KEY_PREFIX`]): never written to the
/// wire as it is.
fn is_hint_key(key: &str) -> bool {
    key.starts_with(RESERVED_KEY_PREFIX)
}

/// Refuses a key of the crate's namespace met in a wire document (`what` names where,
/// e.g. "tool call 0: "; the caller adds the message index).
fn refuse_reserved_key(key: &str, what: &str) -> Result<(), String> {
    if is_hint_key(key) {
        Err(format!(
            "{what}`{key}` is a key reserved for llm-compactor's own use (keys starting {RESERVED_KEY_PREFIX:?})"
        ))
    } else {
        Ok(())
    }
}

/// A message of `role` with the given parts, used by the importers.
fn bare_message(role: Role) -> Message {
    let sysprompt = role.is_system_prompt();
    Message {
        id: None,
        role,
        content: crate::message::Content::Absent,
        tool_calls: Vec::<ToolCall>::new(),
        tool_call_id: None,
        name: None,
        sticky: false,
        sysprompt,
        depth: None,
        extras: serde_json::Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key a reader keeps a hint under is in the reserved namespace: the exporters
    /// leave it out and the readers refuse it from a client.
    #[test]
    fn every_hint_key_is_reserved() {
        for key in [
            ANTHROPIC_HINT_KEY,
            responses::RESPONSES_HINT_KEY,
            openai::ARGUMENTS_OBJECT_KEY,
        ] {
            assert!(is_hint_key(key) && refuse_reserved_key(key, "").is_err(), "{key}");
        }
    }
}
