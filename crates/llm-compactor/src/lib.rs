//! # llm-compactor
//!
//! Keeps a tool-using LLM agent inside its context window without losing what matters,
//! without breaking the conversation, and without throwing away the provider's prompt
//! cache.
//!
//! The shape of a compaction is fixed and deliberately boring:
//!
//! ```text
//! [ system prompt + anything sticky ]   kept, always, wherever it was
//! [ ...the middle... ]                  replaced by ONE summary message
//! [ the last keep_recent turns ]        kept verbatim
//! ```
//!
//! Layout: [`message`] (model, canonical JSON, digest), [`mod@format`] (wire formats),
//! [`count`] (token counters), [`plan`] (the pure planning core), [`summarize`] (the
//! summarizer port), [`compactor`] (the async shell), [`backend`] (summarizer backends),
//! [`session`] (the replayable transcript), [`simulate`] (the cost simulator), [`store`] (durable, shareable session stores), [`stale`] (sweeping temp files killed processes left).

#![warn(missing_docs)]

pub mod backend;
pub mod compactor;
mod conversation;
pub mod count;
pub mod format;
pub mod message;
pub mod plan;
pub mod session;
pub mod simulate;
pub mod stale;
pub mod store;
pub mod summarize;
mod usage;

pub use compactor::{
    CompactError, CompactOptions, CompactionResult, Compactor, CompactorConfig, ConfigError, Policy, UnknownPolicy,
};
pub use conversation::Conversation;
pub use count::TokenCounter;
pub use message::{Content, Message, Part, Role, ToolCall};
pub use summarize::{Summarizer, SummarizerError};
pub use usage::Usage;

/// The README's Rust examples, compiled and run as doctests so the README stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
