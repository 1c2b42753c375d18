//! The async shell around the planning core: [`Compactor`].
//!
//! Everything that talks to the world (the summarizer, waits, cancellation, hooks,
//! events) lives here; every decision is made by the pure functions of [`crate::plan`].
//! A pass: no-op when there is no middle; aging first (when on) and an elision-only
//! result when that was enough; else a summary that must prove it shrank the
//! conversation (one tighten retry, one doubled-budget retry after a truncated summary);
//! else the hard trim, which always makes progress.

mod backoff;
mod calls;
mod config;
mod events;
mod hooks;
mod ledger;
mod pass;
mod report;
mod result;
mod summary;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

pub use backoff::{MAX_BACKOFF, Sleeper, TokioSleeper, backoff_delay};
pub use config::{CompactorConfig, CompactorConfigBuilder, ConfigError};
pub use events::{CompactionEvent, Observer};
pub use hooks::{CompactionHooks, NoHooks, RequestDecision, ResponseDecision};
pub use report::{NeedReason, PlanReport, TrimPreview};
pub use result::{Attempt, AttemptKind, AttemptOutcome, CompactionResult, Elision};
pub use summary::TRUNCATED_MARKER;

use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::{self, AgingRules, CostReceipt, EpochDecision, Pairs};
use crate::summarize::{Prompts, Summarizer};

/// A compaction that could not even start: invalid input. A failing summarizer is NOT an
/// error (it ends in the hard trim with `fallback: true`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The conversation is malformed at `index`.
    #[error("message {index}: {problem}")]
    InvalidInput {
        /// The index of the offending message.
        index: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// A per-call option is unusable (a target of 0 tokens).
    #[error("invalid compaction option: {0}")]
    InvalidOptions(String),
}

/// Per-call overrides of one `compact` invocation.
#[derive(Clone, Default)]
pub struct CompactOptions {
    /// Aim at this many tokens instead of the configured target; also judges acceptance
    /// and `exhausted`.
    pub target: Option<usize>,
    /// Count with this counter instead of the compactor's (every count of the pass).
    pub counter: Option<Arc<dyn TokenCounter>>,
    /// Cancels waits and summarizer calls; a cancelled pass ends in the hard trim.
    pub cancel: CancellationToken,
    /// Extra instruction for the summarizer ("focus on the database migration").
    pub focus: Option<String>,
}

impl std::fmt::Debug for CompactOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactOptions")
            .field("target", &self.target)
            .field("counter", &self.counter.as_ref().map(|c| c.name().to_owned()))
            .field("cancelled", &self.cancel.is_cancelled())
            .field("focus", &self.focus)
            .finish()
    }
}

/// Keeps a conversation inside its context window.
///
/// ```
/// use std::sync::Arc;
/// use llm_compactor::count::HeuristicCounter;
/// use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message};
///
/// let config = CompactorConfig::builder(1_000).keep_recent(2).build().unwrap();
/// let compactor = Compactor::new(config, Arc::new(HeuristicCounter));
/// let mut conversation = vec![Message::system("Be terse.")];
/// for i in 0..40 {
///     conversation.push(Message::user(format!("question {i}: {}", "x".repeat(80))));
///     conversation.push(Message::assistant(format!("answer {i}")));
/// }
/// assert!(compactor.needs_compaction(&conversation));
/// // No summarizer configured: the pass hard-trims, and says so.
/// let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
/// let result = rt.block_on(compactor.compact(&conversation, CompactOptions::default())).unwrap();
/// assert!(result.fallback && result.tokens_after < result.tokens_before);
/// assert_eq!(result.messages[0], conversation[0]);
/// ```
pub struct Compactor {
    config: CompactorConfig,
    counter: Arc<dyn TokenCounter>,
    summarizer: Option<Arc<dyn Summarizer>>,
    hooks: Arc<dyn CompactionHooks>,
    observer: Option<Observer>,
    prompts: Prompts,
    sleeper: Arc<dyn Sleeper>,
    rounds: AtomicU64,
    ledger: Option<crate::plan::ledger::LedgerPolicy>,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("config", &self.config)
            .field("counter", &self.counter.name())
            .field("summarizer", &self.summarizer.as_ref().map(|s| s.name().to_owned()))
            .finish_non_exhaustive()
    }
}

impl Compactor {
    /// A compactor with this configuration and counter, and no summarizer.
    pub fn new(config: CompactorConfig, counter: Arc<dyn TokenCounter>) -> Self {
        Compactor {
            config,
            counter,
            summarizer: None,
            hooks: Arc::new(NoHooks),
            observer: None,
            prompts: Prompts::default(),
            sleeper: Arc::new(TokioSleeper),
            rounds: AtomicU64::new(0),
            ledger: None,
        }
    }

    /// The same compactor (counter, summarizer, hooks, observer, prompts, ledger,
    /// sleeper) with another configuration, e.g. another budget for a request to another
    /// model (the proxy's `--budget-by-model`).
    ///
    /// # Errors
    /// The first rule `config` breaks ([`CompactorConfig::validate`]).
    pub fn reconfigured(&self, config: CompactorConfig) -> Result<Compactor, ConfigError> {
        config.validate()?;
        Ok(Compactor {
            config,
            counter: Arc::clone(&self.counter),
            summarizer: self.summarizer.clone(),
            hooks: Arc::clone(&self.hooks),
            observer: self.observer.clone(),
            prompts: self.prompts.clone(),
            sleeper: Arc::clone(&self.sleeper),
            rounds: AtomicU64::new(0),
            ledger: self.ledger.clone(),
        })
    }

    /// The same compactor with this summarizer.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// The same compactor with guardrail hooks run on every summarizer call.
    pub fn with_hooks(mut self, hooks: Arc<dyn CompactionHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// The same compactor reporting [`CompactionEvent`]s to `observer`.
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The same compactor with other summarization texts.
    pub fn with_prompts(mut self, prompts: Prompts) -> Self {
        self.prompts = prompts;
        self
    }

    /// The same compactor with the artifact ledger on: the grounding gate checks every
    /// model-written summary, the ledger of the replaced messages is appended to it, and
    /// the ledger alone is the summary when the model's fails (before the hard trim).
    /// Off by default in the library (summaries are exactly what the model wrote); the
    /// `compactor` CLI turns it on. A model-free summarizer
    /// ([`crate::backend::LedgerSummarizer`]) always uses it, with this policy or the
    /// default one.
    pub fn with_ledger(mut self, policy: crate::plan::ledger::LedgerPolicy) -> Self {
        self.ledger = Some(policy);
        self
    }

    /// The ledger policy, when the ledger is on.
    pub fn ledger(&self) -> Option<&crate::plan::ledger::LedgerPolicy> {
        self.ledger.as_ref()
    }

    /// The same compactor waiting through `sleeper` between attempts.
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &CompactorConfig {
        &self.config
    }

    /// The counter.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// The summarizer, if one is configured.
    pub fn summarizer(&self) -> Option<&Arc<dyn Summarizer>> {
        self.summarizer.as_ref()
    }

    /// The summarization texts.
    pub fn prompts(&self) -> &Prompts {
        &self.prompts
    }

    /// The aging rules of the configuration.
    pub fn aging_rules(&self) -> AgingRules {
        AgingRules {
            min_chars: self.config.age_min_chars,
            reclaim_min: self.config.epoch_chars(),
        }
    }

    /// True when a pass should run now: the conversation is over the trigger (strictly),
    /// or, with aging on, the eligible results (before the recent window as the pass fits
    /// it to `max_recent_tokens`) add up to a whole epoch
    /// ([`CompactorConfig::epoch_chars`]) and that epoch pays for the cache write it
    /// causes ([`Compactor::epoch_decision`]).
    pub fn needs_compaction(&self, messages: &[Message]) -> bool {
        let tokens = self.counter.count_messages(messages);
        if tokens > self.config.trigger() {
            return true;
        }
        self.epoch_decision(messages, tokens)
            .is_some_and(|(decision, _)| decision.runs())
    }

    /// [`Compactor::needs_compaction`] of a [`crate::Conversation`]: its tokens are the
    /// counter's [`TokenCounter::count_conversation`] (cached counts, the calibrated
    /// anchor checked by prefix digest), so with aging off a round costs nothing that
    /// grows with the conversation. With aging on, the epoch check still reads the
    /// conversation's results.
    pub fn needs_compaction_in(&self, conversation: &crate::Conversation) -> bool {
        let tokens = self.counter.count_conversation(conversation);
        if tokens > self.config.trigger() {
            return true;
        }
        self.epoch_decision(conversation.messages(), tokens)
            .is_some_and(|(decision, _)| decision.runs())
    }

    /// The cost policy's decision on the elision epoch due below the trigger, and the
    /// receipt it was made on; `None` when no epoch is due (aging off, the pool short of
    /// an epoch, or stubbing would not shrink the conversation). `tokens` is the
    /// conversation's count.
    pub fn epoch_decision(&self, messages: &[Message], tokens: usize) -> Option<(EpochDecision, CostReceipt)> {
        self.epoch_decision_with(messages, tokens, self.counter.as_ref(), &CompactOptions::default())
    }

    /// [`Compactor::epoch_decision`] with the receipt counted by `counter` (a per-call
    /// override: every count of a plan uses the invocation's counter), for a pass run
    /// with `options`.
    pub(crate) fn epoch_decision_with(
        &self,
        messages: &[Message],
        tokens: usize,
        counter: &dyn TokenCounter,
        options: &CompactOptions,
    ) -> Option<(EpochDecision, CostReceipt)> {
        if !self.config.age_observations {
            return None;
        }
        let pairs = Pairs::build(messages);
        let layout = plan::layout_with(messages, &pairs, self.config.keep_recent);
        // The window as the pass will fit it to `max_recent_tokens`: what it shrinks off
        // is before the cut, and aged by the pass, so the decision must see it too.
        let (layout, _) = self.fit_recent(messages, &pairs, layout, counter, options);
        let eligible = plan::eligible(messages, &pairs, &layout, self.aging_rules());
        if plan::reclaimable_pool(&eligible) < self.config.epoch_chars() {
            return None;
        }
        let elisions: Vec<Elision> = eligible
            .into_iter()
            .map(|e| Elision {
                index: e.index,
                stub: e.stub,
            })
            .collect();
        let aged = plan::apply_elisions(messages, &elisions);
        let policy = &self.config.cost_policy;
        let rounds = plan::policy::horizon(policy, messages, tokens, self.config.trigger());
        let receipt = CostReceipt::of_pass(messages, &aged, counter, (0, 0), rounds, policy);
        if receipt.tokens_after >= receipt.tokens_before {
            return None;
        }
        let decision = plan::policy::decide_epoch(&receipt, policy);
        tracing::debug!(?decision, net_cost = receipt.net_cost, rounds, "epoch decision");
        Some((decision, receipt))
    }

    fn next_round(&self) -> u64 {
        self.rounds.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn emit(&self, event: CompactionEvent) {
        tracing::info!(?event, "compaction event");
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }
}
