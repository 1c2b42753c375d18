//! Prepared compaction in the proxy (issue 28): a session's pass runs in the background
//! ahead of the trigger, and is installed at the trigger only while it is still true.
//!
//! The same shape as the library's `ContextManager` (see `llm_compactor::session` and
//! `docs/prepared-compaction.md`), with the proxy's own record: a round at or over the
//! prepare threshold spawns the pass of the session's transcript as the upstream saw it
//! (the snapshot) and goes on unchanged; rounds past the trigger go out as they are while
//! it runs; the first round over the trigger after it finished installs it through the
//! ordinary compaction path (under the session's lease, after catching up with the
//! store), where the pure check ([`llm_compactor::plan::prepared`]) decides install,
//! amend or discard against the transcript *as it is then*. A prepared result lives only
//! in this process's memory: another instance, or this one restarted, never sees it, so
//! it cannot install a stale one; and a result whose snapshot another instance's pass
//! replaced fails the digest check and is discarded. Only a round over the hard limit
//! (the budget) waits, bounded, then compacts inline as before.
//!
//! With `--summarizer-key client` or `--summarizer upstream` the background pass pays
//! with the key of the round that started it (in the pass's context, handed to the
//! task, never stored); when the summarizer is the agent's own model on the upstream its
//! summary request is that round's request as the upstream received it plus one
//! instruction ([`crate::upstream_summarizer::pass_context`]), so the upstream bills most
//! of it as cache reads.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use llm_compactor::compactor::PreparedPass;
use llm_compactor::message::Message;
use llm_compactor::plan::prepared::{self, Pace, PrepareStep, PrepareView, Snapshot};
use llm_compactor::summarize::PassContext;
use llm_compactor::{CompactError, CompactOptions, Compactor};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::SessionState;
use crate::config::PrepareConfig;
use crate::metrics::Metrics;
use crate::upstream_summarizer::{AgentRound, pass_context};

/// The transcript line type of a prepared pass's fate (the library's).
pub use llm_compactor::session::TYPE_PREPARED;

/// A session's one prepared pass, and the session's pace (when to start the next).
#[derive(Default)]
pub(crate) struct Preparer {
    running: Option<Running>,
    ready: Option<PreparedPass>,
    pace: Pace,
    /// The origin of the pace's times (the session's first round here).
    origin: Option<tokio::time::Instant>,
    /// The prepare threshold of the round under way ([`prepared::start_at`]).
    threshold: Option<usize>,
}

struct Running {
    cancel: CancellationToken,
    handle: JoinHandle<Result<Outcome, CompactError>>,
}

/// How a background preparation ended.
enum Outcome {
    /// The pass of the snapshot, and how long it took.
    Prepared(Box<PreparedPass>, Duration),
    /// Another instance holds the session's preparation lease: it prepares, not this one
    /// (also when the store could not be asked: no summary is paid for without the lease).
    Elsewhere,
}

/// The suffix of a session's store key that names its preparation lease (distinct from
/// the compaction lease, so that preparing never blocks an inline pass).
pub(crate) const PREPARE_LEASE_SUFFIX: &str = "#prepare";

/// The preparation lease a background pass takes first: with a store shared by several
/// instances (PostgreSQL), only the instance holding it prepares the session, so two
/// instances never both pay for a summary of the same session. It is never released
/// early: the holder keeps preparing that session's passes (renewing it) until it stops
/// serving it and the lease expires.
pub(crate) struct PrepareLease {
    pub(crate) store: Arc<dyn llm_compactor::store::SessionStore>,
    pub(crate) holder: String,
    pub(crate) ttl: Duration,
    pub(crate) key: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.handle.abort();
    }
}

/// What the preparation decides for a round.
pub(super) enum Decision {
    /// Go on as without preparation (compact inline when due).
    Inline,
    /// Send the round as it is: a pass is being prepared.
    AsIs,
    /// Install this prepared pass (through the compaction path, under the lease).
    Install(Box<PreparedPass>),
}

impl Preparer {
    pub(super) fn busy(&self) -> bool {
        self.running.is_some() || self.ready.is_some()
    }
}

impl SessionState {
    /// Drops the prepared pass (running or ready); true when there was one.
    pub(super) fn cancel_preparation(&mut self, metrics: &Metrics) -> bool {
        let had = self.preparer.busy();
        // The pace stays: it is the session's, not the pass's.
        self.preparer.running = None;
        self.preparer.ready = None;
        if had {
            metrics.prepared_cancelled.fetch_add(1, Ordering::Relaxed);
        }
        had
    }

    /// The preparation's decision for a round of `tokens` tokens over the transcript as
    /// it is now; `due`: the engine's own trigger says compact. Starting a pass is left
    /// to [`SessionState::start_preparation`], once the round's body is known.
    pub(super) async fn prepared_decision(
        &mut self,
        prepare: &PrepareConfig,
        compactor: &Compactor,
        metrics: &Metrics,
        tokens: usize,
        due: bool,
    ) -> Decision {
        self.collect_prepared(metrics).await;
        let config = compactor.config();
        let origin = *self.preparer.origin.get_or_insert_with(tokio::time::Instant::now);
        self.preparer
            .pace
            .observe_request(tokens, origin.elapsed().as_secs_f64());
        let hard = config.context_budget;
        let threshold = prepared::start_at(hard, hard, &prepare.start_rule(), &self.preparer.pace);
        self.preparer.threshold = Some(threshold);
        loop {
            let view = PrepareView {
                tokens,
                trigger: config.trigger(),
                hard,
                prepare_at: threshold,
                needed: due,
                running: self.preparer.running.is_some(),
                ready: self.preparer.ready.is_some(),
            };
            match prepared::next_step(&view) {
                PrepareStep::Inline => return Decision::Inline,
                // The pass is started at the end of the round, once its body is known
                // (`maybe_prepare`).
                PrepareStep::AsIs { .. } => return Decision::AsIs,
                PrepareStep::Wait => self.wait_prepared(prepare.max_wait, metrics).await,
                PrepareStep::Install => {
                    if let Some(prepared) = self.preparer.ready.take() {
                        return Decision::Install(Box::new(prepared));
                    }
                }
            }
        }
    }

    /// True when a round of `tokens` tokens should start a pass now: it reached the
    /// prepare threshold and none is under way.
    pub(super) fn should_prepare(&self, config: &PrepareConfig, compactor: &Compactor, tokens: usize) -> bool {
        let threshold = self
            .preparer
            .threshold
            .unwrap_or_else(|| prepared::prepare_at(compactor.config().context_budget, config.ratio));
        tokens >= threshold && !self.preparer.busy()
    }

    /// Starts the pass of the transcript as it is now on a tokio task.
    pub(super) fn start_preparation(
        &mut self,
        compactor: Arc<Compactor>,
        metrics: &Metrics,
        pass: PassContext,
        lease: PrepareLease,
    ) {
        let messages: Vec<Message> = self.replayer.messages().to_vec();
        let cancel = CancellationToken::new();
        let options = CompactOptions {
            counter: Some(self.counter.clone()),
            cancel: cancel.clone(),
            ahead_of_trigger: true,
            pass,
            ..CompactOptions::default()
        };
        let handle = tokio::spawn(async move {
            let PrepareLease {
                store,
                holder,
                ttl,
                key,
            } = lease;
            match store.try_lease(&key, &holder, ttl).await {
                Ok(true) => {}
                Ok(false) => return Ok(Outcome::Elsewhere),
                Err(e) => {
                    tracing::warn!(session = %key, error = %e, "could not take the preparation lease; not preparing");
                    return Ok(Outcome::Elsewhere);
                }
            }
            // The snapshot's digest off the request path too.
            let snapshot = Snapshot::of(&messages);
            let started = tokio::time::Instant::now();
            let work = compactor.compact(&messages, options);
            let result = super::sync::renewing_lease(store.as_ref(), &holder, ttl, &key, work).await?;
            Ok(Outcome::Prepared(
                Box::new(PreparedPass { snapshot, result }),
                started.elapsed(),
            ))
        });
        self.preparer.running = Some(Running { cancel, handle });
        metrics.prepared_started.fetch_add(1, Ordering::Relaxed);
        tracing::info!(session = %self.key, "compaction prepared in the background");
    }

    /// Moves a finished pass to `ready`. (Whether its snapshot is still a prefix is the
    /// install's check, once: a digest of the transcript on every round would cost the
    /// round the conversation; the passes that change the history, inline or after an
    /// edit, drop the preparation themselves.)
    async fn collect_prepared(&mut self, metrics: &Metrics) {
        let finished = self.preparer.running.as_ref().is_some_and(|r| r.handle.is_finished());
        if finished && let Some(mut running) = self.preparer.running.take() {
            let outcome = (&mut running.handle).await;
            self.accept_prepared(outcome, metrics);
        }
    }

    fn accept_prepared(
        &mut self,
        outcome: Result<Result<Outcome, CompactError>, tokio::task::JoinError>,
        metrics: &Metrics,
    ) {
        match outcome {
            Ok(Ok(Outcome::Prepared(prepared, took))) if !prepared.is_noop() => {
                if !prepared.result.summary.is_empty() {
                    self.preparer.pace.observe_summary(took.as_secs_f64());
                }
                self.preparer.ready = Some(*prepared);
            }
            Ok(Ok(Outcome::Elsewhere)) => {
                tracing::debug!(session = %self.key, "another instance holds the preparation lease");
                metrics.prepared_elsewhere.fetch_add(1, Ordering::Relaxed);
            }
            other => {
                let usable = other.map(|r| r.map(|o| matches!(o, Outcome::Prepared(p, _) if !p.is_noop())));
                tracing::info!(session = %self.key, outcome = ?usable, "prepared pass not usable");
                metrics.prepared_discarded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    async fn wait_prepared(&mut self, max: Duration, metrics: &Metrics) {
        let Some(mut running) = self.preparer.running.take() else {
            return;
        };
        match tokio::time::timeout(max, &mut running.handle).await {
            Ok(outcome) => self.accept_prepared(outcome, metrics),
            Err(_) => {
                drop(running);
                metrics.prepared_cancelled.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl SessionState {
    /// This round's pass target (`None`: no pass; as the compactor's decision said, or
    /// changed by the preparation) and the prepared pass to install.
    pub(super) async fn prepared_round(
        &mut self,
        round: &super::Round<'_>,
        tokens: usize,
        target: Option<Option<usize>>,
    ) -> (Option<Option<usize>>, Option<Box<PreparedPass>>) {
        let Some(prepare) = &round.config.prepare else {
            return (target, None);
        };
        if round.attempt != super::Attempt::First {
            // A forced pass changes the history: whatever was prepared is stale.
            self.cancel_preparation(round.metrics);
            return (target, None);
        }
        let decision = self
            .prepared_decision(prepare, round.compactor, round.metrics, tokens, target.is_some())
            .await;
        match decision {
            Decision::Inline => (target, None),
            Decision::AsIs => (None, None),
            Decision::Install(prepared) => (Some(round.config.target), Some(prepared)),
        }
    }

    /// At the end of a first attempt that did not compact: starts a pass when the round
    /// reached the prepare threshold and none is under way. `body` is the round's
    /// request as the upstream receives it (the summary request reads its cache with
    /// `--summarizer-key client`).
    pub(super) fn maybe_prepare(&mut self, round: &super::Round<'_>, body: &bytes::Bytes, tokens: usize) {
        let Some(prepare) = &round.config.prepare else {
            return;
        };
        if !self.should_prepare(prepare, round.compactor, tokens) {
            return;
        }
        // The agent's request is the summary's prefix only when the summarizer is the
        // agent's own model behind the upstream (`ProxyConfig::summary_reads_cache`).
        let pass = pass_context(round.auth, Some(round.agent_round(Some(body), &self.key)));
        let lease = PrepareLease {
            store: Arc::clone(&round.config.store),
            holder: round.config.holder.clone(),
            ttl: round.config.lease_ttl,
            key: format!("{}{PREPARE_LEASE_SUFFIX}", self.store_key),
        };
        self.start_preparation(Arc::clone(round.compactor), round.metrics, pass, lease);
    }

    /// Checks `prepared` against the transcript as it is (under the lease, caught up
    /// with the store) and, when it may be installed, returns the pass over the
    /// transcript; its fate is a `prepared-compaction` line either way.
    pub(super) fn install_prepared(
        &mut self,
        prepared: &PreparedPass,
        compactor: &Compactor,
        metrics: &Metrics,
        lines: &mut llm_compactor::session::Lines,
    ) -> Result<Option<llm_compactor::CompactionResult>, crate::error::ProxyError> {
        use llm_compactor::plan::prepared::{InstallPlan, Verdict};
        let current = self.replayer.messages();
        let len = prepared.snapshot.len;
        let digest = (current.len() >= len).then(|| llm_compactor::message::conversation_digest(&current[..len]));
        let check = prepared.check(current, digest.as_deref(), compactor);
        // The ceiling is the hard limit, for a request under it too: a pass that leaves the
        // conversation over the trigger is still a pass done (the next one starts at once);
        // discarding it would throw its summary away and let the session reach the hard
        // limit, where a request waits.
        let ceiling = compactor.config().context_budget;
        let counter: &dyn llm_compactor::count::TokenCounter = self.counter.as_ref();
        let plan = prepared.plan(current, &check, compactor, counter, Some(ceiling));
        let (payload, result) = match plan {
            InstallPlan::Install(installed) => {
                let changes: Vec<String> = match &check.verdict {
                    Verdict::Amend { changes } => changes.iter().map(|c| c.describe()).collect(),
                    _ => Vec::new(),
                };
                let fate = if changes.is_empty() { "installed" } else { "amended" };
                let top_up = installed.top_up.len();
                let result = prepared.installed_result(current, *installed, compactor, counter);
                let counted = if changes.is_empty() {
                    &metrics.prepared_installed
                } else {
                    &metrics.prepared_amended
                };
                counted.fetch_add(1, Ordering::Relaxed);
                (
                    serde_json::json!({"fate": fate, "snapshot_messages": len, "since": check.since,
                                       "changes": changes, "top_up": top_up}),
                    Some(result),
                )
            }
            other => {
                let reasons: Vec<String> = match (&check.verdict, &other) {
                    (Verdict::Discard { reasons }, _) => reasons.iter().map(|r| r.describe()).collect(),
                    (_, InstallPlan::NeedsInline { tokens, ceiling }) => {
                        vec![format!("installed it would leave {tokens} tokens, over {ceiling}")]
                    }
                    (_, InstallPlan::Invalid { violation }) => vec![format!("invalid install: {violation}")],
                    _ => Vec::new(),
                };
                metrics.prepared_discarded.fetch_add(1, Ordering::Relaxed);
                tracing::info!(session = %self.key, ?reasons, "prepared pass discarded");
                (
                    serde_json::json!({"fate": "discarded", "snapshot_messages": len, "reasons": reasons}),
                    None,
                )
            }
        };
        let record = llm_compactor::session::Record::Unknown {
            kind: TYPE_PREPARED.to_owned(),
            payload,
        };
        lines
            .push(&mut self.replayer, record)
            .map_err(|e| crate::error::ProxyError::Internal(e.to_string()))?;
        Ok(result)
    }

    /// The pass run inline, as without preparation (it changes the history, so a pass
    /// under way is dropped).
    pub(super) async fn inline_pass(
        &mut self,
        round: &super::Round<'_>,
        target: Option<usize>,
        agent: Option<Arc<AgentRound>>,
    ) -> Result<llm_compactor::CompactionResult, crate::error::ProxyError> {
        self.cancel_preparation(round.metrics);
        let options = CompactOptions {
            counter: Some(self.counter.clone()),
            target,
            focus: round.config.focus.clone(),
            pass: pass_context(round.auth, agent),
            ..CompactOptions::default()
        };
        let started = tokio::time::Instant::now();
        let result = round
            .compactor
            .compact(self.replayer.messages(), options)
            .await
            .map_err(|e| crate::error::ProxyError::BadRequest(format!("the conversation cannot be compacted: {e}")))?;
        if !result.summary.is_empty() {
            self.preparer.pace.observe_summary(started.elapsed().as_secs_f64());
        }
        Ok(result)
    }
}
