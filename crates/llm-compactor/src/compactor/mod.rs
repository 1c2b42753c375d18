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
mod decision;
mod door;
mod epoch;
mod events;
mod fit;
mod hooks;
mod ledger;
mod pass;
mod policy;
mod prepared;
mod preparer;
mod report;
mod result;
mod summary;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

pub use backoff::{MAX_BACKOFF, Sleeper, TokioSleeper, backoff_delay};
pub use config::{CompactorConfig, CompactorConfigBuilder, ConfigError};
pub use decision::{CompactionReason, RequestFit};
pub use events::{CompactionEvent, Observer};
pub use hooks::{CompactionHooks, NoHooks, RequestDecision, ResponseDecision};
pub use policy::{
    DEFAULT_AGE_MIN_CHARS, DEFAULT_TARGET_RATIO, DEFAULT_TRIGGER_RATIO, ECONOMY_EPOCH_RATIO,
    ECONOMY_EXPECTED_REMAINING_ROUNDS, ECONOMY_KEEP_RECENT, ECONOMY_MIN_CHARS, ECONOMY_TARGET_RATIO,
    ECONOMY_TRIGGER_RATIO, Policy, UnknownPolicy,
};
pub use prepared::{Judgment, PreparedPass};
pub use preparer::{PassFuture, PrepareDecision, PrepareRequest, PreparedOutcome, Preparer, PreparerEvent};
pub use report::{NeedReason, PlanReport, TrimPreview};
pub use result::{Attempt, AttemptKind, AttemptOutcome, CompactionResult, Elision, Exhaustion};
pub use summary::TRUNCATED_MARKER;

use crate::count::TokenCounter;
use crate::plan::AgingRules;
use crate::summarize::{PassContext, Prompts, Summarizer};

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
///
/// It may gain fields, so it is built from [`CompactOptions::default`] (or
/// [`CompactOptions::new`]) and the `with_*` methods:
///
/// ```
/// use llm_compactor::CompactOptions;
/// let options = CompactOptions::new().with_target(Some(4_000)).with_focus("the database migration".to_owned());
/// assert_eq!(options.target, Some(4_000));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
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
    /// The pass is prepared ahead of the trigger (its result is installed when a request
    /// reaches it): decide as the pass at the trigger would, although the snapshot is
    /// below it (an elision-only result only when the cost policy would take one at the
    /// trigger, not whenever it gets under the trigger).
    pub ahead_of_trigger: bool,
    /// What the pass's summarizer may know of the request that runs it (the agent's
    /// request for the cache-reading summary, a client's key): handed to every
    /// [`Summarizer::summarize_in`] call of the pass. Empty by default.
    pub pass: PassContext,
}

impl CompactOptions {
    /// No overrides: the configured target, the compactor's counter, never cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Aims at `target` tokens instead of the configured target (`None`: the configured).
    pub fn with_target(mut self, target: Option<usize>) -> Self {
        self.target = target;
        self
    }

    /// Counts every count of the pass with `counter` instead of the compactor's.
    pub fn with_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = Some(counter);
        self
    }

    /// Cancels the pass's waits and summarizer calls when `cancel` is cancelled.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// An extra instruction for the summarizer (a `String`, or `None` for none).
    pub fn with_focus(mut self, focus: impl Into<Option<String>>) -> Self {
        self.focus = focus.into();
        self
    }

    /// Decides as the pass at the trigger would (a pass prepared ahead of it).
    pub fn with_ahead_of_trigger(mut self, ahead_of_trigger: bool) -> Self {
        self.ahead_of_trigger = ahead_of_trigger;
        self
    }

    /// Hands `pass` to every summarizer call of the pass.
    pub fn with_pass(mut self, pass: PassContext) -> Self {
        self.pass = pass;
        self
    }
}

impl std::fmt::Debug for CompactOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactOptions")
            .field("target", &self.target)
            .field("counter", &self.counter.as_ref().map(|c| c.name().to_owned()))
            .field("cancelled", &self.cancel.is_cancelled())
            .field("focus", &self.focus)
            .field("ahead_of_trigger", &self.ahead_of_trigger)
            .field("pass", &self.pass)
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

    /// The elision of an eligible result: its stub as planned, or with expansion on
    /// ([`CompactorConfig::expand`]) the stub that names the result's handle and how to
    /// read it back.
    pub(crate) fn elision(
        &self,
        messages: &[crate::message::Message],
        eligible: crate::plan::Eligible,
    ) -> crate::plan::Elision {
        let stub = match messages.get(eligible.index) {
            Some(message) if self.config.expand => crate::plan::expandable_stub_text(
                eligible.chars,
                eligible.tool.as_deref(),
                &crate::plan::handle_of(eligible.index, message),
            ),
            _ => eligible.stub,
        };
        crate::plan::Elision {
            index: eligible.index,
            stub,
        }
    }

    /// The aging rules of the configuration.
    pub fn aging_rules(&self) -> AgingRules {
        AgingRules {
            min_chars: self.config.age_min_chars,
            reclaim_min: self.config.epoch_chars(),
        }
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
