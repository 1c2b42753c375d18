//! [`OptionsOverlay`]: every user-settable compaction option, optional, as data.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::OverlayError;
use crate::compactor::CompactorConfigBuilder;
use crate::count::{TokenCounter, counter_by_name};
use crate::plan::ledger::{LedgerPolicy, PinRules};
use crate::{CompactOptions, Compactor, CompactorConfig, Policy, Summarizer};

/// The context window unless `budget` says otherwise (the CLI's, Python's and Node's
/// default).
pub const DEFAULT_BUDGET: usize = 128_000;

/// The counter unless `counter` names one.
pub const DEFAULT_COUNTER: &str = "o200k";

/// The user-settable options of a compactor and its passes, each `None` meaning "the
/// library's default". Serialized with the fields' names (snake_case); unknown keys are
/// refused.
///
/// ```
/// use llm_compactor::options::OptionsOverlay;
/// let overlay: OptionsOverlay = serde_json::from_str(r#"{"budget": 100000, "policy": "economy"}"#).unwrap();
/// let config = overlay.config().unwrap();
/// assert_eq!((config.trigger(), config.target()), (50_000, 20_000));
/// assert!(serde_json::from_str::<OptionsOverlay>(r#"{"budgett": 1}"#).is_err());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OptionsOverlay {
    /// The context window in tokens ([`DEFAULT_BUDGET`]).
    pub budget: Option<usize>,
    /// The cost policy whose numbers the others override.
    pub policy: Option<Policy>,
    /// See [`CompactorConfig::trigger_ratio`].
    pub trigger_ratio: Option<f64>,
    /// See [`CompactorConfig::target_ratio`].
    pub target_ratio: Option<f64>,
    /// A pass's target in tokens instead of the configured one ([`CompactOptions::target`]).
    pub target: Option<usize>,
    /// See [`CompactorConfig::keep_recent`].
    pub keep_recent: Option<usize>,
    /// See [`CompactorConfig::tool_result_cap`].
    pub tool_result_cap: Option<usize>,
    /// See [`CompactorConfig::age_observations`].
    pub age_observations: Option<bool>,
    /// See [`CompactorConfig::age_min_chars`].
    pub age_min_chars: Option<usize>,
    /// See [`CompactorConfig::age_reclaim_min`].
    pub age_reclaim_min: Option<usize>,
    /// See [`CompactorConfig::max_recent_tokens`].
    pub max_recent_tokens: Option<usize>,
    /// See [`CompactorConfig::max_attempts`].
    pub max_attempts: Option<u32>,
    /// See [`CompactorConfig::summary_max_tokens`]; given, it is a cap (no doubled retry
    /// after a truncation: [`CompactorConfig::expand_truncated`] off).
    pub summary_max_tokens: Option<u32>,
    /// See [`CompactorConfig::expand`].
    pub expand: Option<bool>,
    /// The token counter by name ([`counter_by_name`]; `o200k` unless named).
    pub counter: Option<String>,
    /// The ledger's [`LedgerPolicy::max_tokens`]; 0 turns the ledger off.
    pub ledger_max_tokens: Option<usize>,
    /// Extra instruction for the summarizer ([`CompactOptions::focus`]).
    pub focus: Option<String>,
    /// The summarizer by name: `ledger` (the default), `none`, `exec`, `openai`,
    /// `anthropic` ([`OptionsOverlay::summarizer`]).
    pub summarizer: Option<String>,
    /// The model an HTTP summarizer asks.
    pub model: Option<String>,
    /// An HTTP summarizer's base URL.
    pub base_url: Option<String>,
    /// The environment variable holding an HTTP summarizer's key.
    pub api_key_env: Option<String>,
    /// Input room of one HTTP summarizer request, in tokens.
    pub summarizer_context: Option<usize>,
    /// The command of the `exec` summarizer.
    pub summarizer_cmd: Option<String>,
    /// Seconds before a summarizer call is abandoned (positive).
    pub summarizer_timeout: Option<f64>,
    /// Budgets at the door on or off ([`OptionsOverlay::door_rules`]; absent: on when a
    /// `door_*` number is given).
    pub door: Option<bool>,
    /// The door's cap of every tool's result, in tokens.
    pub door_tool_cap: Option<usize>,
    /// The door's caps by tool name, in tokens.
    pub door_tool_cap_for: Option<std::collections::BTreeMap<String, usize>>,
    /// The door's preview length, in chars.
    pub door_preview_chars: Option<usize>,
    /// Media the door keeps, the newest first.
    pub door_keep_media: Option<usize>,
    /// The door's byte ceiling of a request.
    pub door_max_request_bytes: Option<usize>,
    /// Pins by pattern: user messages matching any of these regular expressions are
    /// kept whole in the ledger's pinned section ([`crate::plan::ledger::PinRules`]).
    pub pin_patterns: Option<Vec<String>>,
    /// Pins by tool name: these tools' results are kept whole.
    pub pin_tools: Option<Vec<String>>,
    /// Pins by message id: these messages are kept whole.
    pub pin_ids: Option<Vec<String>>,
}

impl OptionsOverlay {
    /// Every option absent (the library's defaults).
    pub fn new() -> OptionsOverlay {
        OptionsOverlay::default()
    }

    /// `builder` with every option given here set on it (the policy first, so that the
    /// numbers given override the policy's).
    pub fn apply(&self, mut builder: CompactorConfigBuilder) -> CompactorConfigBuilder {
        if let Some(v) = self.policy {
            builder = builder.policy(v);
        }
        if let Some(v) = self.age_observations {
            builder = builder.age_observations(v);
        }
        if let Some(v) = self.trigger_ratio {
            builder = builder.trigger_ratio(v);
        }
        if let Some(v) = self.target_ratio {
            builder = builder.target_ratio(v);
        }
        if let Some(v) = self.keep_recent {
            builder = builder.keep_recent(v);
        }
        if let Some(v) = self.tool_result_cap {
            builder = builder.tool_result_cap(v);
        }
        if let Some(v) = self.age_min_chars {
            builder = builder.age_min_chars(v);
        }
        if let Some(v) = self.age_reclaim_min {
            builder = builder.age_reclaim_min(v);
        }
        if let Some(v) = self.max_recent_tokens {
            builder = builder.max_recent_tokens(v);
        }
        if let Some(v) = self.max_attempts {
            builder = builder.max_attempts(v);
        }
        if let Some(v) = self.summary_max_tokens {
            builder = builder.summary_max_tokens(v).expand_truncated(false);
        }
        if let Some(v) = self.expand {
            builder = builder.expand(v);
        }
        builder
    }

    /// The validated configuration: [`OptionsOverlay::apply`] onto the builder of
    /// `budget` ([`DEFAULT_BUDGET`] unless given).
    ///
    /// # Errors
    /// [`OverlayError::Config`] for an invalid combination, [`OverlayError::ZeroTarget`]
    /// for a `target` of 0.
    pub fn config(&self) -> Result<CompactorConfig, OverlayError> {
        let mut builder = self.apply(CompactorConfig::builder(self.budget.unwrap_or(DEFAULT_BUDGET)));
        if self.target == Some(0) {
            return Err(OverlayError::ZeroTarget);
        }
        if let Some(rules) = self.door_rules()? {
            builder = builder.door(rules);
        }
        self.pin_rules().compile()?;
        Ok(builder.build()?)
    }

    /// The named counter (`o200k` unless named).
    ///
    /// # Errors
    /// [`OverlayError::Counter`] for an unknown counter or one this build leaves out.
    pub fn counter(&self) -> Result<Arc<dyn TokenCounter>, OverlayError> {
        Ok(counter_by_name(self.counter.as_deref().unwrap_or(DEFAULT_COUNTER))?)
    }

    /// The ledger's policy (`None`: the ledger off, `ledger_max_tokens` 0), with the
    /// pins given ([`OptionsOverlay::config`] refuses a pattern that does not parse).
    pub fn ledger(&self) -> Option<LedgerPolicy> {
        match self.ledger_max_tokens {
            Some(0) => None,
            max => {
                let mut policy = LedgerPolicy::default();
                if let Some(max) = max {
                    policy.max_tokens = max;
                }
                policy.rules.pins = self.pin_rules();
                Some(policy)
            }
        }
    }

    /// The pins given (by pattern, tool name, message id).
    pub fn pin_rules(&self) -> PinRules {
        let mut rules = PinRules::new();
        for pattern in self.pin_patterns.iter().flatten() {
            rules = rules.pattern(pattern.clone());
        }
        for tool in self.pin_tools.iter().flatten() {
            rules = rules.tool(tool.clone());
        }
        for id in self.pin_ids.iter().flatten() {
            rules = rules.id(id.clone());
        }
        rules
    }

    /// The compactor of `config` (from [`OptionsOverlay::config`], perhaps adjusted by
    /// the caller), counting with `counter`, with this overlay's ledger and `summarizer`.
    pub fn compactor_of(
        &self,
        config: CompactorConfig,
        counter: Arc<dyn TokenCounter>,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Compactor {
        let mut compactor = Compactor::new(config, counter);
        if let Some(policy) = self.ledger() {
            compactor = compactor.with_ledger(policy);
        }
        if let Some(summarizer) = summarizer {
            compactor = compactor.with_summarizer(summarizer);
        }
        compactor
    }

    /// The compactor these options describe, counting with `counter`, summarizing with
    /// `summarizer` (see [`OptionsOverlay::summarizer`] for one by name).
    ///
    /// # Errors
    /// As [`OptionsOverlay::config`].
    pub fn compactor(
        &self,
        counter: Arc<dyn TokenCounter>,
        summarizer: Option<Arc<dyn Summarizer>>,
    ) -> Result<Compactor, OverlayError> {
        Ok(self.compactor_of(self.config()?, counter, summarizer))
    }

    /// A pass's options: `target` and `focus`.
    pub fn pass_options(&self) -> CompactOptions {
        CompactOptions::new()
            .with_target(self.target)
            .with_focus(self.focus.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlay(json: &str) -> OptionsOverlay {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn absent_options_are_the_builders_defaults() {
        let config = OptionsOverlay::new().config().unwrap();
        assert_eq!(config, CompactorConfig::builder(DEFAULT_BUDGET).build().unwrap());
        assert_eq!(OptionsOverlay::new().ledger(), Some(LedgerPolicy::default()));
        assert_eq!(
            OptionsOverlay::new().counter().unwrap().name(),
            counter_by_name("o200k").unwrap().name()
        );
    }

    #[test]
    fn the_policy_goes_first_and_the_numbers_override_it() {
        let tuned = overlay(r#"{"budget": 100000, "policy": "economy", "trigger_ratio": 0.6}"#)
            .config()
            .unwrap();
        assert_eq!((tuned.trigger(), tuned.target()), (60_000, 20_000));
        assert_eq!(tuned.policy, Policy::Economy);
    }

    #[test]
    fn a_summary_budget_is_a_cap_and_zero_ledger_is_off() {
        let config = overlay(r#"{"summary_max_tokens": 512}"#).config().unwrap();
        assert_eq!((config.summary_max_tokens, config.expand_truncated), (512, false));
        assert_eq!(overlay(r#"{"ledger_max_tokens": 0}"#).ledger(), None);
        assert_eq!(overlay(r#"{"ledger_max_tokens": 99}"#).ledger().unwrap().max_tokens, 99);
        assert!(overlay(r#"{"expand": true}"#).config().unwrap().expand);
    }

    #[test]
    fn refusals_name_the_option() {
        let ratio = overlay(r#"{"trigger_ratio": 0.3, "target_ratio": 0.5}"#)
            .config()
            .unwrap_err();
        assert_eq!(ratio.option(), Some("target_ratio"));
        assert!(ratio.to_string().starts_with("invalid configuration: "), "{ratio}");
        let target = overlay(r#"{"target": 0}"#).config().unwrap_err();
        assert_eq!(target.option(), Some("target"));
        let counter = overlay(r#"{"counter": "nope"}"#).counter().err().unwrap();
        assert_eq!(counter.option(), Some("counter"));
        let unknown = serde_json::from_str::<OptionsOverlay>(r#"{"budgett": 1}"#).unwrap_err();
        assert!(unknown.to_string().contains("budgett"), "{unknown}");
    }

    #[test]
    fn pass_options_carry_target_and_focus() {
        let pass = overlay(r#"{"target": 900, "focus": "the parser"}"#).pass_options();
        assert_eq!((pass.target, pass.focus.as_deref()), (Some(900), Some("the parser")));
    }
}
