//! The words both protocol codecs, the transport and the builder share: which protocol
//! ([`Protocol`]), which field carries an OpenAI request's output budget
//! ([`MaxTokensField`]), and what one chat request answers ([`ChatReply`]).
//!
//! They live apart from the transport (`client.rs`) and the builder (`config.rs`) so
//! that the codecs (`openai.rs`, `anthropic.rs`) depend on these words only, never on the
//! client that calls them: the codecs are below the transport, not beside it.

use serde::{Deserialize, Serialize};

use crate::summarize::StopReason;
use crate::usage::Usage;

/// The wire protocol of a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OpenAI chat completions (`POST {base}/chat/completions`): OpenAI itself, and the
    /// OpenAI-compatible servers (vLLM, llama.cpp server, Ollama, LM Studio, OpenRouter,
    /// LiteLLM, ...).
    OpenAi,
    /// Anthropic Messages (`POST {base}/v1/messages`).
    Anthropic,
}

impl Protocol {
    /// The name used in [`crate::summarize::Summarizer::name`] (`openai`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::OpenAi => "openai",
            Protocol::Anthropic => "anthropic",
        }
    }

    /// The default base URL.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Protocol::OpenAi => "https://api.openai.com/v1",
            Protocol::Anthropic => "https://api.anthropic.com",
        }
    }

    /// The environment variable the API key is read from by default.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            Protocol::OpenAi => "OPENAI_API_KEY",
            Protocol::Anthropic => "ANTHROPIC_API_KEY",
        }
    }
}

/// Which request field carries the output budget of an OpenAI-compatible request.
///
/// OpenAI's newer models (o-series, gpt-5) reject `max_tokens`; many compatible servers
/// only know `max_tokens`. The default is `max_completion_tokens` for `api.openai.com` and
/// `max_tokens` for any other base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaxTokensField {
    /// `max_tokens`.
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

/// The answer to one chat request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatReply {
    /// The assistant's text (never empty or whitespace only: that is a
    /// [`crate::summarize::FailureKind::Empty`] error).
    pub text: String,
    /// Why the model stopped.
    pub stop: StopReason,
    /// What the call was billed.
    pub usage: Usage,
}

impl ChatReply {
    /// A reply of `text`, stopped for `stop`, billed `usage`.
    pub fn new(text: impl Into<String>, stop: StopReason, usage: Usage) -> Self {
        ChatReply {
            text: text.into(),
            stop,
            usage,
        }
    }
}
