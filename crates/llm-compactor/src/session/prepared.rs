//! Prepared compaction in the [`ContextManager`]: the pass runs off the request path,
//! over a frozen snapshot, and is installed at the trigger only while still true.
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

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::manager::{CompactionReason, ContextEvent, ContextManager, ManagerError, PassReport, RequestShape};
use crate::compactor::{CompactError, CompactOptions, PreparedPass};
use crate::plan::prepared::{self, InstallPlan, PrepareStep, PrepareView, Snapshot, Verdict};

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
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrepareOptions {
    /// Start a prepared pass when the request reaches this share of the compactor's
    /// budget. Default [`DEFAULT_PREPARE_RATIO`].
    pub ratio: f64,
    /// How long a request over the hard limit waits for a running prepared pass before
    /// the pass runs inline. Default 30 s.
    pub max_wait: Duration,
}

impl Default for PrepareOptions {
    fn default() -> Self {
        PrepareOptions {
            ratio: DEFAULT_PREPARE_RATIO,
            max_wait: Duration::from_secs(30),
        }
    }
}

/// The one prepared pass of a session.
#[derive(Default)]
pub(super) struct Preparation {
    pub(super) options: PrepareOptions,
    running: Option<Running>,
    ready: Option<PreparedPass>,
}

struct Running {
    snapshot: Snapshot,
    cancel: CancellationToken,
    handle: JoinHandle<Result<PreparedPass, CompactError>>,
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
        }
    }

    fn busy(&self) -> bool {
        self.running.is_some() || self.ready.is_some()
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

impl ContextManager {
    /// Drops the prepared pass (running or ready) because of `why`, telling the observer.
    pub(super) fn cancel_preparation(&mut self, why: &str) {
        let Some(preparation) = self.preparation.as_mut() else {
            return;
        };
        let had = preparation.busy();
        preparation.running = None;
        preparation.ready = None;
        if had {
            self.emit(ContextEvent::PreparationCancelled { why: why.to_owned() });
        }
    }

    /// Cancels the running prepared pass and waits until its task has stopped (it writes
    /// nothing, so nothing is half-written): call before the process exits.
    pub async fn shutdown(&mut self) {
        if let Some(mut running) = self.preparation.as_mut().and_then(|p| p.running.take()) {
            running.cancel.cancel();
            let _ = (&mut running.handle).await;
        }
        self.cancel_preparation("shutdown");
    }

    /// Waits (unbounded) until the running prepared pass is done and ready to be
    /// checked at the next request; returns at once when none runs. For callers that
    /// want a deterministic run (tests, replays, the simulator); an agent loop never
    /// needs it.
    pub async fn settle_preparation(&mut self) {
        let Some(mut running) = self.preparation.as_mut().and_then(|p| p.running.take()) else {
            return;
        };
        let outcome = (&mut running.handle).await;
        self.accept(outcome);
    }

    /// True while a prepared pass runs or waits to be installed.
    pub fn preparing(&self) -> bool {
        self.preparation.as_ref().is_some_and(Preparation::busy)
    }

    /// The preparation's step for a request of `tokens` tokens, `summary_due` when it is
    /// over the trigger (or the room) and `needed` when any pass is asked for.
    pub(super) async fn prepared_step(
        &mut self,
        request: RequestShape<'_>,
        tokens: usize,
        hard: usize,
        needed: bool,
    ) -> Result<Step, ManagerError> {
        self.collect_finished().await;
        let Some(preparation) = self.preparation.as_ref() else {
            return Ok(if needed { Step::Inline } else { Step::AsIs });
        };
        let config = self.compactor.config();
        let (trigger, budget) = (config.trigger(), config.context_budget);
        let prepare_at = prepared::prepare_at(budget, preparation.options.ratio);
        loop {
            let (running, ready) = self
                .preparation
                .as_ref()
                .map_or((false, false), |p| (p.running.is_some(), p.ready.is_some()));
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
                        self.start_preparation(request, tokens);
                    }
                    return Ok(Step::AsIs);
                }
                PrepareStep::Wait => self.wait_for_preparation().await,
                PrepareStep::Install => {
                    let Some(prepared) = self.preparation.as_mut().and_then(|p| p.ready.take()) else {
                        continue;
                    };
                    let ceiling = if tokens > hard { hard } else { trigger };
                    if let Some(report) = self.install(request, &prepared, ceiling)? {
                        return Ok(Step::Installed(Box::new(report)));
                    }
                }
            }
        }
    }

    /// Moves a finished pass to `ready`, and cancels a running one whose snapshot is no
    /// longer a prefix of the conversation.
    async fn collect_finished(&mut self) {
        let Some(running) = self.preparation.as_ref().and_then(|p| p.running.as_ref()) else {
            return;
        };
        let (len, finished) = (running.snapshot.len, running.handle.is_finished());
        if self.conversation().prefix_digest(len).as_deref() != Some(running.snapshot.digest.as_str()) {
            self.cancel_preparation("its snapshot is no longer a prefix of the conversation");
            return;
        }
        if finished && let Some(mut running) = self.preparation.as_mut().and_then(|p| p.running.take()) {
            let outcome = (&mut running.handle).await;
            self.accept(outcome);
        }
    }

    fn accept(&mut self, outcome: Result<Result<PreparedPass, CompactError>, tokio::task::JoinError>) {
        let why = match outcome {
            Ok(Ok(prepared)) if !prepared.is_noop() => {
                if let Some(p) = self.preparation.as_mut() {
                    p.ready = Some(prepared);
                }
                return;
            }
            Ok(Ok(_)) => "the prepared pass changed nothing".to_owned(),
            Ok(Err(error)) => format!("the prepared pass failed: {error}"),
            Err(error) => format!("the prepared pass's task ended: {error}"),
        };
        self.emit(ContextEvent::PreparedDiscarded { reasons: vec![why] });
    }

    /// Waits for the running pass at most `max_wait`; past it, cancels the pass.
    async fn wait_for_preparation(&mut self) {
        let Some(preparation) = self.preparation.as_mut() else {
            return;
        };
        let wait = preparation.options.max_wait;
        let Some(mut running) = preparation.running.take() else {
            return;
        };
        match tokio::time::timeout(wait, &mut running.handle).await {
            Ok(outcome) => self.accept(outcome),
            Err(_) => {
                drop(running);
                self.emit(ContextEvent::PreparationCancelled {
                    why: "the request is over the hard limit and the prepared pass is not done".into(),
                });
            }
        }
    }

    /// Starts the pass of a copy of the conversation on a tokio task.
    fn start_preparation(&mut self, request: RequestShape<'_>, tokens: usize) {
        let messages = self.session.messages().to_vec();
        let len = messages.len();
        let Some(digest) = self.conversation().prefix_digest(len) else {
            return;
        };
        let snapshot = Snapshot { len, digest };
        let cancel = CancellationToken::new();
        let options = CompactOptions {
            counter: Some(self.request_counter(request)),
            cancel: cancel.clone(),
            ahead_of_trigger: true,
            ..CompactOptions::default()
        };
        let compactor = Arc::clone(&self.compactor);
        let task_snapshot = snapshot.clone();
        // A summary request that reads the agent's cache needs the agent's request in the
        // task that summarizes (task-locals do not cross a spawn).
        #[cfg(feature = "http")]
        let agent = crate::backend::http::current_agent_request();
        let handle = tokio::spawn(async move {
            let pass = compactor.compact(&messages, options);
            #[cfg(feature = "http")]
            let pass = crate::backend::http::with_agent_request(agent, pass);
            let result = pass.await?;
            Ok(PreparedPass {
                snapshot: task_snapshot,
                result,
            })
        });
        if let Some(p) = self.preparation.as_mut() {
            p.running = Some(Running {
                snapshot,
                cancel,
                handle,
            });
        }
        self.emit(ContextEvent::PreparationStarted { tokens, messages: len });
    }

    /// Checks `prepared` against the conversation and installs it when it may be,
    /// writing its fate to the transcript; `None` when it was not installed.
    fn install(
        &mut self,
        request: RequestShape<'_>,
        prepared: &PreparedPass,
        ceiling: usize,
    ) -> Result<Option<PassReport>, ManagerError> {
        let current = self.session.messages();
        let digest = self.conversation().prefix_digest(prepared.snapshot.len);
        let check = prepared.check(current, digest.as_deref(), &self.compactor);
        let counter = self.request_counter(request);
        let plan = prepared.plan(current, &check, &self.compactor, counter.as_ref(), Some(ceiling));
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
                self.session.append_custom(
                    TYPE_PREPARED,
                    json!({"fate": "discarded", "snapshot_messages": prepared.snapshot.len, "reasons": reasons}),
                )?;
                self.emit(ContextEvent::PreparedDiscarded { reasons });
                return Ok(None);
            }
        };
        let changes: Vec<String> = match &check.verdict {
            Verdict::Amend { changes } => changes.iter().map(|c| c.describe()).collect(),
            _ => Vec::new(),
        };
        let top_up = installed.top_up.len();
        let result = prepared.installed_result(current, *installed, &self.compactor, counter.as_ref());
        let fate = if changes.is_empty() { "installed" } else { "amended" };
        self.session.append_custom(
            TYPE_PREPARED,
            json!({"fate": fate, "snapshot_messages": prepared.snapshot.len, "since": check.since,
                   "changes": changes, "top_up": top_up}),
        )?;
        let recorded = self.session.record_result(&result)?;
        self.emit(ContextEvent::PreparedInstalled {
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
