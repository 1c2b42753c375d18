//! [`ContextManager`]: the agent-loop glue between the counter, the compactor and the
//! session transcript.
//!
//! An agent loop asks two things of it. Before each request: "what do I send?" — the
//! manager counts the conversation together with the request's tool declarations and
//! runtime context, runs a compaction pass when the compactor says so (or when the
//! request would not fit the backend's usable room), writes the pass to the transcript
//! and hands back the conversation. After each response: "remember this" — it feeds the
//! billed usage to the calibrating counter and appends the new messages. When the
//! provider rejects a request as too long anyway, it forces a pass aimed below what was
//! sent, a bounded number of times per run.
//!
//! The order of effects is the point: the transcript is written before anything is
//! reported, so even a run that ends in [`ManagerError::ContextExhausted`] leaves a
//! session that replays to its last conversation.

use std::sync::Arc;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::context::{ContextEvent, ContextObserver, ManagerError, PassReport, RequestShape};
use super::log::Session;
use super::prepared::{Host, Preparation, PrepareOptions, Step};
use super::stale_line::{TYPE_STALE_THINKING, stale_thinking_line};
use crate::compactor::{CompactOptions, CompactionReason, Compactor, RequestFit};
use crate::conversation::Conversation;
use crate::count::{CalibratedCounter, TokenCounter};
use crate::message::Message;
use crate::plan::binding::stale_thinking;
use crate::usage::Usage;

/// What a backend can take: its window, less the answer's reserve and a safety margin.
/// The request's own tool declarations and runtime context are subtracted per request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BackendRoom {
    /// The model's context window in tokens.
    pub window: usize,
    /// Tokens reserved for the completion (the request's max output tokens).
    pub completion_reserve: usize,
    /// Tokens kept free for counting error.
    pub safety_margin: usize,
}

impl BackendRoom {
    /// The room left for the conversation when the request also carries `overhead` tokens
    /// of tool declarations and runtime context.
    ///
    /// ```
    /// use llm_compactor::session::BackendRoom;
    /// let room = BackendRoom { window: 128_000, completion_reserve: 8_000, safety_margin: 2_000 };
    /// assert_eq!(room.usable(1_500), 116_500);
    /// ```
    pub fn usable(&self, overhead: usize) -> usize {
        self.window
            .saturating_sub(self.completion_reserve)
            .saturating_sub(self.safety_margin)
            .saturating_sub(overhead)
    }
}

/// Feeds what a provider billed back into a counter that calibrates on it.
pub trait UsageRecorder: Send + Sync {
    /// `sent` is the conversation the billed request carried, `usage` what it was billed
    /// (`None` when the response carried no usage), `model` the model that answered.
    fn record_usage(&self, sent: &[Message], usage: Option<&Usage>, model: &str);

    /// [`UsageRecorder::record_usage`] of a [`Conversation`] (what the manager keeps):
    /// the default reads its messages; the calibrated counter extends its record by the
    /// new messages only.
    fn record_conversation_usage(&self, sent: &Conversation, usage: Option<&Usage>, model: &str) {
        self.record_usage(sent.messages(), usage, model);
    }
}

/// The calibrated counter is the recorder an agent loop wants: pass the same `Arc` as the
/// compactor's counter and as the manager's recorder.
impl UsageRecorder for CalibratedCounter {
    fn record_usage(&self, sent: &[Message], usage: Option<&Usage>, model: &str) {
        self.record_optional_usage(sent, model, usage);
    }

    fn record_conversation_usage(&self, sent: &Conversation, usage: Option<&Usage>, model: &str) {
        CalibratedCounter::record_conversation_usage(self, sent, model, usage);
    }
}

/// The conversation to send, and what was done to it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Prepared {
    /// The conversation, every message with its transcript id.
    pub messages: Vec<Message>,
    /// Tokens of the whole request (conversation, tools, context) after any pass.
    pub request_tokens: usize,
    /// The pass that ran, if one did.
    pub pass: Option<PassReport>,
    /// Signed thinking blocks the conversation carries on a prefix they were not produced
    /// under (kept turns after a summary or a stub): a model with preserved thinking
    /// refuses them, so send such a request asking for them to be dropped
    /// (`plan::binding::with_drop_block` and `with_binding_beta` on the body and the
    /// `anthropic-beta` header). 0 when there is none.
    pub stale_thinking: usize,
}

/// [`Prepared`], borrowing the conversation from the manager instead of copying it: what
/// [`ContextManager::prepare_borrowed`] gives, so that a round costs no copy of a
/// conversation that may hold a million tokens.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PreparedRef<'a> {
    /// The conversation, every message with its transcript id.
    pub messages: &'a [Message],
    /// Tokens of the whole request (conversation, tools, context) after any pass.
    pub request_tokens: usize,
    /// The pass that ran, if one did.
    pub pass: Option<PassReport>,
    /// As [`Prepared::stale_thinking`].
    pub stale_thinking: usize,
}

impl PreparedRef<'_> {
    /// The owned [`Prepared`] (copies the conversation).
    pub fn into_owned(self) -> Prepared {
        Prepared {
            messages: self.messages.to_vec(),
            request_tokens: self.request_tokens,
            pass: self.pass,
            stale_thinking: self.stale_thinking,
        }
    }
}

/// The glue an agent loop calls around each model request.
///
/// The manager counts the transcript's own conversation as a [`Conversation`] (each
/// message counted once as it is appended, prefix digests chained) and hands out borrows
/// of it, so that a round where no pass runs costs the round's new messages, not the
/// conversation. Each message has one owner, the transcript's replay: the manager keeps
/// no copy to keep in step.
pub struct ContextManager {
    compactor: Arc<Compactor>,
    counter: Arc<dyn TokenCounter>,
    /// Counted by `counter` while the manager holds it ([`Session::count_with`]).
    session: Session,
    room: Option<BackendRoom>,
    max_forced: u32,
    forced: u32,
    recorder: Option<Arc<dyn UsageRecorder>>,
    observer: Option<ContextObserver>,
    preparation: Option<Preparation>,
    /// The signed thinking blocks passes left on a new prefix, by name
    /// (`plan::binding::stale_thinking`).
    stale_thinking: Vec<String>,
}

impl std::fmt::Debug for ContextManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextManager")
            .field("session", &self.session)
            .field("room", &self.room)
            .field("max_forced", &self.max_forced)
            .field("forced", &self.forced)
            .finish_non_exhaustive()
    }
}

/// How many forced passes a run may make by default.
pub const DEFAULT_MAX_FORCED_COMPACTIONS: u32 = 2;

impl ContextManager {
    /// Glue over this compactor (whose counter the manager counts with: the same instance
    /// the compactor proves with) and this session.
    pub fn new(compactor: Arc<Compactor>, mut session: Session) -> Self {
        let counter = compactor.counter().clone();
        session.count_with(counter.clone());
        // A pass that waits on a model is prepared off the request path by default; one
        // that cannot wait (the ledger, no summarizer) runs inline, where it costs nothing.
        let preparation = compactor
            .summarizer()
            .is_some_and(|s| !s.model_free())
            .then(|| Preparation::new(PrepareOptions::default()));
        ContextManager {
            compactor,
            counter,
            session,
            room: None,
            max_forced: DEFAULT_MAX_FORCED_COMPACTIONS,
            forced: 0,
            recorder: None,
            observer: None,
            preparation,
            stale_thinking: Vec::new(),
        }
    }

    /// Prepares passes in the background ahead of the trigger with these options (see
    /// `docs/prepared-compaction.md` and [`crate::plan::prepared`]): requests below the hard
    /// limit never wait for a summary. On by default, with [`PrepareOptions::default`],
    /// when the compactor's summarizer is a model (not [`Summarizer::model_free`]).
    ///
    /// [`Summarizer::model_free`]: crate::Summarizer::model_free
    pub fn with_preparation(mut self, options: PrepareOptions) -> Self {
        self.preparation = Some(Preparation::new(options));
        self
    }

    /// Runs every pass inline, at the request that needs it (the request then waits for
    /// the summary): the choice for a deterministic replay, or a summarizer that answers
    /// at once.
    pub fn without_preparation(mut self) -> Self {
        self.preparation = None;
        self
    }

    /// True when passes are prepared in the background.
    pub fn prepares(&self) -> bool {
        self.preparation.is_some()
    }

    /// The backend's usable room: requests (conversation, tools and context) that would
    /// not fit it are compacted before they are sent, and forced passes aim at it.
    pub fn with_room(mut self, room: BackendRoom) -> Self {
        self.room = Some(room);
        self
    }

    /// How many forced passes (after a context-length rejection) one run may make.
    pub fn with_max_forced_compactions(mut self, max: u32) -> Self {
        self.max_forced = max;
        self
    }

    /// Where billed usage goes: the calibrated counter (the same instance the compactor
    /// counts with).
    pub fn with_usage_recorder(mut self, recorder: Arc<dyn UsageRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Who hears about passes.
    pub fn with_observer(mut self, observer: ContextObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The transcript.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The transcript, consumed (closing the manager releases nothing else; the
    /// session no longer counts its messages).
    pub fn into_session(mut self) -> Session {
        self.session.stop_counting();
        self.session
    }

    /// The conversation as it stands.
    pub fn messages(&self) -> &[Message] {
        self.session.messages()
    }

    /// The conversation as it stands, with each message's cached count and the chained
    /// prefix digests.
    pub fn conversation(&self) -> &Conversation {
        self.session.conversation()
    }

    /// Starts a run: the forced-pass allowance is renewed.
    pub fn begin_run(&mut self) {
        self.forced = 0;
    }

    /// Appends a message (the user's, or the harness's) to conversation and transcript.
    ///
    /// # Errors
    /// The transcript could not be written.
    pub fn push(&mut self, message: Message) -> Result<&Message, ManagerError> {
        Ok(self.session.append_message(message)?)
    }

    fn emit(&self, event: ContextEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }

    /// The counter of one request's passes ([`RequestShape::counter`] over the
    /// compactor's counter).
    fn request_counter(&self, request: RequestShape<'_>) -> Arc<dyn TokenCounter> {
        request.counter(&self.counter)
    }

    /// The preparation, when the manager prepares, and what it borrows from the manager
    /// for one step.
    fn preparation_host(&mut self) -> Option<(&mut Preparation, Host<'_>)> {
        let preparation = self.preparation.as_mut()?;
        let host = Host {
            compactor: &self.compactor,
            session: &mut self.session,
            counter: &self.counter,
            observer: self.observer.as_ref(),
            stale_thinking: &mut self.stale_thinking,
        };
        Some((preparation, host))
    }

    /// Drops the prepared pass (running or ready) because of `why`, telling the observer.
    fn cancel_preparation(&mut self, why: &str) {
        if let Some((preparation, host)) = self.preparation_host() {
            preparation.cancel(&host, why);
        }
    }

    /// Cancels the running prepared pass and waits until its task has stopped (it writes
    /// nothing, so nothing is half-written): call before the process exits.
    pub async fn shutdown(&mut self) {
        if let Some((preparation, host)) = self.preparation_host() {
            preparation.shutdown(&host).await;
        }
    }

    /// Waits (unbounded) until the running prepared pass is done and ready to be
    /// checked at the next request; returns at once when none runs. For callers that
    /// want a deterministic run (tests, replays, the simulator); an agent loop never
    /// needs it.
    pub async fn settle_preparation(&mut self) {
        if let Some((preparation, host)) = self.preparation_host() {
            preparation.settle(&host).await;
        }
    }

    /// True while a prepared pass runs or waits to be installed.
    pub fn preparing(&self) -> bool {
        self.preparation.as_ref().is_some_and(Preparation::busy)
    }

    /// Before a request: counts it (conversation, tools and context), compacts when
    /// needed (writing the pass to the transcript), and returns the conversation to send.
    ///
    /// A pass runs when the compactor asks for one (over its trigger, or an elision epoch
    /// is due), when the whole request is over the trigger, or when it would not fit the
    /// backend's usable room; in the last case the pass aims at that room.
    ///
    /// # Errors
    /// [`ManagerError::ContextExhausted`] (after the transcript was written) when even
    /// the best pass does not fit; transcript or compactor errors.
    pub async fn prepare(
        &mut self,
        request: RequestShape<'_>,
        cancel: CancellationToken,
    ) -> Result<Prepared, ManagerError> {
        Ok(self.prepare_borrowed(request, cancel).await?.into_owned())
    }

    /// [`ContextManager::prepare`] without the copy: the conversation to send is
    /// borrowed from the manager (which keeps the one conversation), and a round where
    /// no pass runs counts the request once.
    ///
    /// # Errors
    /// As [`ContextManager::prepare`].
    pub async fn prepare_borrowed(
        &mut self,
        request: RequestShape<'_>,
        cancel: CancellationToken,
    ) -> Result<PreparedRef<'_>, ManagerError> {
        let request_tokens = self.request_tokens(request);
        let room = self.room.map(|r| r.usable(0));
        let reason = self.compactor.pass_due(&RequestFit {
            conversation: self.session.conversation(),
            request_tokens,
            room,
            counter: None,
        });
        let hard = room.unwrap_or(self.compactor.config().context_budget);
        if let Some((preparation, mut host)) = self.preparation_host() {
            match preparation
                .step(&mut host, request, request_tokens, hard, reason.is_some())
                .await?
            {
                Step::Installed(pass) => return Ok(self.sent_after_pass(request, *pass)),
                Step::AsIs => {
                    return Ok(PreparedRef {
                        messages: self.session.messages(),
                        request_tokens,
                        pass: None,
                        stale_thinking: self.stale_thinking.len(),
                    });
                }
                Step::Inline => {}
            }
        }
        let Some(reason) = reason else {
            return Ok(PreparedRef {
                messages: self.session.messages(),
                request_tokens,
                pass: None,
                stale_thinking: self.stale_thinking.len(),
            });
        };
        let target = (reason == CompactionReason::Room).then_some(room).flatten();
        let started = tokio::time::Instant::now();
        let pass = self.run_pass(reason, request_tokens, target, request, cancel).await?;
        if let Some(preparation) = self.preparation.as_mut()
            && !pass.result.summary.is_empty()
        {
            preparation.timed_summary(started.elapsed());
        }
        Ok(self.sent_after_pass(request, pass))
    }

    /// The request after `pass`, told to the preparation's pace (the next request's
    /// growth counts from what went out).
    fn sent_after_pass(&mut self, request: RequestShape<'_>, pass: PassReport) -> PreparedRef<'_> {
        let request_tokens = self.request_tokens(request);
        if let Some(preparation) = self.preparation.as_mut() {
            preparation.sent(request_tokens);
        }
        PreparedRef {
            messages: self.session.messages(),
            request_tokens,
            pass: Some(pass),
            stale_thinking: self.stale_thinking.len(),
        }
    }

    /// The whole request's tokens: the conversation, the tool declarations and the context.
    fn request_tokens(&self, request: RequestShape<'_>) -> usize {
        self.counter
            .count_conversation_request(self.conversation(), request.tools, request.context)
    }

    /// After the provider rejected a request as longer than its window: forces a pass
    /// aimed at the backend's usable room (the compactor's target without one), and at
    /// most three quarters of what our counter believes was sent (the rejection proves
    /// that belief too low), and returns the conversation to retry with.
    ///
    /// # Errors
    /// [`ManagerError::ContextExhausted`] once the run's allowance of forced passes is
    /// spent (nothing is written then), or when the pass cannot make the conversation fit
    /// (after writing it).
    pub async fn on_context_length_exceeded(
        &mut self,
        request: RequestShape<'_>,
        cancel: CancellationToken,
    ) -> Result<Prepared, ManagerError> {
        let request_tokens = self.request_tokens(request);
        let target = self
            .compactor
            .context_length_target(request_tokens, self.room.map(|r| r.usable(0)));
        if self.forced >= self.max_forced {
            return Err(ManagerError::ContextExhausted {
                tokens: request_tokens,
                limit: target,
                why: format!(
                    "the provider still rejects the request after {} forced compaction(s) this run",
                    self.forced
                ),
            });
        }
        self.forced += 1;
        let pass = self
            .run_pass(
                CompactionReason::ContextLengthExceeded,
                request_tokens,
                Some(target),
                request,
                cancel,
            )
            .await?;
        Ok(self.prepared(request, Some(pass)).into_owned())
    }

    fn prepared(&self, request: RequestShape<'_>, pass: Option<PassReport>) -> PreparedRef<'_> {
        PreparedRef {
            messages: self.session.messages(),
            request_tokens: self.request_tokens(request),
            pass,
            stale_thinking: self.stale_thinking.len(),
        }
    }

    async fn run_pass(
        &mut self,
        reason: CompactionReason,
        tokens: usize,
        target: Option<usize>,
        request: RequestShape<'_>,
        cancel: CancellationToken,
    ) -> Result<PassReport, ManagerError> {
        self.cancel_preparation("an inline pass changes the history");
        self.emit(ContextEvent::CompactionStarted { reason, tokens, target });
        let options = CompactOptions::new()
            .with_target(target)
            .with_counter(self.request_counter(request))
            .with_cancel(cancel)
            .with_pass(request.pass_context());
        let result = self.compactor.compact(self.session.messages(), options).await?;
        let stale = stale_thinking(self.session.messages(), &result.messages, &self.stale_thinking, None);
        // The conversation is the transcript's, whatever part of the pass it holds.
        let recorded = self.session.record_result(&result)?;
        if !stale.is_empty() {
            self.session
                .append_custom(TYPE_STALE_THINKING, stale_thinking_line(&stale, "caller"))?;
        }
        self.stale_thinking = stale;
        self.emit(ContextEvent::CompactionDone {
            reason,
            dropped: result.dropped,
            elided: result.elisions.len(),
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            fallback: result.fallback,
            exhausted: result.exhausted,
        });
        if result.exhausted {
            // Only now, with the transcript written, is the run told it cannot go on.
            return Err(ManagerError::ContextExhausted {
                tokens: result.tokens_after,
                limit: target.unwrap_or(self.compactor.config().context_budget),
                why: if result.fallback {
                    "the hard trim reached the recent window".to_owned()
                } else {
                    "the sticky prefix and the recent window alone are too large".to_owned()
                },
            });
        }
        Ok(PassReport {
            reason,
            recorded,
            result,
        })
    }

    /// After a response: records what the request was billed (the conversation it
    /// carried is the current one) and appends the new messages (the assistant turn, then
    /// its tool results) with one write ([`Session::append_messages`]): nothing of them
    /// is appended when one is refused.
    ///
    /// # Errors
    /// The transcript could not be written.
    pub fn record_response(
        &mut self,
        usage: Option<Usage>,
        model: &str,
        new_messages: impl IntoIterator<Item = Message>,
    ) -> Result<(), ManagerError> {
        if let Some(recorder) = &self.recorder {
            recorder.record_conversation_usage(self.session.conversation(), usage.as_ref(), model);
        }
        self.session.append_messages(new_messages)?;
        Ok(())
    }
}
