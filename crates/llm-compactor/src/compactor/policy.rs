//! [`Policy`]: the named trade-off between what the agent keeps and what it pays.
//!
//! Issue 33 took the decision two earlier issues asked for. The **default** policy never
//! drops context below the trigger unless the cost policy expects the run to live long
//! enough to collect the epoch's saving (the break-even gate, with the horizon discounted
//! by the run's own length): it is held to the strategies that keep at least as much
//! (no management, clearing old tool uses, summarizing at a threshold). **Economy** is
//! for users who price tokens first: the measured optimum trigger and target (0.5 /
//! 0.2 in the defaults sweep) plus the masking of old observations below the trigger,
//! batched in cache-friendly epochs as SWE-agent batches its masks, and still gated by
//! the break-even rule. It is held to the cheapest of every strategy, lossy ones
//! included; BENCHMARKS.md shows beside every cost how much of the middle each drops.
//!
//! Each policy's numbers live here, beside it: the default policy's are the
//! `DEFAULT_*` constants (the configuration starts from them), economy's the
//! `ECONOMY_*` ones.
//!
//! A policy is a starting point for the builder: it sets the numbers below, and any
//! setter called after [`CompactorConfigBuilder::policy`](super::CompactorConfigBuilder::policy)
//! still overrides them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::plan::CostPolicy;

/// The default [`CompactorConfig::trigger_ratio`](super::CompactorConfig::trigger_ratio)
/// (0.7, from the defaults sweep).
pub const DEFAULT_TRIGGER_RATIO: f64 = 0.7;

/// The default [`CompactorConfig::target_ratio`](super::CompactorConfig::target_ratio)
/// (0.4, the seed's).
pub const DEFAULT_TARGET_RATIO: f64 = 0.4;

/// The default [`CompactorConfig::keep_recent`](super::CompactorConfig::keep_recent)
/// (6, the seed's).
pub const DEFAULT_KEEP_RECENT: usize = 6;

/// The default [`CompactorConfig::age_min_chars`](super::CompactorConfig::age_min_chars)
/// (2048, the seed's).
pub const DEFAULT_AGE_MIN_CHARS: usize = 2048;

/// Economy's trigger ratio: the cheapest trigger of the defaults sweep (0.5 against the
/// default's 0.7; BENCHMARKS.md, "Lower triggers").
pub const ECONOMY_TRIGGER_RATIO: f64 = 0.5;

/// Economy's target ratio: the cheapest target at that trigger in the sweep.
pub const ECONOMY_TARGET_RATIO: f64 = 0.2;

/// Economy's epoch as a share of the budget: 0.001 (the default's is 0.096), so the
/// pool floor and the trailing grace are a few hundred chars and *when* to mask is left
/// to the break-even gate alone: a batch is masked as soon as its saving over the run's
/// expected life pays for the cache it rewrites. Measured on ../shared (issue 33's
/// economy sweep, BENCHMARKS.md): cheaper than 0.05, 0.02, 0.01, 0.005 and 0.002 at every
/// window and pricing, most at 128k.
pub const ECONOMY_EPOCH_RATIO: f64 = 0.001;

/// Economy's size floor for masking an old observation, in chars: every observation but
/// a line or two is masked once old (SWE-agent masks all of them); the default's floor
/// is 2,048. 128 measured cheaper than 256, 512 and 2,048.
pub const ECONOMY_MIN_CHARS: usize = 128;

/// Economy's horizon cap in requests: the default's 20 (40 measured dearer at 128k).
pub const ECONOMY_EXPECTED_REMAINING_ROUNDS: u32 = crate::plan::policy::DEFAULT_EXPECTED_REMAINING_ROUNDS;

/// Economy's recent window in messages: 4 (the default's 6), measured cheaper at every
/// setting of the economy sweep.
pub const ECONOMY_KEEP_RECENT: usize = 4;

/// A named cost policy of the compactor.
///
/// ```
/// use llm_compactor::{CompactorConfig, Policy};
/// let economy = CompactorConfig::builder(100_000).policy(Policy::Economy).build().unwrap();
/// assert_eq!((economy.trigger(), economy.target()), (50_000, 20_000));
/// assert_eq!(economy.policy, Policy::Economy);
/// let default = CompactorConfig::builder(100_000).build().unwrap();
/// assert_eq!(default.policy, Policy::Default);
/// assert_eq!("economy".parse::<Policy>().unwrap(), Policy::Economy);
/// assert!("cheap".parse::<Policy>().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Keep context below the trigger unless an epoch is expected to pay within the
    /// run's expected life; trigger 0.7, target 0.4.
    #[default]
    Default,
    /// Price tokens first: trigger 0.5, target 0.2, and old observations masked below
    /// the trigger in gated, cache-friendly epochs.
    Economy,
}

impl Policy {
    /// Every policy, in the order the CLI lists them.
    pub const ALL: [Policy; 2] = [Policy::Default, Policy::Economy];

    /// The policy's name (`default`, `economy`).
    pub fn name(self) -> &'static str {
        match self {
            Policy::Default => "default",
            Policy::Economy => "economy",
        }
    }

    /// `(trigger_ratio, target_ratio)` of the policy.
    pub fn ratios(self) -> (f64, f64) {
        match self {
            Policy::Default => (DEFAULT_TRIGGER_RATIO, DEFAULT_TARGET_RATIO),
            Policy::Economy => (ECONOMY_TRIGGER_RATIO, ECONOMY_TARGET_RATIO),
        }
    }

    /// The policy's recent window in messages.
    pub fn keep_recent(self) -> usize {
        match self {
            Policy::Default => DEFAULT_KEEP_RECENT,
            Policy::Economy => ECONOMY_KEEP_RECENT,
        }
    }

    /// The policy's aging size floor in chars.
    pub fn age_min_chars(self) -> usize {
        match self {
            Policy::Default => DEFAULT_AGE_MIN_CHARS,
            Policy::Economy => ECONOMY_MIN_CHARS,
        }
    }

    /// The policy's cost policy.
    pub fn cost_policy(self) -> CostPolicy {
        match self {
            Policy::Default => CostPolicy::default(),
            Policy::Economy => CostPolicy {
                epoch_ratio: Some(ECONOMY_EPOCH_RATIO),
                expected_remaining_rounds: ECONOMY_EXPECTED_REMAINING_ROUNDS,
                ..CostPolicy::default()
            },
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name that is not `default` or `economy`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy {0:?} (expected default or economy)")]
pub struct UnknownPolicy(pub String);

impl FromStr for Policy {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s.trim())
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serde_uses_them() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>().unwrap(), p);
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.name()));
        }
        assert_eq!(
            "Economy".parse::<Policy>().unwrap_err().to_string(),
            "unknown policy \"Economy\" (expected default or economy)"
        );
    }

    #[test]
    fn economy_masks_more_and_sooner() {
        let (d, e) = (Policy::Default, Policy::Economy);
        assert!(e.ratios().0 < d.ratios().0 && e.ratios().1 < d.ratios().1);
        assert!(e.age_min_chars() < d.age_min_chars());
        assert!(e.keep_recent() < d.keep_recent());
        assert!(e.cost_policy().epoch_ratio < d.cost_policy().epoch_ratio);
        assert!(e.cost_policy().gate_epochs, "economy's epochs are gated too");
    }
}
