//! The [`Summarizer`] port: the one thing the compactor needs from a language model.
//!
//! Summarization is a different job from the agent's own turns: it is not
//! latency-sensitive, needs no tools, and a small cheap model does it well. So the
//! summarizer is its own object, not "the loop's first backend".

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::failure::SummarizerError;
use super::pass_context::PassContext;
use crate::usage::Usage;

/// One summarization request.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRequest {
    /// The fixed instruction (with any tighten note and focus appended).
    pub system: String,
    /// The user turn: the rendered transcript of the middle (or of one chunk of it),
    /// between the prompts' prefix and suffix.
    pub transcript: String,
    /// The output budget in tokens.
    pub max_output_tokens: u32,
    /// The start of the answer (`## Goals\n` by default; empty: none). A backend that
    /// can start the model's answer itself (the local model) does so and returns the
    /// prefill as part of the summary text; one that cannot (OpenAI-compatible servers,
    /// a command) ignores it, and its answer is the whole summary.
    #[serde(default)]
    pub prefill: String,
}

/// Why the model stopped writing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// It finished.
    Complete,
    /// It ran out of output budget: the summary is cut short.
    Truncated,
}

/// A successful summarizer call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SummaryReply {
    /// The summary text.
    pub text: String,
    /// Why it stopped.
    pub stop: StopReason,
    /// What the call was billed.
    pub usage: Usage,
}

impl SummaryReply {
    /// A reply of `text`, stopped for `stop`, billed `usage`.
    pub fn new(text: impl Into<String>, stop: StopReason, usage: Usage) -> Self {
        SummaryReply {
            text: text.into(),
            stop,
            usage,
        }
    }
}

/// A language model that can summarize a transcript.
///
/// Object-safe (through `async_trait`) so it can be shared as `Arc<dyn Summarizer>`.
/// Implementations must stop promptly when `cancel` fires, returning a
/// [`crate::summarize::FailureKind::Cancelled`] error.
///
/// ```
/// use async_trait::async_trait;
/// use llm_compactor::summarize::{StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
/// use llm_compactor::Usage;
/// use tokio_util::sync::CancellationToken;
///
/// /// Answers with the first line of the transcript.
/// struct FirstLine;
///
/// #[async_trait]
/// impl Summarizer for FirstLine {
///     fn name(&self) -> &str { "first-line" }
///     async fn summarize(&self, request: SummaryRequest, _cancel: &CancellationToken)
///         -> Result<SummaryReply, SummarizerError> {
///         let text = request.transcript.lines().next().unwrap_or_default().to_owned();
///         Ok(SummaryReply::new(text, StopReason::Complete, Usage::default()))
///     }
/// }
/// let shared: std::sync::Arc<dyn Summarizer> = std::sync::Arc::new(FirstLine);
/// assert_eq!(shared.input_room(), None);
/// ```
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// A short name for reports and events (`openai:gpt-4o-mini`, `exec`, `local`, ...).
    fn name(&self) -> &str;

    /// How many input tokens (instruction plus transcript) one request may carry, if the
    /// backend knows. When the rendered middle does not fit, the compactor summarizes it
    /// in pair-aligned chunks that do.
    fn input_room(&self) -> Option<usize> {
        None
    }

    /// True for a summarizer that writes no text of its own (the ledger): the compactor
    /// then uses the artifact ledger of the replaced messages as the whole summary and
    /// never calls [`Summarizer::summarize`].
    fn model_free(&self) -> bool {
        false
    }

    /// The most output tokens this backend writes in one answer, if it has a cap of its
    /// own (the local model: the context positions reserved for output). The compactor's
    /// doubled-budget retry after a truncated summary never goes above it.
    fn max_output_tokens(&self) -> Option<u32> {
        None
    }

    /// Summarize one transcript.
    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError>;

    /// [`Summarizer::input_room`] for a pass whose request is `pass` (the agent request a
    /// summary may read the cache of, say): what the compactor asks. The default ignores
    /// the context.
    fn input_room_in(&self, pass: &PassContext) -> Option<usize> {
        let _ = pass;
        self.input_room()
    }

    /// [`Summarizer::summarize`] for a pass whose request is `pass` (see
    /// [`PassContext`]): what the compactor calls. The default ignores the context; a
    /// summarizer that reads it overrides this (and one that wraps another hands `pass`
    /// on).
    async fn summarize_in(
        &self,
        request: SummaryRequest,
        pass: &PassContext,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let _ = pass;
        self.summarize(request, cancel).await
    }
}
