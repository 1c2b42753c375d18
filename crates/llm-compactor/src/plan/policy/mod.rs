//! The cost policy: when a pass pays for the prompt-cache write it causes.
//!
//! Every pass that changes the conversation rewrites the suffix of the provider's cached
//! prefix from the first changed message on: that suffix is billed as a cache write
//! (1.25x a plain input token on Anthropic) instead of a cache read (0.1x) on the next
//! request. An elision epoch *below* the trigger is optional, so it must earn that write
//! back, through the cheaper reads of the smaller conversation, before the next
//! compaction would have happened anyway ([`decide_epoch`], the break-even gate). A pass
//! *at* the trigger is not optional, so it must land under the target in one cache break
//! ([`choose_at_trigger`]): elision only when that alone reaches the target, otherwise
//! elide and summarize in the same pass, never an epoch now and a summary next round.
//!
//! Every number the rules use is a field of [`CostPolicy`], with its default and the
//! reason for it; the [`CostReceipt`] of a pass shows the arithmetic.

mod gate;
mod receipt;

pub use gate::{
    EpochDecision, TriggerAction, choose_at_trigger, decide_epoch, growth_per_round, horizon, horizon_of_turns,
    rounds_until, survival_discounted,
};
pub use receipt::{CostReceipt, ReceiptInput};

use serde::{Deserialize, Serialize};

use super::pricing::Pricing;

/// Characters per token used to turn a token budget into the char-denominated epoch of
/// the aging rules. Four is the usual English/code average of BPE tokenizers; the epoch
/// is a coarse granularity, so the approximation is harmless.
pub const CHARS_PER_TOKEN: usize = 4;

/// Default [`CostPolicy::expected_remaining_rounds`]: 20 requests. The median
/// mini-swe-agent run in `../shared` has about 40 requests, so a pass in mid-run has about
/// 20 to go; an estimate from the conversation's own growth caps it (see
/// [`rounds_until`]).
pub const DEFAULT_EXPECTED_REMAINING_ROUNDS: u32 = 20;

/// Default [`CostPolicy::epoch_ratio`]: 0.096 of the budget. At the seed's 128k budget
/// this is the seed's 49,152-char epoch (12,288 tokens x 4 chars); at 32k it is 12,288
/// chars, so an epoch stays the same *share* of the window at every size. Kept by the
/// defaults sweep (BENCHMARKS.md): 0.05 was cheaper on the mini-swe-agent runs but broke
/// the prompt cache on tau-bench conversations that never came near the window (two
/// epochs at a third of a 32k window, 0.1% dearer than doing nothing).
pub const DEFAULT_EPOCH_RATIO: f64 = 0.096;

/// Default [`CostPolicy::summarizer_price`]: 1.0, the summarizer is billed like the
/// agent's own model (the conservative assumption; a cheap summarizer model makes a
/// summary cheaper, never dearer).
pub const DEFAULT_SUMMARIZER_PRICE: f64 = 1.0;

/// The numbers of the cost policy.
///
/// ```
/// use llm_compactor::plan::{CostPolicy, Pricing};
/// let policy = CostPolicy::default();
/// assert_eq!(policy.pricing, Pricing::ANTHROPIC);
/// assert_eq!(policy.epoch_chars(128_000, 49_152), 49_152);
/// assert_eq!(policy.epoch_chars(32_000, 49_152), 12_288);
/// assert_eq!(CostPolicy::seed().epoch_chars(32_000, 49_152), 49_152);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostPolicy {
    /// The provider's prices the decisions and receipts are made with (a preset, stored
    /// by name). Default `anthropic`: its cache-write premium makes it the strictest.
    #[serde(with = "pricing_by_name")]
    pub pricing: Pricing,
    /// How many more requests a pass is expected to serve, at most (the horizon over
    /// which an epoch's saving is counted). Default
    /// [`DEFAULT_EXPECTED_REMAINING_ROUNDS`].
    pub expected_remaining_rounds: u32,
    /// Gate elision epochs below the trigger on their net saving ([`decide_epoch`]).
    /// Default true. False is the seed's rule: an epoch whenever the pool is full.
    pub gate_epochs: bool,
    /// At the trigger, accept an elision-only pass only when it lands at or under the
    /// target ([`choose_at_trigger`]). Default true. False is the seed's rule: an
    /// elision-only pass is accepted at or under the trigger, which makes the very next
    /// rounds summarize anyway (two cache breaks instead of one).
    pub elide_only_to_target: bool,
    /// The epoch (aging's reclaimable-pool floor and trailing grace) as a share of the
    /// budget, converted to chars at [`CHARS_PER_TOKEN`]; `None` uses
    /// `CompactorConfig::age_reclaim_min` as an absolute char count. Default
    /// `Some(`[`DEFAULT_EPOCH_RATIO`]`)`.
    pub epoch_ratio: Option<f64>,
    /// The summarizer's price relative to the agent model's (1.0: the same model; 0.1:
    /// a model ten times cheaper). Only receipts use it. Default
    /// [`DEFAULT_SUMMARIZER_PRICE`].
    pub summarizer_price: f64,
    /// Discount the horizon by the run's own length so far ([`survival_discounted`]): a
    /// run may end before an epoch's saving is collected, and a young run is likelier
    /// to. Default true (issue 33: without it an epoch fired on a 128k run that ended
    /// before it paid).
    pub discount_by_run_length: bool,
}

impl Default for CostPolicy {
    fn default() -> Self {
        CostPolicy {
            pricing: Pricing::ANTHROPIC,
            expected_remaining_rounds: DEFAULT_EXPECTED_REMAINING_ROUNDS,
            gate_epochs: true,
            elide_only_to_target: true,
            epoch_ratio: Some(DEFAULT_EPOCH_RATIO),
            summarizer_price: DEFAULT_SUMMARIZER_PRICE,
            discount_by_run_length: true,
        }
    }
}

impl CostPolicy {
    /// The seed's behaviour: no gate, elision-only accepted under the trigger, the
    /// absolute epoch. For tests of the seed's rules and for comparison.
    pub fn seed() -> Self {
        CostPolicy {
            gate_epochs: false,
            elide_only_to_target: false,
            epoch_ratio: None,
            discount_by_run_length: false,
            ..CostPolicy::default()
        }
    }

    /// The epoch in chars for this budget: `epoch_ratio x budget x` [`CHARS_PER_TOKEN`]
    /// (at least 1), or `absolute` when `epoch_ratio` is `None`.
    pub fn epoch_chars(&self, budget: usize, absolute: usize) -> usize {
        match self.epoch_ratio {
            Some(ratio) => ((budget as f64 * ratio).ceil() as usize * CHARS_PER_TOKEN).max(1),
            None => absolute,
        }
    }

    /// A reason this policy is unusable, if any (the configuration's validation calls it).
    pub fn problem(&self) -> Option<String> {
        if let Some(ratio) = self.epoch_ratio
            && !(ratio > 0.0 && ratio <= 1.0)
        {
            return Some(format!("cost_policy.epoch_ratio must be in (0, 1], got {ratio}"));
        }
        if !(self.summarizer_price.is_finite() && self.summarizer_price >= 0.0) {
            return Some(format!(
                "cost_policy.summarizer_price must be a finite number >= 0, got {}",
                self.summarizer_price
            ));
        }
        if self.expected_remaining_rounds == 0 {
            return Some("cost_policy.expected_remaining_rounds must be at least 1".into());
        }
        None
    }
}

/// Serializes a [`Pricing`] as its preset name.
mod pricing_by_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Pricing;

    pub(super) fn serialize<S: Serializer>(pricing: &Pricing, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(pricing.name)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pricing, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_scales_with_the_budget() {
        let p = CostPolicy::default();
        assert_eq!(p.epoch_chars(128_000, 1), 49_152);
        assert_eq!(p.epoch_chars(64_000, 1), 24_576);
        assert_eq!(CostPolicy::seed().epoch_chars(32_000, 49_152), 49_152);
    }

    #[test]
    fn unusable_policies_are_named() {
        let bad = CostPolicy {
            epoch_ratio: Some(0.0),
            ..CostPolicy::default()
        };
        assert!(bad.problem().unwrap().contains("epoch_ratio"));
        let bad = CostPolicy {
            summarizer_price: f64::NAN,
            ..CostPolicy::default()
        };
        assert!(bad.problem().unwrap().contains("summarizer_price"));
        assert!(CostPolicy::default().problem().is_none());
    }

    #[test]
    fn serde_stores_the_pricing_by_name() {
        let json = serde_json::to_string(&CostPolicy::default()).unwrap();
        assert!(json.contains("\"pricing\":\"anthropic\""), "{json}");
        let back: CostPolicy = serde_json::from_str(&json).unwrap();
        assert_eq!(back, CostPolicy::default());
        assert!(serde_json::from_str::<CostPolicy>(r#"{"pricing":"nope"}"#).is_err());
    }
}
