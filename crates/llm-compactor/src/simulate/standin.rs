//! The deterministic stand-in summarizer.
//!
//! A simulation must be reproducible and free, so no model is called. What matters for
//! cost is how long a summary is and what its call is billed, and both are fixed
//! functions of the input here:
//!
//! - input tokens = the counter's count of the instruction plus the transcript;
//! - summary length = `min(2,000, ceil(10% of input))` tokens (at least 1, and never over
//!   the request's output budget), a figure in line with what real summarizers return for
//!   agent transcripts (a few hundred to two thousand tokens);
//! - the text is `the the the ...`: one word per token in o200k and exactly one token per
//!   word under the heuristic counter (`" the"` is 4 chars), so the summary weighs what it
//!   was meant to under both counters.
//!
//! The call is billed as uncached input plus output: a summarizer request is a fresh
//! prompt with nothing to share with the agent's cached prefix.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::count::TokenCounter;
use crate::plan::Tokens;
use crate::summarize::{StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use crate::usage::Usage;

/// The most tokens a stand-in summary has.
pub const STANDIN_MAX_SUMMARY_TOKENS: usize = 2_000;

/// The stand-in's summary length for an input of `input_tokens`:
/// `min(2000, ceil(input / 10))`, at least 1.
///
/// ```
/// use llm_compactor::simulate::standin_summary_tokens;
/// assert_eq!(standin_summary_tokens(30_001), 2_000);
/// assert_eq!(standin_summary_tokens(12_345), 1_235);
/// assert_eq!(standin_summary_tokens(0), 1);
/// ```
pub fn standin_summary_tokens(input_tokens: usize) -> usize {
    input_tokens.div_ceil(10).clamp(1, STANDIN_MAX_SUMMARY_TOKENS)
}

/// Filler text of `words` words (`the the ...`).
pub fn standin_text(words: usize) -> String {
    let mut text = String::with_capacity(words * 4);
    for i in 0..words {
        text.push_str(if i == 0 { "the" } else { " the" });
    }
    text
}

/// The stand-in summarizer; also usable synchronously by the peer strategies.
#[derive(Clone)]
pub struct StandIn {
    counter: Arc<dyn TokenCounter>,
}

impl std::fmt::Debug for StandIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandIn")
            .field("counter", &self.counter.name())
            .finish()
    }
}

impl StandIn {
    /// A stand-in that measures with `counter`.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        StandIn { counter }
    }

    /// The summary of an input of `input_tokens` tokens, and its output token count.
    pub fn summary_for(&self, input_tokens: usize, max_output: usize) -> (String, usize) {
        let words = standin_summary_tokens(input_tokens).min(max_output.max(1));
        let text = standin_text(words);
        let output = self.counter.count_text(&text);
        (text, output)
    }

    /// Summarizes `instruction` + `transcript` and returns the summary and its bill
    /// (uncached input plus output).
    pub fn summarize_sync(&self, instruction: &str, transcript: &str) -> (String, Tokens) {
        let input = self.counter.count_text(instruction) + self.counter.count_text(transcript);
        let (text, output) = self.summary_for(input, STANDIN_MAX_SUMMARY_TOKENS);
        (
            text,
            Tokens {
                uncached: input as u64,
                output: output as u64,
                ..Tokens::default()
            },
        )
    }
}

#[async_trait]
impl Summarizer for StandIn {
    fn name(&self) -> &str {
        "stand-in"
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let input = self.counter.count_text(&request.system) + self.counter.count_text(&request.transcript);
        let (text, output) = self.summary_for(input, request.max_output_tokens as usize);
        Ok(SummaryReply {
            text,
            stop: StopReason::Complete,
            usage: Usage {
                input_tokens: input as u64,
                output_tokens: output as u64,
                ..Usage::default()
            },
        })
    }
}
