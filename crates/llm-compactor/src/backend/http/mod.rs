//! Summarizer backends over HTTP: an OpenAI-compatible chat-completions client and an
//! Anthropic Messages client (feature `http`).
//!
//! Both are one type, [`HttpBackend`], with a per-protocol codec ([`Protocol`]): the
//! transport, timeouts, cancellation and error mapping are the same, and only the JSON
//! and the auth headers differ. The codecs are our own thin serde rather than an SDK: an
//! SDK that retries 429s by itself would fight the compactor's retry policy, and one that
//! drops unknown fields would hide what a server actually said.
//!
//! Every failure is reported as a fact ([`crate::summarize::FailureKind`]: the HTTP
//! status, a timeout after connecting, a connection that never completed, an unparsable
//! or empty answer, a context-length error, a cancel); the compactor's classification
//! table turns it into a decision. The API key is a [`Secret`]: it never appears in
//! `Debug` output, logs or error messages.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_compactor::backend::http::HttpBackend;
//! use llm_compactor::message::Message;
//! use tokio_util::sync::CancellationToken;
//!
//! let backend = HttpBackend::anthropic("claude-haiku-4-5").build()?; // reads ANTHROPIC_API_KEY
//! let reply = backend
//!     .chat("Answer in one word.", &[Message::user("Capital of France?")], 16, &CancellationToken::new())
//!     .await?;
//! println!("{} ({} input tokens)", reply.text, reply.usage.input_tokens);
//! # Ok(()) }
//! ```

mod anthropic;
mod cache_reading;
mod client;
mod config;
mod context_length;
mod errors;
mod openai;
mod redirect;
mod retry_after;
mod room;
mod secret;
mod wire;
mod wire_usage;

pub use cache_reading::{AgentRequest, cache_reading_body, cache_reading_instruction};
pub use client::HttpBackend;
pub use config::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, HttpBackendBuilder, HttpConfigError};
pub use context_length::is_context_length_exceeded;
pub use redirect::{CrossOriginRedirect, MAX_REDIRECTS};
pub use retry_after::parse_retry_after;
pub use room::{UNKNOWN_MODEL_INPUT_ROOM, default_input_room};
pub use secret::{MIN_PARTIAL_SECRET, Secret};
pub use wire::{ChatReply, MaxTokensField, Protocol};
pub use wire_usage::MAX_PLAUSIBLE_TOKENS;
