//! The provider-neutral conversation model.
//!
//! Every wire format (OpenAI chat completions, Anthropic Messages, mini-swe-agent
//! trajectories) is imported into [`Message`] and exported back from it without loss:
//! whatever we do not model travels in [`Message::extras`] (and in [`Part::Other`] for
//! content blocks), so a conversation that goes in and comes out untouched is the same
//! JSON value.
//!
//! The model also carries the three stickiness markers of the compactor's spec (an
//! explicit flag, a system prompt, an injected-at-depth message): sticky messages are
//! never summarized, elided or trimmed, because an agent's own instructions are the last
//! thing that should be compressed into "the user wanted some refactoring".
//!
//! [`canonical`] and [`digest`] give every message a stable identity: the calibrated
//! token counter and the session transcript both rely on it.

pub mod canonical;
mod content;
pub mod digest;
mod flat_arguments;
pub(crate) mod json_string;
pub mod media;
mod model;
pub mod pdf;

pub use canonical::{canonical_arguments, canonical_json};
pub(crate) use content::kind_of;
pub use content::{Content, Part};
pub use digest::{conversation_digest, message_digest};
pub use model::{Message, Role, ToolCall};
