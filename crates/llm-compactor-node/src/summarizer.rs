//! A JavaScript function as the summarizer.
//!
//! `index.js` wraps the caller's function (sync or async, returning a string or
//! `{text, truncated?, usage?}`) into an async one that resolves to that answer as JSON
//! text, so this side reads one shape. The call goes through a thread-safe function:
//! the pass runs off the event loop, the function runs on it, and the pass awaits its
//! promise without blocking either. A rejected promise or a thrown error is a failed
//! attempt (the pass retries, then falls back to the ledger or the hard trim), never a
//! crash.

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use napi::Status;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

/// What the function is called with (one object).
#[napi(object)]
pub struct SummaryArgs {
    /// The summarizer's instructions.
    pub system: String,
    /// The rendered messages to summarize.
    pub transcript: String,
    /// The most tokens the answer may take.
    pub max_output_tokens: u32,
}

/// The function, as napi-rs holds it: called with [`SummaryArgs`], resolving to JSON text.
/// `WEAK`: the reference does not keep Node's event loop alive (a long-lived
/// `ContextManager` must not keep the process from exiting; a `compact` call holds its
/// function only while it runs).
pub type SummarizerFn<const WEAK: bool = false> =
    ThreadsafeFunction<SummaryArgs, Promise<String>, SummaryArgs, Status, false, WEAK>;

/// The answer `index.js` sends back, as JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    text: String,
    #[serde(default)]
    truncated: bool,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AnswerUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
}

/// A JavaScript function as a [`Summarizer`].
pub struct JsSummarizer<const WEAK: bool = false> {
    function: SummarizerFn<WEAK>,
}

impl<const WEAK: bool> JsSummarizer<WEAK> {
    /// Wraps `function` (from `index.js`'s wrapper).
    pub fn new(function: SummarizerFn<WEAK>) -> Self {
        JsSummarizer { function }
    }
}

fn read_answer(json: &str) -> Result<SummaryReply, SummarizerError> {
    let answer: Answer = serde_json::from_str(json).map_err(|e| {
        SummarizerError::new(
            FailureKind::Parse,
            format!("the summarizer must return a string or {{text, truncated?, usage?}}: {e}"),
        )
    })?;
    let usage = answer.usage.unwrap_or_default();
    Ok(SummaryReply::new(
        answer.text,
        if answer.truncated {
            StopReason::Truncated
        } else {
            StopReason::Complete
        },
        Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_tokens: usage.cache_read_tokens,
            cache_write_tokens: usage.cache_write_tokens,
        },
    ))
}

#[async_trait]
impl<const WEAK: bool> Summarizer for JsSummarizer<WEAK> {
    fn name(&self) -> &str {
        "js"
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let args = SummaryArgs {
            system: request.system,
            transcript: request.transcript,
            max_output_tokens: request.max_output_tokens,
        };
        let failed =
            |e: napi::Error| SummarizerError::new(FailureKind::Other, format!("the summarizer threw: {}", e.reason));
        let answer = async {
            let promise = self.function.call_async(args).await.map_err(failed)?;
            promise.await.map_err(failed)
        };
        tokio::select! {
            answer = answer => read_answer(&answer?),
            () = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "the compaction was cancelled")),
        }
    }
}
