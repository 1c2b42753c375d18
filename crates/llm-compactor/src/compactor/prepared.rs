//! [`PreparedPass`]: a pass computed ahead of the trigger over a frozen snapshot, and its
//! install into the conversation as it is now.
//!
//! The decisions are the pure core's ([`crate::plan::prepared`]); this file only turns a
//! [`CompactionResult`] over the snapshot into the core's [`Replacement`] and the core's
//! [`Installed`] back into a [`CompactionResult`] over the current conversation, so that
//! a session records an install exactly as it records any pass (`record_result`: its
//! indices are the snapshot's, which are the current conversation's, since the snapshot
//! is an exact prefix of it). [`PreparedPass::judge`] is the whole install as every loop
//! does it: check, plan, result, and the words of its fate ([`Judgment`]), so that the
//! `ContextManager` and the proxy record and report an install alike.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{CompactionResult, Compactor};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::prepared::{
    Check, InstallPlan, InstallRules, Installed, Replacement, Snapshot, Verdict, check_with_digest, plan_install,
};
use crate::plan::{self, CostReceipt};

/// What [`PreparedPass::judge`] decided: install (as it was, or amended), or discard.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Judgment {
    /// Install: the pass over the current conversation.
    Install {
        /// The result to record and send ([`PreparedPass::installed_result`]).
        result: Box<CompactionResult>,
        /// Messages appended since the snapshot, kept after its summary.
        since: usize,
        /// The ledger facts amended, in words (empty: installed as it was).
        changes: Vec<String>,
        /// Tool results among the new messages stubbed to fit.
        top_up: usize,
    },
    /// Discard, for these reasons (in words).
    Discard {
        /// Why.
        reasons: Vec<String>,
    },
}

impl Judgment {
    /// The fate in one word: `installed`, `amended` or `discarded`.
    pub fn fate(&self) -> &'static str {
        match self {
            Judgment::Install { changes, .. } if changes.is_empty() => "installed",
            Judgment::Install { .. } => "amended",
            Judgment::Discard { .. } => "discarded",
        }
    }

    /// The payload of the pass's `prepared-compaction` transcript line, for a pass of
    /// `snapshot_messages` messages.
    pub fn line(&self, snapshot_messages: usize) -> Value {
        match self {
            Judgment::Install {
                since, changes, top_up, ..
            } => json!({"fate": self.fate(), "snapshot_messages": snapshot_messages, "since": since,
                        "changes": changes, "top_up": top_up}),
            Judgment::Discard { reasons } => {
                json!({"fate": "discarded", "snapshot_messages": snapshot_messages, "reasons": reasons})
            }
        }
    }
}

/// A compaction pass of a snapshot, waiting to be installed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PreparedPass {
    /// The snapshot it ran over.
    pub snapshot: Snapshot,
    /// What `compact` returned for the snapshot.
    pub result: CompactionResult,
}

impl PreparedPass {
    /// The pass `result` of exactly `snapshot_messages`.
    pub fn new(snapshot_messages: &[Message], result: CompactionResult) -> PreparedPass {
        PreparedPass {
            snapshot: Snapshot::of(snapshot_messages),
            result,
        }
    }

    /// The pure core's view of the result.
    pub fn replacement(&self) -> Replacement<'_> {
        Replacement {
            messages: &self.result.messages,
            summary: &self.result.summary,
            cut: usize::try_from(self.result.cut_index).ok(),
            elisions: &self.result.elisions,
            repaired: !self.result.repairs.is_empty(),
            fallback: self.result.fallback,
        }
    }

    /// True when installing it would change nothing (a no-op pass).
    pub fn is_noop(&self) -> bool {
        self.result.is_noop()
    }

    /// The check against `current`, whose first `snapshot.len` messages digest to
    /// `prefix_digest` (see [`check_with_digest`]).
    pub fn check(&self, current: &[Message], prefix_digest: Option<&str>, compactor: &Compactor) -> Check {
        let rules = compactor.ledger().map(|l| l.rules.clone()).unwrap_or_default();
        check_with_digest(&self.replacement(), &self.snapshot, current, prefix_digest, &rules)
    }

    /// The install plan into `current` after `check`, under `compactor`'s numbers: the
    /// goal is its target, the ceiling its trigger (or `ceiling` when given: the room of
    /// a request that must fit).
    pub fn plan(
        &self,
        current: &[Message],
        check: &Check,
        compactor: &Compactor,
        counter: &dyn TokenCounter,
        ceiling: Option<usize>,
    ) -> InstallPlan {
        let config = compactor.config();
        let rules = InstallRules {
            goal: config.target(),
            ceiling: ceiling.unwrap_or_else(|| config.trigger()),
            keep_recent: config.keep_recent,
            min_chars: config.age_min_chars,
        };
        plan_install(&self.replacement(), &self.snapshot, current, check, counter, &rules)
    }

    /// The whole install into `current` (whose first `snapshot.len` messages digest to
    /// `prefix_digest`), counted by `counter`, under `ceiling` (see [`PreparedPass::plan`]):
    /// [`PreparedPass::check`], [`PreparedPass::plan`], and the result to record, or the
    /// reasons it is discarded.
    pub fn judge(
        &self,
        current: &[Message],
        prefix_digest: Option<&str>,
        compactor: &Compactor,
        counter: &dyn TokenCounter,
        ceiling: Option<usize>,
    ) -> Judgment {
        let check = self.check(current, prefix_digest, compactor);
        let installed = match self.plan(current, &check, compactor, counter, ceiling) {
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
                return Judgment::Discard { reasons };
            }
        };
        let changes = match &check.verdict {
            Verdict::Amend { changes } => changes.iter().map(|c| c.describe()).collect(),
            _ => Vec::new(),
        };
        let top_up = installed.top_up.len();
        let result = self.installed_result(current, *installed, compactor, counter);
        Judgment::Install {
            result: Box::new(result),
            since: check.since,
            changes,
            top_up,
        }
    }

    /// The [`CompactionResult`] over `current` that `installed` is: what a session
    /// records (`record_result`) and a caller reports. Its usage and attempts are the
    /// prepared pass's (the summarizer was billed once, in the background); its receipt
    /// is recomputed over `current`.
    pub fn installed_result(
        &self,
        current: &[Message],
        installed: Installed,
        compactor: &Compactor,
        counter: &dyn TokenCounter,
    ) -> CompactionResult {
        let before = counter.count_messages(current);
        let mut elisions = self.result.elisions.clone();
        elisions.extend(installed.top_up.iter().cloned());
        let mut result = CompactionResult {
            messages: installed.messages,
            summary: installed.summary,
            dropped: self.result.dropped,
            cut_index: self.result.cut_index,
            tokens_before: before,
            tokens_after: installed.tokens,
            fallback: self.result.fallback,
            exhausted: installed.tokens > compactor.config().context_budget,
            elisions,
            usage: self.result.usage,
            attempts: self.result.attempts.clone(),
            summarizer: self.result.summarizer.clone(),
            receipt: None,
            repairs: Vec::new(),
            truncations: self.result.truncations.clone(),
            exhaustion: None,
            stale_thinking: Vec::new(),
        };
        let config = compactor.config();
        let policy = &config.cost_policy;
        let rounds = if before > config.trigger() {
            policy.expected_remaining_rounds
        } else {
            plan::policy::horizon(policy, current, before, config.trigger())
        };
        let summarizer = (result.usage.input_tokens, result.usage.output_tokens);
        result.receipt = Some(
            CostReceipt::of_pass(current, &result.messages, counter, summarizer, rounds, policy)
                .with_summarizer_cache_reads(result.usage.cache_read_tokens, policy),
        );
        result
    }
}
