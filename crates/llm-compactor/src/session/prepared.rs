//! Prepared compaction in the [`ContextManager`](super::ContextManager): the pass runs
//! off the request path, over a frozen snapshot, and is installed at the trigger only
//! while still true.
//!
//! A summary takes seconds; an agent's request should not wait for one. So when a
//! request crosses the *prepare* threshold (a share of the budget below the trigger), the
//! manager copies the conversation and runs the pass of that copy on a tokio task, while
//! requests keep going out unchanged. When a request reaches the trigger, the finished
//! pass is checked against what happened since (the pure core,
//! [`crate::plan::prepared`]) and installed (with its ledger amended, topped up within
//! the new messages) or discarded with its reasons. Only a request over the hard limit
//! (the backend's usable room, else the budget) ever waits: for the running pass,
//! bounded by [`PrepareOptions::max_wait`], and then inline as before. A request
//! between the trigger and the hard limit goes out as it is while the pass runs.
//!
//! One pass per session. It is cancelled when the manager changes the history itself
//! (an inline pass), when its snapshot no longer is a prefix of the conversation, and
//! when the manager is shut down or dropped; the task writes nothing, so a cancelled
//! pass leaves nothing half-written. Every install, amendment and discard is a
//! [`ContextEvent`] and a `prepared-compaction` line of the transcript (replay skips it).
//!
//! The background pass itself (running or ready, start, abort, bounded wait, the pure
//! core's step loop, the pace) is the library's one [`Preparer`], which the proxy's
//! sessions use too; this file is what the manager adds to it: its options, its
//! transcript (the snapshot's prefix check, the install and its line) and its
//! [`ContextEvent`]s. The manager holds a [`Preparation`] and lends it what a step needs
//! (a [`Host`]: compactor, transcript, counter, observer), so that this file depends on
//! the manager's words (`context.rs`), not on the manager.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::context::{ContextEvent, ContextObserver, ManagerError, PassReport, RequestShape};
use super::log::Session;
use crate::compactor::{
    CompactOptions, CompactionReason, Compactor, Judgment, PrepareDecision, PrepareRequest, PreparedPass, Preparer,
    PreparerEvent,
};
use crate::count::TokenCounter;
use crate::plan::prepared::{Snapshot, StartRule};

/// The transcript line type of a prepared pass's fate (install, amendment, discard).
pub const TYPE_PREPARED: &str = "prepared-compaction";

/// The default prepare threshold, as a share of the budget: 0.65, half a tenth of the
/// budget below the default trigger (0.7). Chosen with `compactor simulate` on the 61
/// mini-swe-agent runs (`docs/prepared-compaction.md`): against inline passes, preparing
/// at 0.5 cost 11.8% more at a 32k window, 0.6 3.9%, 0.65 1.8%, 0.7 2.5% (with a higher
/// peak context); a lower threshold summarizes an older middle and keeps more after the
/// install. Rounds add a median of 140 tokens (p90 624), so at 32k the 1,600 tokens
/// before the trigger are a dozen rounds, and a request waits only past the hard limit,
/// 0.3 of the budget further.
pub const DEFAULT_PREPARE_RATIO: f64 = 0.65;

/// How the manager prepares passes ahead of the trigger.
///
/// When a pass starts is decided from the session's pace ([`crate::plan::prepared::start_at`]):
/// early enough that a summary of the observed (or assumed) length is ready before the
/// request that needs it, given the observed growth and time between requests, and no
/// earlier (a session that ends below the trigger then pays for no summary); never
/// later than `ceiling`, never earlier than `floor`; at `ratio` before the pace is known.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrepareOptions {
    /// Start a prepared pass when the request reaches this share of the compactor's
    /// budget before the session's pace is known (two requests seen). Default
    /// [`DEFAULT_PREPARE_RATIO`].
    pub ratio: f64,
    /// Never start a pass before the request reaches this share of the budget.
    /// Default 0.35.
    pub floor: f64,
    /// Once the pace is known, start a pass at the latest at this share of the budget.
    /// Default 1.0 (a request over the trigger starts one anyway).
    pub ceiling: f64,
    /// How long a summary is assumed to take before one has been timed. Default 10 s.
    pub assumed_summary: Duration,
    /// How long a request over the hard limit waits for a running prepared pass before
    /// the pass runs inline. Default 30 s.
    pub max_wait: Duration,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        let rule = StartRule::new(DEFAULT_PREPARE_RATIO);
        PrepareOptions {
            ratio: rule.ratio,
            floor: rule.floor,
            ceiling: rule.ceiling,
            assumed_summary: Duration::from_secs_f64(rule.assumed_summary_secs),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl PrepareOptions {
    /// Options that start every pass at `ratio` of the budget, whatever the pace (the
    /// floor and the ceiling are the ratio): for a test or a replay that wants the
    /// threshold fixed.
    pub fn fixed(ratio: f64) -> Self {
        PrepareOptions {
            ratio,
            floor: ratio,
            ceiling: ratio,
            ..PrepareOptions::default()
        }
    }

    /// The pure rule these options describe.
    pub fn start_rule(&self) -> StartRule {
        StartRule {
            ratio: self.ratio,
            floor: self.floor.min(self.ratio),
            ceiling: self.ceiling,
            assumed_summary_secs: self.assumed_summary.as_secs_f64(),
            ..StartRule::new(self.ratio)
        }
    }
}

/// The one prepared pass of a session ([`Preparer`]), under the manager's options.
pub(super) struct Preparation {
    options: PrepareOptions,
    preparer: Preparer,
}

impl Preparation {
    pub(super) fn new(options: PrepareOptions) -> Self {
        Preparation {
            options,
            preparer: Preparer::new(),
        }
    }

    /// The request that just went out has `tokens` tokens (after any pass): the next
    /// request's growth counts from it.
    pub(super) fn sent(&mut self, tokens: usize) {
        self.preparer.sent(tokens);
    }

    /// A pass that summarized took `took` (an inline one; prepared ones time themselves).
    pub(super) fn timed_summary(&mut self, took: Duration) {
        self.preparer.timed_summary(took);
    }

    pub(super) fn busy(&self) -> bool {
        self.preparer.busy()
    }
}

/// What a preparation borrows from the [`ContextManager`](super::ContextManager) that
/// holds it, for one step: the compactor, the transcript, the counter and the observer.
pub(super) struct Host<'a> {
    pub(super) compactor: &'a Arc<Compactor>,
    pub(super) session: &'a mut Session,
    /// The compactor's counter, which a request's counter is built over.
    pub(super) counter: &'a Arc<dyn TokenCounter>,
    pub(super) observer: Option<&'a ContextObserver>,
    /// The manager's stale thinking blocks (`plan::binding::stale_thinking`), carried
    /// through an install.
    pub(super) stale_thinking: &'a mut Vec<String>,
}

impl Host<'_> {
    fn emit(&self, event: ContextEvent) {
        if let Some(observer) = self.observer {
            observer(&event);
        }
    }

    /// The preparer's events, in the manager's words.
    fn hear(&self, event: PreparerEvent) {
        match event {
            PreparerEvent::Cancelled { why } => self.emit(ContextEvent::PreparationCancelled { why }),
            PreparerEvent::Unusable { why } => self.emit(ContextEvent::PreparedDiscarded { reasons: vec![why] }),
            // The manager's pass runs unwrapped: never declined.
            _ => {}
        }
    }
}

/// What the manager does with a request, given its preparation.
pub(super) enum Step {
    /// A prepared pass was installed.
    Installed(Box<PassReport>),
    /// Send the conversation as it is (a pass is being prepared).
    AsIs,
    /// Run the pass inline, as without preparation.
    Inline,
}

impl Preparation {
    /// Drops the prepared pass (running or ready) because of `why`, telling the observer.
    pub(super) fn cancel(&mut self, host: &Host<'_>, why: &str) {
        self.preparer.cancel(why, &|e| host.hear(e));
    }

    /// Cancels the running pass and waits until its task has stopped, then drops the
    /// pass (see [`ContextManager::shutdown`](super::ContextManager::shutdown)).
    pub(super) async fn shutdown(&mut self, host: &Host<'_>) {
        self.preparer.shutdown(&|e| host.hear(e)).await;
    }

    /// Waits (unbounded) until the running pass is done and ready to be checked.
    pub(super) async fn settle(&mut self, host: &Host<'_>) {
        self.preparer.settle(&|e| host.hear(e)).await;
    }

    /// The preparation's step for a request of `tokens` tokens, `summary_due` when it is
    /// over the trigger (or the room) and `needed` when any pass is asked for.
    pub(super) async fn step(
        &mut self,
        host: &mut Host<'_>,
        request: RequestShape<'_>,
        tokens: usize,
        hard: usize,
        needed: bool,
    ) -> Result<Step, ManagerError> {
        // A running pass whose snapshot is no longer a prefix of the conversation
        // cannot be installed: cancelled before anything else.
        if let Some(snapshot) = self.preparer.running_snapshot()
            && host.session.conversation().prefix_digest(snapshot.len).as_deref() != Some(snapshot.digest.as_str())
        {
            self.cancel(host, "its snapshot is no longer a prefix of the conversation");
        }
        self.preparer.collect(&|e| host.hear(e)).await;
        let config = host.compactor.config();
        let (trigger, budget) = (config.trigger(), config.context_budget);
        let prepare_at = self
            .preparer
            .observe_request(tokens, budget, hard, &self.options.start_rule());
        let view = PrepareRequest {
            tokens,
            trigger,
            hard,
            needed,
        };
        loop {
            let decision = self
                .preparer
                .next(&view, prepare_at, self.options.max_wait, &|e| host.hear(e))
                .await;
            match decision {
                PrepareDecision::Inline => return Ok(Step::Inline),
                PrepareDecision::AsIs { start } => {
                    if start {
                        self.start(host, request, tokens);
                    }
                    return Ok(Step::AsIs);
                }
                PrepareDecision::Install(prepared) => {
                    // The hard limit, for a request under it too: a pass that leaves the
                    // conversation over the trigger is still a pass done (the next starts at
                    // once); discarding it would throw its summary away and let the session
                    // reach the hard limit, where a request waits.
                    if let Some(report) = Self::install(host, request, &prepared, hard)? {
                        return Ok(Step::Installed(Box::new(report)));
                    }
                }
            }
        }
    }

    /// Starts the pass of a copy of the conversation on a tokio task.
    fn start(&mut self, host: &Host<'_>, request: RequestShape<'_>, tokens: usize) {
        let messages = host.session.messages().to_vec();
        let len = messages.len();
        let Some(digest) = host.session.conversation().prefix_digest(len) else {
            return;
        };
        // The request's pass context goes with the task (the agent's request, for a
        // summary that reads its cache).
        let options = CompactOptions::new()
            .with_counter(request.counter(host.counter))
            .with_cancel(CancellationToken::new())
            .with_ahead_of_trigger(true)
            .with_pass(request.pass_context());
        let snapshot = Snapshot { len, digest };
        let compactor = Arc::clone(host.compactor);
        self.preparer
            .start(compactor, messages, Some(snapshot), options, |pass| async move {
                Some(pass.await)
            });
        host.emit(ContextEvent::PreparationStarted { tokens, messages: len });
    }

    /// Checks `prepared` against the conversation and installs it when it may be,
    /// writing its fate to the transcript; `None` when it was not installed.
    fn install(
        host: &mut Host<'_>,
        request: RequestShape<'_>,
        prepared: &PreparedPass,
        ceiling: usize,
    ) -> Result<Option<PassReport>, ManagerError> {
        let current = host.session.messages();
        let digest = host.session.conversation().prefix_digest(prepared.snapshot.len);
        let counter = request.counter(host.counter);
        let judgment = prepared.judge(
            current,
            digest.as_deref(),
            host.compactor,
            counter.as_ref(),
            Some(ceiling),
        );
        host.session
            .append_custom(TYPE_PREPARED, judgment.line(prepared.snapshot.len))?;
        let (result, since, changes, top_up) = match judgment {
            Judgment::Install {
                result,
                since,
                changes,
                top_up,
            } => (result, since, changes, top_up),
            Judgment::Discard { reasons } => {
                host.emit(ContextEvent::PreparedDiscarded { reasons });
                return Ok(None);
            }
        };
        let stale =
            crate::plan::binding::stale_thinking(host.session.messages(), &result.messages, host.stale_thinking, None);
        let recorded = host.session.record_result(&result)?;
        if !stale.is_empty() {
            host.session.append_custom(
                super::stale_line::TYPE_STALE_THINKING,
                super::stale_line::stale_thinking_line(&stale, "caller"),
            )?;
        }
        *host.stale_thinking = stale;
        host.emit(ContextEvent::PreparedInstalled {
            since,
            changes,
            top_up,
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
        });
        Ok(Some(PassReport {
            reason: CompactionReason::Prepared,
            recorded,
            result: *result,
        }))
    }
}
