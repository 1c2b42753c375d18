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
//! ## Which API do I want?
//!
//! Four ways in, from the smallest to the largest; each is built on the one before it.
//!
//! | you have | you want | use |
//! |---|---|---|
//! | a conversation, once | it smaller, now | [`Compactor::compact`] |
//! | a conversation that grows every round | "is a pass due?" at the cost of the new messages | [`Conversation`] + [`Compactor::pass_due`] |
//! | an agent loop you write | the whole loop: count, decide, compact, record, retry after a context-length error | [`session::ContextManager`] |
//! | an agent you cannot change | all of that in front of it, over HTTP | the `compactor-proxy` crate (`compactor proxy`) |
//!
//! **One-shot: [`Compactor::compact`].** Give it the messages and get back a
//! [`CompactionResult`]: the conversation to use from now on (sticky prefix kept, middle
//! summarized or trimmed, recent window verbatim), what was replaced (`cut_index`,
//! `elisions`), what a broken input needed (`repairs`), and what it cost. It never hands
//! back a conversation a provider would reject. Nothing is remembered between calls: you
//! decide when to call it ([`Compactor::needs_compaction`]) and you keep the result.
//!
//! ```
//! # use std::sync::Arc;
//! # use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message};
//! # use llm_compactor::count::HeuristicCounter;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let compactor = Compactor::new(CompactorConfig::builder(2_000).build()?, Arc::new(HeuristicCounter));
//! let mut messages = vec![Message::system("You are terse.")];
//! for i in 0..40 {
//!     messages.push(Message::user(format!("question {i}: {}", "q".repeat(200))));
//!     messages.push(Message::assistant(format!("answer {i}: {}", "a".repeat(200))));
//! }
//! if compactor.needs_compaction(&messages) {
//!     // No summarizer configured: the pass ends in the hard trim, which always fits.
//!     let result = compactor.compact(&messages, CompactOptions::default()).await?;
//!     assert!(result.tokens_after < result.tokens_before);
//!     messages = result.messages;
//! }
//! # Ok(()) }
//! ```
//!
//! **A growing conversation: [`Conversation`].** Asking "is a pass due?" of a slice
//! costs work proportional to the whole conversation every round. A [`Conversation`]
//! counts each message once as it is pushed and keeps chained prefix digests and the
//! aging index, so [`Compactor::needs_compaction_in`] and [`Compactor::pass_due`] cost
//! the new messages. [`Compactor::pass_due`] is the one decision both loops below ask
//! (over the trigger, an elision epoch that pays, the request over the backend's room),
//! and [`Compactor::context_length_target`] the one rule for the pass after a
//! provider's context-length error.
//!
//! ```
//! # use std::sync::Arc;
//! # use llm_compactor::{Compactor, CompactorConfig, Conversation, Message, TokenCounter};
//! # use llm_compactor::compactor::RequestFit;
//! # use llm_compactor::count::HeuristicCounter;
//! let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
//! let compactor = Compactor::new(CompactorConfig::builder(100_000).build().unwrap(), counter.clone());
//! let mut conversation = Conversation::new(counter);
//! conversation.push(Message::user("Fix the build."));
//! let fit = RequestFit::new(&conversation, conversation.tokens());
//! assert_eq!(compactor.pass_due(&fit), None);
//! ```
//!
//! **An agent loop: [`session::ContextManager`].** It owns the conversation (in a
//! replayable [`session::Session`] transcript), counts each request whole (tools and
//! context included), runs a pass when [`Compactor::pass_due`] says so, writes the pass
//! to the transcript (repairs, elisions, the compaction, verified by replay first), and
//! after a provider's context-length error forces a bounded number of passes aimed as
//! [`Compactor::context_length_target`] says. `prepare` before each request,
//! `record_response` after it.
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use llm_compactor::{Compactor, CompactorConfig, Message};
//! # use llm_compactor::count::HeuristicCounter;
//! # use llm_compactor::session::{ContextManager, RequestShape, Session, SessionOptions};
//! # use tokio_util::sync::CancellationToken;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let compactor = Arc::new(Compactor::new(CompactorConfig::builder(128_000).build()?, Arc::new(HeuristicCounter)));
//! let session = Session::create("run-42.jsonl", SessionOptions::new())?;
//! let mut manager = ContextManager::new(compactor, session);
//! manager.push(Message::user("The tests fail on main; fix them."))?;
//! loop {
//!     let prepared = manager.prepare(RequestShape::default(), CancellationToken::new()).await?;
//!     // ... send `prepared.messages` to the model; on a context-length error call
//!     // `manager.on_context_length_exceeded(..)` and send what it returns instead ...
//!     let answer = Message::assistant("Done.");
//!     manager.record_response(None, "model", [answer])?;
//!     # break;
//! }
//! # Ok(()) }
//! ```
//!
//! **An agent you cannot change: the `compactor-proxy` crate.** An OpenAI- and
//! Anthropic-compatible HTTP proxy (`compactor proxy`, or `compactor_proxy::serve`):
//! point the agent's base URL at it. Per session it keeps the conversation the upstream
//! last saw, decides with [`Compactor::pass_due`] as the manager does, records each pass
//! with the same transcript writer ([`session::Lines`]) into a
//! [`store::SessionStore`], and serves the compacted prefix round after round so that
//! the provider's prompt cache keeps hitting.
//!
//! Layout: [`message`] (model, canonical JSON, digest), [`mod@format`] (wire formats),
//! [`count`] (token counters), [`plan`] (the pure planning core; [`plan::binding`]: the
//! provider state an edit invalidates), [`summarize`] (the
//! summarizer port), [`compactor`] (the async shell), [`backend`] (summarizer backends),
//! [`options`] (the one options overlay the CLI and the bindings apply), [`transcript`] (the pure room of the transcript: line format and records, envelope, ids and clock, replay, load from bytes or a store's lines, the expand lookup, the `Lines` writer), [`session`] (the shell around it: the JSONL file, its lock, reading a file or a store, repair, and the agent loop; it re-exports [`transcript`]'s items under their old names), [`atomic`] (the temp names of atomic writes), [`simulate`] (the cost simulator), [`store`] (durable, shareable session stores), [`stale`] (sweeping temp files killed processes left).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod atomic;
pub mod backend;
pub mod compactor;
mod conversation;
pub mod count;
pub mod format;
pub mod message;
pub mod options;
pub mod plan;
pub mod session;
pub mod simulate;
pub mod stale;
pub mod store;
pub mod summarize;
pub mod transcript;
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

/// The library guide's Rust examples (`docs/guide/library.md`), run as doctests too.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/library.md")]
pub struct LibraryGuideDoctests;

/// The summarizers guide's Rust example (`docs/guide/summarizers.md`), run as a doctest.
#[cfg(all(doctest, feature = "http"))]
#[doc = include_str!("../../../docs/guide/summarizers.md")]
pub struct SummarizersGuideDoctests;

/// The PostgreSQL guide's Rust example (`docs/guide/postgres.md`), compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/guide/postgres.md")]
pub struct PostgresGuideDoctests;
