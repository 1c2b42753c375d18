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
//! The manager holds a [`Preparation`] and lends it what a step needs (a [`Host`]:
//! compactor, transcript, counter, observer), so that this file depends on the
//! manager's words (`context.rs`), not on the manager.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::context::{ContextEvent, ContextObserver, ManagerError, PassReport, RequestShape};
use super::log::Session;
use crate::compactor::{CompactError, CompactOptions, CompactionReason, Compactor, PreparedPass};
use crate::count::TokenCounter;
use crate::plan::prepared::{self, InstallPlan, Pace, PrepareStep, PrepareView, Snapshot, StartRule, Verdict};

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
/// request that needs it, given the observed growth and time between requests; never
/// later than `ratio`, never earlier than `floor`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrepareOptions {
    /// Start a prepared pass at the latest when the request reaches this share of the
    /// compactor's budget (and there before anything is observed). Default
    /// [`DEFAULT_PREPARE_RATIO`].
    pub ratio: f64,
    /// Never start a pass before the request reaches this share of the budget.
    /// Default 0.35.
    pub floor: f64,
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
            assumed_summary: Duration::from_secs_f64(rule.assumed_summary_secs),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl PrepareOptions {
    /// Options that start every pass at `ratio` of the budget, whatever the pace (the
    /// floor is the ratio): for a test or a replay that wants the threshold fixed.
    pub fn fixed(ratio: f64) -> Self {
        PrepareOptions {
            ratio,
            floor: ratio,
            ..PrepareOptions::default()
        }
    }

    /// The pure rule these options describe.
    pub fn start_rule(&self) -> StartRule {
        StartRule {
            ratio: self.ratio,
            floor: self.floor.min(self.ratio),
            assumed_summary_secs: self.assumed_summary.as_secs_f64(),
            ..StartRule::new(self.ratio)
        }
    }
}

/// The one prepared pass of a session, and the session's pace.
pub(super) struct Preparation {
    options: PrepareOptions,
    running: Option<Running>,
    ready: Option<PreparedPass>,
    pace: Pace,
    /// The origin of the pace's times (tokio's clock, so that a paused test clock works).
    origin: tokio::time::Instant,
}

/// What a prepared pass's task hands back: the pass, and how long it took.
type Timed = (Result<PreparedPass, CompactError>, Duration);

struct Running {
    snapshot: Snapshot,
    cancel: CancellationToken,
    handle: JoinHandle<Timed>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.handle.abort();
    }
}

impl Preparation {
    pub(super) fn new(options: PrepareOptions) -> Self {
        Preparation {
            options,
            running: None,
            ready: None,
            pace: Pace::new(),
            origin: tokio::time::Instant::now(),
        }
    }

    /// The request that just went out has `tokens` tokens (after any pass): the next
    /// request's growth counts from it.
    pub(super) fn sent(&mut self, tokens: usize) {
        self.pace.observe_sent(tokens);
    }

    /// A pass that summarized took `took` (an inline one; prepared ones time themselves).
    pub(super) fn timed_summary(&mut self, took: Duration) {
        self.pace.observe_summary(took.as_secs_f64());
    }

    pub(super) fn busy(&self) -> bool {
        self.running.is_some() || self.ready.is_some()
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
}

impl Host<'_> {
    fn emit(&self, event: ContextEvent) {
        if let Some(observer) = self.observer {
            observer(&event);
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
        let had = self.busy();
        self.running = None;
        self.ready = None;
        if had {
            host.emit(ContextEvent::PreparationCancelled { why: why.to_owned() });
        }
    }

    /// Cancels the running pass and waits until its task has stopped, then drops the
    /// pass (see [`ContextManager::shutdown`](super::ContextManager::shutdown)).
    pub(super) async fn shutdown(&mut self, host: &Host<'_>) {
        if let Some(mut running) = self.running.take() {
            running.cancel.cancel();
            let _ = (&mut running.handle).await;
        }
        self.cancel(host, "shutdown");
    }

    /// Waits (unbounded) until the running pass is done and ready to be checked.
    pub(super) async fn settle(&mut self, host: &Host<'_>) {
        let Some(mut running) = self.running.take() else {
            return;
        };
        let outcome = (&mut running.handle).await;
        self.accept(host, outcome);
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
        self.collect_finished(host).await;
        let config = host.compactor.config();
        let (trigger, budget) = (config.trigger(), config.context_budget);
        let now = self.origin.elapsed().as_secs_f64();
        self.pace.observe_request(tokens, now);
        let prepare_at = prepared::start_at(budget, hard, &self.options.start_rule(), &self.pace);
        loop {
            let (running, ready) = (self.running.is_some(), self.ready.is_some());
            let view = PrepareView {
                tokens,
                trigger,
                hard,
                prepare_at,
                needed,
                running,
                ready,
            };
            match prepared::next_step(&view) {
                PrepareStep::Inline => return Ok(Step::Inline),
                PrepareStep::AsIs { start } => {
                    if start {
                        self.start(host, request, tokens);
                    }
                    return Ok(Step::AsIs);
                }
                PrepareStep::Wait => self.wait(host).await,
                PrepareStep::Install => {
                    let Some(prepared) = self.ready.take() else {
                        continue;
                    };
                    // The hard limit, for a request under it too: a pass that leaves the
                    // conversation over the trigger is still a pass done (the next starts at
                    // once); discarding it would throw its summary away and let the session
                    // reach the hard limit, where a request waits.
                    let ceiling = hard;
                    if let Some(report) = Self::install(host, request, &prepared, ceiling)? {
                        return Ok(Step::Installed(Box::new(report)));
                    }
                }
            }
        }
    }

    /// Moves a finished pass to `ready`, and cancels a running one whose snapshot is no
    /// longer a prefix of the conversation.
    async fn collect_finished(&mut self, host: &Host<'_>) {
        let Some(running) = self.running.as_ref() else {
            return;
        };
        let (len, finished) = (running.snapshot.len, running.handle.is_finished());
        if host.session.conversation().prefix_digest(len).as_deref() != Some(running.snapshot.digest.as_str()) {
            self.cancel(host, "its snapshot is no longer a prefix of the conversation");
            return;
        }
        if finished && let Some(mut running) = self.running.take() {
            let outcome = (&mut running.handle).await;
            self.accept(host, outcome);
        }
    }

    fn accept(&mut self, host: &Host<'_>, outcome: Result<Timed, tokio::task::JoinError>) {
        let why = match outcome {
            Ok((Ok(prepared), took)) if !prepared.is_noop() => {
                if !prepared.result.summary.is_empty() {
                    self.pace.observe_summary(took.as_secs_f64());
                }
                self.ready = Some(prepared);
                return;
            }
            Ok((Ok(_), _)) => "the prepared pass changed nothing".to_owned(),
            Ok((Err(error), _)) => format!("the prepared pass failed: {error}"),
            Err(error) => format!("the prepared pass's task ended: {error}"),
        };
        host.emit(ContextEvent::PreparedDiscarded { reasons: vec![why] });
    }

    /// Waits for the running pass at most `max_wait`; past it, cancels the pass.
    async fn wait(&mut self, host: &Host<'_>) {
        let wait = self.options.max_wait;
        let Some(mut running) = self.running.take() else {
            return;
        };
        match tokio::time::timeout(wait, &mut running.handle).await {
            Ok(outcome) => self.accept(host, outcome),
            Err(_) => {
                drop(running);
                host.emit(ContextEvent::PreparationCancelled {
                    why: "the request is over the hard limit and the prepared pass is not done".into(),
                });
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
        let snapshot = Snapshot { len, digest };
        let cancel = CancellationToken::new();
        let options = CompactOptions {
            counter: Some(request.counter(host.counter)),
            cancel: cancel.clone(),
            ahead_of_trigger: true,
            // The request's pass context goes with the task (the agent's request, for a
            // summary that reads its cache).
            pass: request.pass_context(),
            ..CompactOptions::default()
        };
        let compactor = Arc::clone(host.compactor);
        let task_snapshot = snapshot.clone();
        let handle = tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let outcome = compactor.compact(&messages, options).await.map(|result| PreparedPass {
                snapshot: task_snapshot,
                result,
            });
            (outcome, started.elapsed())
        });
        self.running = Some(Running {
            snapshot,
            cancel,
            handle,
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
        let check = prepared.check(current, digest.as_deref(), host.compactor);
        let counter = request.counter(host.counter);
        let plan = prepared.plan(current, &check, host.compactor, counter.as_ref(), Some(ceiling));
        let installed = match plan {
            InstallPlan::Install(installed) => installed,
            other => {
                let reasons = match (&check.verdict, &other) {
                    (Verdict::Discard { reasons }, _) => reasons.iter().map(|r| r.describe()).collect(),
                    (_, InstallPlan::NeedsInline { tokens, ceiling }) => {
                        vec![format!("installed it would leave {tokens} tokens, over {ceiling}")]
                    }
                    (_, InstallPlan::Invalid { violation }) => vec![format!("invalid install: {violation}")],
                    _ => Vec::new(),
                };
                host.session.append_custom(
                    TYPE_PREPARED,
                    json!({"fate": "discarded", "snapshot_messages": prepared.snapshot.len, "reasons": reasons}),
                )?;
                host.emit(ContextEvent::PreparedDiscarded { reasons });
                return Ok(None);
            }
        };
        let changes: Vec<String> = match &check.verdict {
            Verdict::Amend { changes } => changes.iter().map(|c| c.describe()).collect(),
            _ => Vec::new(),
        };
        let top_up = installed.top_up.len();
        let result = prepared.installed_result(current, *installed, host.compactor, counter.as_ref());
        let fate = if changes.is_empty() { "installed" } else { "amended" };
        host.session.append_custom(
            TYPE_PREPARED,
            json!({"fate": fate, "snapshot_messages": prepared.snapshot.len, "since": check.since,
                   "changes": changes, "top_up": top_up}),
        )?;
        let recorded = host.session.record_result(&result)?;
        host.emit(ContextEvent::PreparedInstalled {
            since: check.since,
            changes,
            top_up,
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
        });
        Ok(Some(PassReport {
            reason: CompactionReason::Prepared,
            recorded,
            result,
        }))
    }
}
