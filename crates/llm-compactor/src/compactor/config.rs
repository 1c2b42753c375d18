//! [`CompactorConfig`]: the numbers of a compactor, validated once at construction.

use serde::{Deserialize, Serialize};

use super::policy::{DEFAULT_AGE_MIN_CHARS, DEFAULT_KEEP_RECENT, DEFAULT_TARGET_RATIO, DEFAULT_TRIGGER_RATIO, Policy};
use crate::plan::{CostPolicy, DoorRules};

/// An invalid configuration. Construction never panics; it says which setting is wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `context_budget` must be positive.
    #[error("context_budget must be greater than 0")]
    ZeroBudget,
    /// A ratio outside (0, 1].
    #[error("{name} must be in (0, 1], got {value}")]
    RatioOutOfRange {
        /// The setting.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// `target_ratio` must be below `trigger_ratio`, or a compaction would be triggered
    /// again by its own result.
    #[error("target_ratio ({target}) must be less than trigger_ratio ({trigger})")]
    TargetNotBelowTrigger {
        /// target_ratio.
        target: f64,
        /// trigger_ratio.
        trigger: f64,
    },
    /// The cost policy is unusable.
    #[error("{0}")]
    CostPolicy(String),
    /// A count that must be at least 1.
    #[error("{name} must be at least 1")]
    Zero {
        /// The setting.
        name: &'static str,
    },
    /// A combination of settings under which the compactor could never settle (a
    /// compaction needed on every round) or a pass could never make progress.
    #[error("unworkable configuration: {0}")]
    Unworkable(String),
}

/// The compactor's settings (defaults from the spec).
///
/// ```
/// use llm_compactor::CompactorConfig;
/// let config = CompactorConfig::builder(128_000).keep_recent(8).build().unwrap();
/// assert_eq!(config.trigger(), 89_600);
/// assert_eq!(config.target(), 51_200);
/// assert!(CompactorConfig::builder(0).build().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompactorConfig {
    /// The context window in tokens.
    pub context_budget: usize,
    /// Compaction is needed when tokens > ceil(budget x trigger_ratio). Default 0.7 (the
    /// seed's 0.8 until the defaults sweep: 0.7 was cheaper in all 12 mini-swe-agent
    /// settings measured and billed exactly what no management bills on every tau-bench
    /// conversation, see BENCHMARKS.md).
    pub trigger_ratio: f64,
    /// A compaction aims at ceil(budget x target_ratio). Default 0.4.
    pub target_ratio: f64,
    /// Messages kept verbatim at the end (before pair extension). Default 6.
    pub keep_recent: usize,
    /// Cap in chars on each tool result and each tool call's arguments in the
    /// summarizer's input (never in the conversation). Default 2000.
    pub tool_result_cap: usize,
    /// Failed summarizer calls allowed in one pass, in total (default 3): the first
    /// failure is retried after a backoff, and so on, until this many have failed. An
    /// abort-class failure ends summarizing at once. Calls that returned a summary (a
    /// chunk, the single tighten retry, the single doubled-budget retry after a
    /// truncation) are not failures and do not count; every call is in
    /// `CompactionResult::attempts`.
    pub max_attempts: u32,
    /// Stub fat old tool results before summarizing, in epochs gated by the cost policy.
    /// Default true: issue 12's measurements (BENCHMARKS.md) found aging on, with
    /// the cost policy, cheaper than aging off at 32k and 64k on the shared trajectories,
    /// and billing exactly what no management bills where nothing comes near the trigger
    /// (128k). The spec's default was false.
    pub age_observations: bool,
    /// A result must be longer than this (chars) to be stubbed. Default 2048.
    pub age_min_chars: usize,
    /// The absolute epoch size in chars (the reclaimable-pool floor and the trailing
    /// grace), used when the cost policy has no `epoch_ratio`; by default the epoch is
    /// that share of the budget ([`CompactorConfig::epoch_chars`]). Default 49152.
    pub age_reclaim_min: usize,
    /// Output budget of a summary request, in tokens. Default 2048.
    pub summary_max_tokens: u32,
    /// A truncated summary is retried once with a doubled output budget (never above
    /// the backend's [`crate::Summarizer::max_output_tokens`]). Default true. False makes
    /// `summary_max_tokens` a cap: the retry keeps it and asks for a shorter summary
    /// (what an explicit `--summary-max-tokens` means).
    #[serde(default = "default_expand_truncated")]
    pub expand_truncated: bool,
    /// When a pass pays for the cache write it causes (the break-even gate for epochs
    /// below the trigger, elision-only only when it reaches the target, the epoch as a
    /// share of the budget). Default [`CostPolicy::default`]; [`CostPolicy::seed`] is the
    /// seed's behaviour.
    #[serde(default)]
    pub cost_policy: CostPolicy,
    /// Token cap of the recent window: it shrinks to fit (never splitting a call from
    /// its answers, never past the newest user message), and when the newest turn alone
    /// is over it, its biggest tool results are cut head-and-tail with a marker. `None`
    /// (the default) means half the pass's target.
    #[serde(default)]
    pub max_recent_tokens: Option<usize>,
    /// Expansion on: the ledger of every summary names, on each fact's line, the handle
    /// of the message it comes from (see [`crate::plan::handle_of`]), so that the agent
    /// can fetch the original back (`compactor_expand`, [`crate::session::Transcript::expand`]).
    /// Default false: summaries are byte for byte what they were before handles.
    #[serde(default)]
    pub expand: bool,
    /// Budgets at the door (issue 41): with rules, every pass first caps the tool results
    /// over their tool's cap to a head/tail preview and replaces the media beyond the
    /// newest few, or over the request's byte ceiling, by a placeholder, each naming the
    /// handle that reads the original back ([`crate::plan::door()`]); and a request whose
    /// conversation has something for the door is due a pass. `None` (the library's
    /// default): every byte as before. See `docs/budgets-and-instructions.md`.
    #[serde(default)]
    pub door: Option<DoorRules>,
    /// The named policy the numbers started from ([`CompactorConfigBuilder::policy`]);
    /// settings changed after it still apply. Default [`Policy::Default`].
    #[serde(default)]
    pub policy: Policy,
}

fn default_expand_truncated() -> bool {
    true
}

impl CompactorConfig {
    /// A builder with every default and this budget.
    pub fn builder(context_budget: usize) -> CompactorConfigBuilder {
        CompactorConfigBuilder {
            config: CompactorConfig {
                context_budget,
                trigger_ratio: DEFAULT_TRIGGER_RATIO,
                target_ratio: DEFAULT_TARGET_RATIO,
                keep_recent: DEFAULT_KEEP_RECENT,
                tool_result_cap: 2000,
                max_attempts: 3,
                age_observations: true,
                age_min_chars: DEFAULT_AGE_MIN_CHARS,
                age_reclaim_min: 49_152,
                summary_max_tokens: 2048,
                expand_truncated: true,
                cost_policy: CostPolicy::default(),
                max_recent_tokens: None,
                expand: false,
                door: None,
                policy: Policy::Default,
            },
        }
    }

    /// `ceil(budget x trigger_ratio)`.
    pub fn trigger(&self) -> usize {
        ceil_ratio(self.context_budget, self.trigger_ratio)
    }

    /// `ceil(budget x target_ratio)`.
    pub fn target(&self) -> usize {
        ceil_ratio(self.context_budget, self.target_ratio)
    }

    /// The epoch in chars (aging's pool floor and trailing grace): the cost policy's share
    /// of the budget, or `age_reclaim_min` when the policy has no `epoch_ratio`.
    pub fn epoch_chars(&self) -> usize {
        self.cost_policy.epoch_chars(self.context_budget, self.age_reclaim_min)
    }

    /// The recent window's token cap for a pass aiming at `goal` tokens: the configured
    /// cap, else half the goal (at least 1).
    pub fn recent_cap(&self, goal: usize) -> usize {
        self.max_recent_tokens.unwrap_or((goal / 2).max(1))
    }

    /// Checks every rule; the builder calls it.
    ///
    /// # Errors
    /// The first rule broken.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.context_budget == 0 {
            return Err(ConfigError::ZeroBudget);
        }
        for (name, value) in [
            ("trigger_ratio", self.trigger_ratio),
            ("target_ratio", self.target_ratio),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                return Err(ConfigError::RatioOutOfRange { name, value });
            }
        }
        if self.target_ratio >= self.trigger_ratio {
            return Err(ConfigError::TargetNotBelowTrigger {
                target: self.target_ratio,
                trigger: self.trigger_ratio,
            });
        }
        if self.max_attempts == 0 {
            return Err(ConfigError::Zero { name: "max_attempts" });
        }
        if self.tool_result_cap == 0 {
            return Err(ConfigError::Zero {
                name: "tool_result_cap",
            });
        }
        if let Some(problem) = self.cost_policy.problem() {
            return Err(ConfigError::CostPolicy(problem));
        }
        if self.summary_max_tokens == 0 {
            return Err(ConfigError::Zero {
                name: "summary_max_tokens",
            });
        }
        // With a zero epoch, an empty pool already "reaches" it: needs_compaction would
        // be true on every round, even with no tool results at all.
        if self.age_reclaim_min == 0 {
            return Err(ConfigError::Unworkable(
                "age_reclaim_min must be at least 1 (with 0, every round would need a compaction)".into(),
            ));
        }
        if self.age_min_chars == 0 {
            return Err(ConfigError::Unworkable(
                "age_min_chars must be at least 1 (with 0, every tool result, even an empty one, would be aged)".into(),
            ));
        }
        if self.target() >= self.trigger() {
            return Err(ConfigError::Unworkable(format!(
                "the target ({} tokens) must be below the trigger ({} tokens); with a budget of {} the \
                 ratios round to the same count, so a compaction could never get below its own trigger",
                self.target(),
                self.trigger(),
                self.context_budget
            )));
        }
        if let Some(problem) = self.door.as_ref().and_then(DoorRules::problem) {
            return Err(ConfigError::Unworkable(problem));
        }
        match self.max_recent_tokens {
            Some(0) => {
                return Err(ConfigError::Zero {
                    name: "max_recent_tokens",
                });
            }
            Some(cap) if cap >= self.trigger() => {
                return Err(ConfigError::Unworkable(format!(
                    "max_recent_tokens ({cap}) must be below the trigger ({} tokens), or the recent \
                     window alone could keep every round over it",
                    self.trigger()
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

fn ceil_ratio(budget: usize, ratio: f64) -> usize {
    (budget as f64 * ratio).ceil() as usize
}

/// Builds a validated [`CompactorConfig`].
#[derive(Clone, Debug)]
#[must_use]
pub struct CompactorConfigBuilder {
    config: CompactorConfig,
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $ty:ty) => {
        $(#[$doc])*
        pub fn $name(mut self, value: $ty) -> Self {
            self.config.$name = value;
            self
        }
    };
}

impl CompactorConfigBuilder {
    /// Starts from a named [`Policy`]: its trigger and target ratios, its recent window,
    /// its aging size floor and its cost policy (aging on). Call it first: a setter called after it
    /// overrides the policy's number.
    pub fn policy(mut self, policy: Policy) -> Self {
        let (trigger, target) = policy.ratios();
        self.config.trigger_ratio = trigger;
        self.config.target_ratio = target;
        self.config.age_observations = true;
        self.config.age_min_chars = policy.age_min_chars();
        self.config.keep_recent = policy.keep_recent();
        self.config.cost_policy = policy.cost_policy();
        self.config.policy = policy;
        self
    }

    setter!(/// See [`CompactorConfig::trigger_ratio`].
        trigger_ratio: f64);
    setter!(/// See [`CompactorConfig::target_ratio`].
        target_ratio: f64);
    setter!(/// See [`CompactorConfig::keep_recent`].
        keep_recent: usize);
    setter!(/// See [`CompactorConfig::tool_result_cap`].
        tool_result_cap: usize);
    setter!(/// See [`CompactorConfig::max_attempts`].
        max_attempts: u32);
    setter!(/// See [`CompactorConfig::age_observations`].
        age_observations: bool);
    setter!(/// See [`CompactorConfig::age_min_chars`].
        age_min_chars: usize);
    /// See [`CompactorConfig::age_reclaim_min`]. An explicit absolute epoch replaces the
    /// cost policy's relative one (sets `cost_policy.epoch_ratio` to `None`).
    pub fn age_reclaim_min(mut self, value: usize) -> Self {
        self.config.age_reclaim_min = value;
        self.config.cost_policy.epoch_ratio = None;
        self
    }
    setter!(/// See [`CompactorConfig::cost_policy`].
        cost_policy: CostPolicy);
    setter!(/// See [`CompactorConfig::summary_max_tokens`].
        summary_max_tokens: u32);
    setter!(/// See [`CompactorConfig::expand_truncated`].
        expand_truncated: bool);
    setter!(/// See [`CompactorConfig::expand`].
        expand: bool);

    /// See [`CompactorConfig::door`]: budgets at the door, with these rules.
    pub fn door(mut self, rules: DoorRules) -> Self {
        self.config.door = Some(rules);
        self
    }

    /// See [`CompactorConfig::max_recent_tokens`].
    pub fn max_recent_tokens(mut self, value: usize) -> Self {
        self.config.max_recent_tokens = Some(value);
        self
    }

    /// The validated configuration.
    ///
    /// # Errors
    /// See [`CompactorConfig::validate`].
    pub fn build(self) -> Result<CompactorConfig, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}
