//! One summarizer call with its failure policy: hooks, backoff, retries, cancellation,
//! and the record of every attempt.
//!
//! The policy: an abort-class failure (400-404, a blocked call, an unavailable backend)
//! ends the pass's summarizing at once; anything else is retried after a backoff, up to
//! `max_attempts` failed calls in the whole pass. A reply the grounding gate finds mostly
//! repetition counts as a failed call (like an empty one). Every call is recorded, and every call's
//! usage counted, whether it failed, was rejected or was taken.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::backoff::{Sleeper, backoff_delay};
use super::hooks::{CompactionHooks, RequestDecision, ResponseDecision};
use super::result::{Attempt, AttemptKind, AttemptOutcome};
use crate::plan::grounding::{GroundingRules, check_repetition};
use crate::summarize::{FailureKind, PassContext, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use crate::usage::Usage;

/// How the note of an attempt whose reply stayed truncated starts.
const TRUNCATED_NOTE: &str = "still truncated";

/// Why summarizing stopped without a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GiveUp {
    /// An abort-class failure (including a blocked call).
    Abort,
    /// `max_attempts` failed calls.
    Exhausted,
    /// The pass was cancelled.
    Cancelled,
}

/// The state of the calls of one pass.
pub(crate) struct Calls<'a> {
    pub(crate) summarizer: &'a dyn Summarizer,
    pub(crate) hooks: &'a dyn CompactionHooks,
    pub(crate) sleeper: &'a dyn Sleeper,
    pub(crate) cancel: &'a CancellationToken,
    /// What the summarizer may know of the pass's request.
    pub(crate) pass: &'a PassContext,
    /// Seeds the deterministic jitter (the conversation digest).
    pub(crate) seed: String,
    pub(crate) max_attempts: u32,
    pub(crate) failures: u32,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) attempts: Vec<Attempt>,
    pub(crate) usage: Usage,
    /// The grounding gate's rules when the gate is on: a reply that is mostly
    /// repetition is then a failed attempt ([`FailureKind::Degenerate`]), retried.
    pub(crate) gate: Option<GroundingRules>,
}

impl Calls<'_> {
    /// Sends `request` (retrying per the policy) and returns the reply and the index of
    /// its attempt record (outcome `Rejected` until the caller says otherwise).
    pub(crate) async fn call(
        &mut self,
        kind: AttemptKind,
        request: &SummaryRequest,
    ) -> Result<(usize, SummaryReply), GiveUp> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(GiveUp::Cancelled);
            }
            let mut wait = Duration::ZERO;
            if self.failures > 0 {
                wait = backoff_delay(self.failures, self.retry_after.take(), &self.seed);
                tracing::debug!(
                    wait_ms = wait.as_millis() as u64,
                    failures = self.failures,
                    "summarizer backoff"
                );
                if !self.sleeper.sleep(wait, self.cancel).await {
                    return Err(GiveUp::Cancelled);
                }
            }
            let request = match self.hooks.before_request(request).await {
                RequestDecision::Proceed => request.clone(),
                RequestDecision::Modify(modified) => modified,
                RequestDecision::Block(reason) => {
                    let error =
                        SummarizerError::new(FailureKind::Blocked, format!("request blocked by a hook: {reason}"));
                    self.record_failure(kind, wait, &error);
                    return Err(GiveUp::Abort);
                }
            };
            let outcome = tokio::select! {
                biased;
                () = self.cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "cancelled during the call")),
                outcome = self.summarizer.summarize_in(request.clone(), self.pass, self.cancel) => outcome,
            };
            // A looping reply is a failed attempt, not an answer (issue 11).
            let outcome = match outcome {
                Ok(reply) if !reply.text.trim().is_empty() => match self.degenerate(&reply.text) {
                    Some(why) => Err(SummarizerError::new(FailureKind::Degenerate, why).with_usage(reply.usage)),
                    None => Ok(reply),
                },
                other => other,
            };
            let error = match outcome {
                Ok(reply) if reply.text.trim().is_empty() => {
                    SummarizerError::new(FailureKind::Empty, "the summary was empty").with_usage(reply.usage)
                }
                Ok(reply) => match self.hooks.on_response(&request, &reply).await {
                    ResponseDecision::Accept => {
                        self.usage += reply.usage;
                        self.attempts.push(Attempt {
                            kind,
                            outcome: AttemptOutcome::Rejected,
                            class: None,
                            status: None,
                            wait_ms: wait.as_millis() as u64,
                            usage: reply.usage,
                            note: None,
                        });
                        return Ok((self.attempts.len() - 1, reply));
                    }
                    ResponseDecision::Block(reason) | ResponseDecision::RetryWithFeedback(reason) => {
                        let error =
                            SummarizerError::new(FailureKind::Blocked, format!("summary rejected by a hook: {reason}"))
                                .with_usage(reply.usage);
                        self.record_failure(kind, wait, &error);
                        return Err(GiveUp::Abort);
                    }
                },
                Err(error) => error,
            };
            self.record_failure(kind, wait, &error);
            if error.kind == FailureKind::Cancelled || self.cancel.is_cancelled() {
                return Err(GiveUp::Cancelled);
            }
            if !error.class().is_retryable() {
                return Err(GiveUp::Abort);
            }
            if self.failures >= self.max_attempts {
                return Err(GiveUp::Exhausted);
            }
            self.retry_after = error.retry_after;
        }
    }

    /// Why the gate rejects `text` as repetition, when it is on and does.
    fn degenerate(&self, text: &str) -> Option<String> {
        let rules = self.gate.as_ref()?;
        check_repetition(text, rules).err().map(|r| r.to_string())
    }

    /// Records a failed call (without retrying) and counts it against `max_attempts`.
    pub(crate) fn record_failure(&mut self, kind: AttemptKind, wait: Duration, error: &SummarizerError) {
        tracing::warn!(kind = ?error.kind, class = ?error.class(), "summarizer call failed: {}", error.message);
        self.failures += 1;
        self.usage += error.usage;
        self.attempts.push(Attempt {
            kind,
            outcome: AttemptOutcome::Failed,
            class: Some(error.class()),
            status: error.kind.status(),
            wait_ms: wait.as_millis() as u64,
            usage: error.usage,
            note: Some(format!("{:?}: {}", error.kind, error.message)),
        });
    }

    /// Sets the outcome and note of attempt `index`.
    pub(crate) fn mark(&mut self, index: usize, outcome: AttemptOutcome, note: Option<String>) {
        if let Some(attempt) = self.attempts.get_mut(index) {
            attempt.outcome = outcome;
            // A truncation note stays, whatever else is said about the attempt.
            let truncated = attempt.note.take().filter(|n| n.starts_with(TRUNCATED_NOTE));
            attempt.note = match (truncated, note) {
                (Some(t), Some(n)) => Some(format!("{t}; {n}")),
                (t, n) => t.or(n),
            };
        }
    }

    /// Notes on an attempt that its reply was still truncated (and was marked so).
    pub(crate) fn note_truncated(&mut self, index: usize, max_output_tokens: u32) {
        if let Some(attempt) = self.attempts.get_mut(index) {
            attempt.note = Some(format!(
                "{TRUNCATED_NOTE} at {max_output_tokens} output tokens after the doubled-budget retry; \
                 used with a [summary truncated] marker"
            ));
        }
    }
}
