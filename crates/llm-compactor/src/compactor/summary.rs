//! The summarizing phase of a pass: chunked requests, the doubled-budget retry after a
//! truncated summary, the proof of shrinkage and the single tighten retry.

use super::Compactor;
use super::calls::{Calls, GiveUp};
use super::fit::{Accepted, Fit, SummaryOutcome};
use super::pass::Pass;
use super::result::{Attempt, AttemptKind, AttemptOutcome};
use crate::count::TokenCounter;
use crate::message::{Message, conversation_digest};
use crate::plan;
use crate::summarize::{
    FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest, next_chunk, render_units,
};
use crate::usage::Usage;

/// Tokens kept free in every request beside the estimate (framing, estimate error).
const ROOM_MARGIN: usize = 64;
/// Below this many tokens of transcript room, summarizing is pointless.
const MIN_TRANSCRIPT_ROOM: usize = 256;

/// A conservative token estimate for the summarizer's input: the pass counter's count,
/// but never less than one token per three UTF-8 bytes (tokenizers differ; overflowing
/// the summarizer's window is the one failure this phase must never cause). Bytes, not
/// chars: for ASCII they are the same, but a CJK character is one token or more under
/// real tokenizers, and the heuristic counter's chars/4 would let a request of Chinese
/// text overflow the room threefold.
fn estimate(counter: &dyn TokenCounter, text: &str) -> usize {
    counter.count_text(text).max(text.len().div_ceil(3))
}

impl Compactor {
    /// Summarizes the middle of `aged` and proves the result; `None` inside the outcome
    /// means the pass goes to the hard trim.
    pub(crate) async fn summarize_phase(&self, pass: &Pass<'_>, aged: &[Message], aged_count: usize) -> SummaryOutcome {
        let (layout, counter, options) = (pass.layout, pass.counter, pass.options);
        let Some(summarizer) = self.summarizer.as_deref() else {
            let error = SummarizerError::new(FailureKind::Unavailable, "no summarizer configured");
            return SummaryOutcome {
                accepted: None,
                attempts: vec![failed_attempt(&error)],
                usage: Usage::default(),
            };
        };
        let Some(cut) = layout.cut else {
            return SummaryOutcome {
                accepted: None,
                attempts: Vec::new(),
                usage: Usage::default(),
            };
        };
        let ceiling = ceiling(pass, aged, cut);
        let model_free = summarizer.model_free();
        let policy = self
            .ledger
            .clone()
            .or_else(|| model_free.then(crate::plan::ledger::LedgerPolicy::default));
        let mut calls = Calls {
            summarizer,
            hooks: self.hooks.as_ref(),
            sleeper: self.sleeper.as_ref(),
            cancel: &options.cancel,
            pass: &options.pass,
            seed: conversation_digest(aged),
            max_attempts: self.config.max_attempts,
            failures: 0,
            retry_after: None,
            attempts: Vec::new(),
            usage: Usage::default(),
            gate: policy.as_ref().map(|p| p.grounding.clone()),
        };
        let accepted = if model_free {
            None
        } else {
            self.summarize_inner(&mut calls, summarizer, pass, (aged, aged_count), cut, ceiling)
                .await
                .ok()
                .flatten()
        };
        let mut outcome = SummaryOutcome {
            accepted,
            attempts: calls.attempts,
            usage: calls.usage,
        };
        if let Some(policy) = &policy {
            let config = &self.config;
            let fit = Fit {
                aged,
                layout,
                aged_count,
                counter,
                aims: [
                    options.target.unwrap_or(config.target()),
                    options.target.unwrap_or(config.trigger()),
                    ceiling,
                ],
                limit: ceiling,
            };
            self.apply_ledger(policy, &mut outcome, &fit, model_free, options.cancel.is_cancelled());
        }
        outcome
    }

    /// The summary of `aged` (the pass's input, aged, counting `aged_count`) through
    /// `cut`, proved to shrink it; `None` when no summary was good enough.
    async fn summarize_inner(
        &self,
        calls: &mut Calls<'_>,
        summarizer: &dyn Summarizer,
        pass: &Pass<'_>,
        (aged, aged_count): (&[Message], usize),
        cut: usize,
        ceiling: usize,
    ) -> Result<Option<Accepted>, GiveUp> {
        let (layout, counter, options) = (pass.layout, pass.counter, pass.options);
        let focus = options.focus.as_deref();
        let system = self.prompts.system(None, focus);
        let estimator = |text: &str| estimate(counter.as_ref(), text);
        let units = render_units(aged, &layout.middle, self.config.tool_result_cap);
        let room = match summarizer.input_room_in(&options.pass) {
            None => usize::MAX,
            Some(room) => {
                let instruction = estimator(&self.prompts.system(Some(usize::MAX), focus))
                    + estimator(&self.prompts.truncated_note(u32::MAX))
                    + estimator(&self.prompts.user_turn(""));
                let room = room.saturating_sub(instruction + ROOM_MARGIN);
                if room < MIN_TRANSCRIPT_ROOM {
                    let error = SummarizerError::new(
                        FailureKind::ContextLengthExceeded { status: None },
                        "the instruction leaves no room for a transcript in the summarizer's input",
                    );
                    calls.record_failure(AttemptKind::Summary, std::time::Duration::ZERO, &error);
                    return Ok(None);
                }
                room
            }
        };
        let mut max_output_tokens = self.config.summary_max_tokens;
        let mut expanded = false;
        let mut carry: Option<String> = None;
        let mut start = 0;
        let (transcript, first) = loop {
            let (transcript, next) = if room == usize::MAX {
                (units[start..].join("\n"), units.len())
            } else {
                let carried = carry.as_deref().map(|s| (self.prompts.carry.as_str(), s));
                next_chunk(&units, start, carried, room, &estimator)
            };
            let last = next >= units.len();
            let kind = if last { AttemptKind::Summary } else { AttemptKind::Chunk };
            let request = SummaryRequest {
                system: system.clone(),
                transcript: self.prompts.user_turn(&transcript),
                max_output_tokens,
                prefill: self.prompts.prefill.clone(),
            };
            let (index, reply) = self
                .request(calls, kind, request.clone(), &mut max_output_tokens, &mut expanded)
                .await?;
            if last {
                break (request.transcript, (index, reply));
            }
            calls.mark(
                index,
                AttemptOutcome::Carried,
                Some("summary of an earlier chunk, carried into the next".into()),
            );
            carry = Some(reply.text.trim().to_owned());
            start = next;
        };
        let (target, limit) = (options.target, ceiling);
        let prove = |text: &str| {
            let content = plan::summary_content(text.trim());
            let (messages, dropped) = plan::assemble(aged, cut, &content);
            let tokens = counter.count_messages(&messages);
            let valid = plan::validate(aged, &messages, layout.recent_start);
            (
                Accepted {
                    content,
                    messages,
                    dropped,
                    tokens,
                },
                valid,
            )
        };
        // Under the limit too: a summary that leaves the conversation over the budget
        // would be `exhausted`, where the ledger or the trim may fit.
        let fits = |tokens: usize| tokens < aged_count && tokens <= limit;
        let (index, reply) = first;
        let (candidate, valid) = prove(&reply.text);
        if let Err(violation) = &valid {
            calls.mark(
                index,
                AttemptOutcome::Rejected,
                Some(format!("invalid result: {violation}")),
            );
            return Ok(None);
        }
        if fits(candidate.tokens) {
            calls.mark(index, AttemptOutcome::Accepted, None);
            return Ok(Some(candidate));
        }
        calls.mark(
            index,
            AttemptOutcome::Rejected,
            Some(not_enough(candidate.tokens, aged_count, limit, target.is_some())),
        );
        // The single tighten retry, over the same transcript.
        let limit = transcript.chars().count() / 4;
        let request = SummaryRequest {
            system: self.prompts.system(Some(limit), focus),
            transcript,
            max_output_tokens,
            prefill: self.prompts.prefill.clone(),
        };
        let (index, reply) = self
            .request(
                calls,
                AttemptKind::Tighten,
                request,
                &mut max_output_tokens,
                &mut expanded,
            )
            .await?;
        let (tightened, _) = prove(&reply.text);
        if fits(tightened.tokens) && tightened.tokens < candidate.tokens {
            calls.mark(index, AttemptOutcome::Accepted, None);
            return Ok(Some(tightened));
        }
        let note = if tightened.tokens >= candidate.tokens {
            format!(
                "not shorter than the first attempt ({} >= {} tokens)",
                tightened.tokens, candidate.tokens
            )
        } else {
            not_enough(tightened.tokens, aged_count, limit, target.is_some())
        };
        calls.mark(index, AttemptOutcome::Rejected, Some(note));
        Ok(None)
    }

    /// One request; a truncated reply gets one retry (per pass) with a doubled output
    /// budget, which later requests of the pass keep. An explicit cap is never raised
    /// (`expand_truncated` off, or the backend's own cap reached): the retry then asks
    /// for a shorter summary at the same budget. A reply still truncated after that is
    /// used, but marked: [`TRUNCATED_MARKER`] at its end, a note on its attempt and a
    /// [`super::CompactionEvent::SummaryTruncated`] event.
    async fn request(
        &self,
        calls: &mut Calls<'_>,
        kind: AttemptKind,
        mut request: SummaryRequest,
        max_output_tokens: &mut u32,
        expanded: &mut bool,
    ) -> Result<(usize, SummaryReply), GiveUp> {
        let (mut index, mut reply) = calls.call(kind, &request).await?;
        if reply.stop == StopReason::Truncated && !*expanded {
            *expanded = true;
            let current = *max_output_tokens;
            let ceiling = if self.config.expand_truncated {
                calls.summarizer.max_output_tokens().unwrap_or(u32::MAX).max(current)
            } else {
                current
            };
            let raised = current.saturating_mul(2).min(ceiling);
            let note = if raised > current {
                *max_output_tokens = raised;
                request.max_output_tokens = raised;
                format!("truncated: retrying with a doubled output budget of {raised} tokens")
            } else {
                request.system.push_str("\n\n");
                request.system.push_str(&self.prompts.truncated_note(current));
                format!("truncated: retrying at the output cap of {current} tokens, asking for a shorter summary")
            };
            calls.mark(index, AttemptOutcome::Rejected, Some(note));
            (index, reply) = calls.call(AttemptKind::Expand, &request).await?;
        }
        if reply.stop == StopReason::Truncated {
            tracing::warn!(
                attempt = index,
                max_output_tokens = *max_output_tokens,
                "summary still truncated"
            );
            reply.text = format!("{}\n{TRUNCATED_MARKER}", reply.text.trim_end());
            calls.note_truncated(index, *max_output_tokens);
            self.emit(super::CompactionEvent::SummaryTruncated {
                attempt: index,
                max_output_tokens: *max_output_tokens,
            });
        }
        Ok((index, reply))
    }
}

/// Over this a summary is not taken: the pass's limit (a result over it would be
/// `exhausted`, where a smaller summary or the trim may fit), unless even the whole
/// middle dropped leaves the conversation over it. Then the pass is `exhausted` whatever
/// it does, and a summary that shrinks the conversation keeps more than the trim would
/// (the seed's rule: shrinking is enough).
fn ceiling(pass: &Pass<'_>, aged: &[Message], cut: usize) -> usize {
    let notice = plan::notice_content(pass.layout.middle.len());
    let floor = pass.counter.count_messages(&plan::assemble(aged, cut, &notice).0);
    if floor > pass.limit { usize::MAX } else { pass.limit }
}

/// Appended to a summary that was still truncated after the doubled-budget retry, so
/// the model (and whoever reads the transcript) sees that it stops short.
pub const TRUNCATED_MARKER: &str = "[summary truncated]";

fn not_enough(tokens: usize, aged_count: usize, limit: usize, target: bool) -> String {
    let what = if target { "target" } else { "context budget" };
    if tokens < aged_count {
        format!("{tokens} tokens is above the {what} of {limit}")
    } else {
        format!("did not shrink the conversation ({tokens} >= {aged_count} tokens)")
    }
}

fn failed_attempt(error: &SummarizerError) -> Attempt {
    Attempt {
        kind: AttemptKind::Summary,
        outcome: AttemptOutcome::Failed,
        class: Some(error.class()),
        status: error.kind.status(),
        wait_ms: 0,
        usage: error.usage,
        note: Some(format!("{:?}: {}", error.kind, error.message)),
    }
}
