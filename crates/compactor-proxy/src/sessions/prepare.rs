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
//! The background pass itself (running or ready, start, abort on drop, the bounded
//! wait, the pure core's step loop, the pace) is the library's one
//! [`llm_compactor::compactor::Preparer`], the one the `ContextManager` holds; this file
//! is what the proxy adds to it: the preparation lease that wraps the task, the
//! install under the compaction lease through the store, and its metrics.
//!
//! With `--summarizer-key client` or `--summarizer upstream` the background pass pays
//! with the key of the round that started it (in the pass's context, handed to the
//! task, never stored); when the summarizer is the agent's own model on the upstream its
//! summary request is that round's request as the upstream received it plus one
//! instruction ([`crate::upstream_summarizer::pass_context`]), so the upstream bills most
//! of it as cache reads.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use llm_compactor::compactor::{Judgment, PrepareDecision, PrepareRequest, PreparedPass, PreparerEvent};
use llm_compactor::plan::prepared;
use llm_compactor::summarize::PassContext;
use llm_compactor::{CompactOptions, Compactor};
use tokio_util::sync::CancellationToken;

use super::SessionState;
use crate::config::PrepareConfig;
use crate::metrics::Metrics;
use crate::upstream_summarizer::{AgentRound, pass_context};

/// A session's one prepared pass, and the session's pace (the library's).
pub(super) use llm_compactor::compactor::Preparer;
/// The transcript line type of a prepared pass's fate (the library's).
pub use llm_compactor::session::TYPE_PREPARED;

/// The suffix of a session's store key that names its preparation lease (distinct from
/// the compaction lease, so that preparing never blocks an inline pass).
pub(crate) const PREPARE_LEASE_SUFFIX: &str = "#prepare";

/// The preparation lease a background pass takes first: with a store shared by several
/// instances (PostgreSQL), only the instance holding it prepares the session, so two
/// instances never both pay for a summary of the same session. It is never released
/// early: the holder keeps preparing that session's passes (renewing it) until it stops
/// serving it and the lease expires. It wraps the preparer's task
/// ([`Preparer::start`]): when another instance holds it (or the store cannot be asked:
/// no summary is paid for without the lease), the task declines the pass.
pub(crate) struct PrepareLease {
    pub(crate) store: Arc<dyn llm_compactor::store::SessionStore>,
    pub(crate) holder: String,
    pub(crate) ttl: std::time::Duration,
    pub(crate) key: String,
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

/// The preparer's events, as the proxy counts them.
fn heard(session: &str, metrics: &Metrics, event: PreparerEvent) {
    let counted = match event {
        PreparerEvent::Cancelled { .. } => &metrics.prepared_cancelled,
        PreparerEvent::Unusable { why } => {
            tracing::info!(session, %why, "prepared pass not usable");
            &metrics.prepared_discarded
        }
        PreparerEvent::Declined => {
            tracing::debug!(session, "another instance holds the preparation lease");
            &metrics.prepared_elsewhere
        }
        _ => return,
    };
    counted.fetch_add(1, Ordering::Relaxed);
}

impl SessionState {
    /// Drops the prepared pass (running or ready).
    pub(super) fn cancel_preparation(&mut self, metrics: &Metrics) {
        let key = &self.key;
        self.preparer.cancel("the history changes", &|e| heard(key, metrics, e));
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
        let key = &self.key;
        let on = |e| heard(key, metrics, e);
        self.preparer.collect(&on).await;
        let config = compactor.config();
        let hard = config.context_budget;
        let threshold = self.preparer.observe_request(tokens, hard, hard, &prepare.start_rule());
        let request = PrepareRequest {
            tokens,
            trigger: config.trigger(),
            hard,
            needed: due,
        };
        match self.preparer.next(&request, threshold, prepare.max_wait, &on).await {
            PrepareDecision::Inline => Decision::Inline,
            // The pass is started at the end of the round, once its body is known
            // (`maybe_prepare`).
            PrepareDecision::AsIs { .. } => Decision::AsIs,
            PrepareDecision::Install(prepared) => Decision::Install(prepared),
        }
    }

    /// True when a round of `tokens` tokens should start a pass now: it reached the
    /// prepare threshold and none is under way.
    pub(super) fn should_prepare(&self, config: &PrepareConfig, compactor: &Compactor, tokens: usize) -> bool {
        let threshold = self
            .preparer
            .threshold()
            .unwrap_or_else(|| prepared::prepare_at(compactor.config().context_budget, config.ratio));
        tokens >= threshold && !self.preparer.busy()
    }

    /// Starts the pass of the transcript as it is now on a tokio task, under the
    /// session's preparation lease.
    pub(super) fn start_preparation(
        &mut self,
        compactor: Arc<Compactor>,
        metrics: &Metrics,
        pass: PassContext,
        lease: PrepareLease,
    ) {
        let options = CompactOptions::new()
            .with_counter(self.counter.clone())
            .with_cancel(CancellationToken::new())
            .with_ahead_of_trigger(true)
            .with_pass(pass);
        let messages = self.replayer.messages().to_vec();
        self.preparer.start(compactor, messages, None, options, move |pass| async move {
            let PrepareLease {
                store,
                holder,
                ttl,
                key,
            } = lease;
            match store.try_lease(&key, &holder, ttl).await {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    tracing::warn!(session = %key, error = %e, "could not take the preparation lease; not preparing");
                    return None;
                }
            }
            Some(super::sync::renewing_lease(store.as_ref(), &holder, ttl, &key, pass).await)
        });
        metrics.prepared_started.fetch_add(1, Ordering::Relaxed);
        tracing::info!(session = %self.key, "compaction prepared in the background");
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
        let current = self.replayer.messages();
        let len = prepared.snapshot.len;
        let digest = (current.len() >= len).then(|| llm_compactor::message::conversation_digest(&current[..len]));
        // The ceiling is the hard limit, for a request under it too: a pass that leaves the
        // conversation over the trigger is still a pass done (the next one starts at once);
        // discarding it would throw its summary away and let the session reach the hard
        // limit, where a request waits.
        let ceiling = compactor.config().context_budget;
        let counter: &dyn llm_compactor::count::TokenCounter = self.counter.as_ref();
        let judgment = prepared.judge(current, digest.as_deref(), compactor, counter, Some(ceiling));
        let payload = judgment.line(len);
        let result = match judgment {
            Judgment::Install { result, changes, .. } => {
                let counted = if changes.is_empty() {
                    &metrics.prepared_installed
                } else {
                    &metrics.prepared_amended
                };
                counted.fetch_add(1, Ordering::Relaxed);
                Some(*result)
            }
            Judgment::Discard { reasons } => {
                metrics.prepared_discarded.fetch_add(1, Ordering::Relaxed);
                tracing::info!(session = %self.key, ?reasons, "prepared pass discarded");
                None
            }
            _ => None,
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
        let options = CompactOptions::new()
            .with_counter(self.counter.clone())
            .with_target(target)
            .with_focus(round.config.focus.clone())
            .with_pass(pass_context(round.auth, agent));
        let started = tokio::time::Instant::now();
        let result = round
            .compactor
            .compact(self.replayer.messages(), options)
            .await
            .map_err(compact_error)?;
        if !result.summary.is_empty() {
            self.preparer.timed_summary(started.elapsed());
        }
        Ok(result)
    }
}

/// A pass's error as the client's answer: a conversation no repair can make valid (a
/// tool call id used twice) is the client's request, a 400 naming the message; anything
/// else (options the proxy built) is the proxy's own failure, a 500.
pub(crate) fn compact_error(error: llm_compactor::CompactError) -> crate::error::ProxyError {
    match error {
        llm_compactor::CompactError::InvalidInput { .. } => {
            crate::error::ProxyError::BadRequest(format!("the conversation cannot be compacted: {error}"))
        }
        other => crate::error::ProxyError::Internal(format!("the pass failed: {other}")),
    }
}

#[cfg(test)]
mod compact_error_tests {
    use super::compact_error;
    use crate::error::ProxyError;
    use llm_compactor::CompactError;

    #[test]
    fn the_clients_history_is_a_400_and_our_own_options_a_500() {
        let input = CompactError::InvalidInput {
            index: 3,
            problem: "tool call id c1 used twice".into(),
        };
        assert!(matches!(compact_error(input), ProxyError::BadRequest(m) if m.contains("c1")));
        let options = CompactError::InvalidOptions("target must be greater than 0 tokens".into());
        assert!(matches!(compact_error(options), ProxyError::Internal(_)));
    }
}
