//! The two decisions of the cost policy: the break-even gate for an optional elision
//! epoch below the trigger, and the choice of action at the trigger.

use serde::{Deserialize, Serialize};

use super::CostPolicy;
use super::receipt::CostReceipt;
use crate::message::{Message, Role};

/// Whether an elision epoch below the trigger should run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpochDecision {
    /// Its saving over the horizon exceeds the cache write it causes.
    Pays,
    /// It would cost more than it saves: wait (the conversation stays byte-identical, so
    /// the cache is kept).
    DoesNotPay,
    /// The policy does not gate epochs (the seed's rule): run it.
    Ungated,
}

impl EpochDecision {
    /// True when the epoch should run.
    pub fn runs(self) -> bool {
        !matches!(self, EpochDecision::DoesNotPay)
    }
}

/// What a pass at (over) the trigger does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerAction {
    /// Stubbing old results alone lands at or under the goal: one cache break, no
    /// summarizer call.
    ElideOnly,
    /// Stubbing alone does not reach the goal: stub and summarize in this same pass
    /// (one cache break, not an epoch now and a summary next round).
    ElideAndSummarize,
}

/// The break-even gate: an epoch below the trigger runs only when its receipt (computed
/// over the horizon of [`horizon`]) shows a net saving.
///
/// ```
/// use llm_compactor::plan::{CostPolicy, CostReceipt, EpochDecision};
/// use llm_compactor::plan::policy::{ReceiptInput, decide_epoch};
/// let policy = CostPolicy::default();
/// // Rewrites 20k of cache to save 2k per round for 5 rounds: does not pay.
/// let small = CostReceipt::compute(&ReceiptInput { tokens_before: 24_000, tokens_after: 22_000,
///     cached_prefix_kept: 2_000, rounds: 5, ..ReceiptInput::default() }, &policy);
/// assert_eq!(decide_epoch(&small, &policy), EpochDecision::DoesNotPay);
/// // Halves a 100k conversation late in its cache for 20 rounds: pays.
/// let big = CostReceipt::compute(&ReceiptInput { tokens_before: 100_000, tokens_after: 50_000,
///     cached_prefix_kept: 40_000, rounds: 20, ..ReceiptInput::default() }, &policy);
/// assert_eq!(decide_epoch(&big, &policy), EpochDecision::Pays);
/// ```
pub fn decide_epoch(receipt: &CostReceipt, policy: &CostPolicy) -> EpochDecision {
    if !policy.gate_epochs {
        EpochDecision::Ungated
    } else if receipt.pays() {
        EpochDecision::Pays
    } else {
        EpochDecision::DoesNotPay
    }
}

/// The action of a pass at the trigger whose stubbing alone would leave `aged_tokens`:
/// elision only when that is at or under `target` (or, with the seed's rule,
/// `trigger`).
///
/// ```
/// use llm_compactor::plan::{CostPolicy, TriggerAction};
/// use llm_compactor::plan::policy::choose_at_trigger;
/// let p = CostPolicy::default();
/// assert_eq!(choose_at_trigger(40, 40, 80, &p), TriggerAction::ElideOnly);
/// assert_eq!(choose_at_trigger(79, 40, 80, &p), TriggerAction::ElideAndSummarize);
/// assert_eq!(choose_at_trigger(79, 40, 80, &CostPolicy::seed()), TriggerAction::ElideOnly);
/// ```
pub fn choose_at_trigger(aged_tokens: usize, target: usize, trigger: usize, policy: &CostPolicy) -> TriggerAction {
    let goal = if policy.elide_only_to_target { target } else { trigger };
    if aged_tokens <= goal {
        TriggerAction::ElideOnly
    } else {
        TriggerAction::ElideAndSummarize
    }
}

/// How many requests until a conversation of `tokens`, growing by `growth` tokens a
/// request, goes over `trigger` (at least 1; `u32::MAX` when it does not grow).
///
/// ```
/// use llm_compactor::plan::policy::rounds_until;
/// assert_eq!(rounds_until(100, 40, 20), 3);
/// assert_eq!(rounds_until(100, 120, 20), 1);
/// assert_eq!(rounds_until(100, 40, 0), u32::MAX);
/// ```
pub fn rounds_until(trigger: usize, tokens: usize, growth: usize) -> u32 {
    if growth == 0 {
        return u32::MAX;
    }
    let left = trigger.saturating_sub(tokens);
    u32::try_from(left.div_ceil(growth)).unwrap_or(u32::MAX).max(1)
}

/// The conversation's own growth per request so far: its tokens over its assistant
/// turns (each assistant turn ended one request).
pub fn growth_per_round(messages: &[Message], tokens: usize) -> usize {
    let turns = messages.iter().filter(|m| m.role == Role::Assistant).count();
    tokens / turns.max(1)
}

/// [`horizon`] of a conversation of `tokens` with `assistant_turns` assistant turns
/// (what [`growth_per_round`] reads of the messages), for a caller that keeps the count.
pub fn horizon_of_turns(policy: &CostPolicy, assistant_turns: usize, tokens: usize, trigger: usize) -> u32 {
    let growth = tokens / assistant_turns.max(1);
    let rounds = rounds_until(trigger, tokens, growth).min(policy.expected_remaining_rounds);
    if policy.discount_by_run_length {
        survival_discounted(rounds, assistant_turns)
    } else {
        rounds
    }
}

/// The requests an epoch can expect to serve out of `rounds`, when the run has lived
/// `age` requests and may end at any of them: the first request (the one that pays the
/// cache write) plus each later one weighted by the chance the run is still alive then.
///
/// Nothing tells the gate how long a run will last, only how long it has lasted. The
/// estimate is the Copernican one (a run that has lived `age` requests is still alive
/// after `r` more with probability `age / (age + r)`), so a young run is discounted hard
/// and an old one barely. A plain cap counted all of `rounds` as certain, which let an
/// epoch through on a 128k run that ended before the epoch's saving was collected
/// (+0.04% over doing nothing; issue 33). Measured on ../shared against bounding the
/// horizon by a third, a half or all of `age`: the cheapest at every window and
/// pricing, and no run where nothing passes the trigger bills over `none`.
///
/// ```
/// use llm_compactor::plan::policy::survival_discounted;
/// assert_eq!(survival_discounted(20, 3), 6);
/// assert_eq!(survival_discounted(20, 200), 19);
/// assert_eq!(survival_discounted(1, 0), 1);
/// ```
pub fn survival_discounted(rounds: u32, age: usize) -> u32 {
    let age = age.max(1) as f64;
    let later: f64 = (1..rounds).map(|r| age / (age + f64::from(r))).sum();
    1 + later.floor() as u32
}

/// The horizon of an optional epoch: the requests it would serve before the conversation,
/// left alone, reaches the trigger (after which a compaction rewrites the cache anyway),
/// capped by [`CostPolicy::expected_remaining_rounds`] and, with
/// [`CostPolicy::discount_by_run_length`], by the run's own length
/// ([`survival_discounted`]).
pub fn horizon(policy: &CostPolicy, messages: &[Message], tokens: usize, trigger: usize) -> u32 {
    let turns = messages.iter().filter(|m| m.role == Role::Assistant).count();
    horizon_of_turns(policy, turns, tokens, trigger)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::policy::ReceiptInput;

    fn receipt(before: usize, after: usize, kept: usize, rounds: u32) -> CostReceipt {
        CostReceipt::compute(
            &ReceiptInput {
                tokens_before: before,
                tokens_after: after,
                cached_prefix_kept: kept,
                rounds,
                ..ReceiptInput::default()
            },
            &CostPolicy::default(),
        )
    }

    #[test]
    fn an_epoch_near_the_top_of_the_cache_does_not_pay_over_a_short_horizon() {
        // The measured case: keep 4k of 24k cached, reclaim ~3k, a few rounds to go.
        let r = receipt(24_000, 21_000, 4_000, 5);
        assert_eq!(decide_epoch(&r, &CostPolicy::default()), EpochDecision::DoesNotPay);
        assert!(r.net_cost > 0.0);
    }

    #[test]
    fn the_same_epoch_pays_over_a_long_horizon() {
        let r = receipt(24_000, 12_000, 4_000, 40);
        assert_eq!(decide_epoch(&r, &CostPolicy::default()), EpochDecision::Pays);
    }

    #[test]
    fn the_seed_policy_does_not_gate() {
        let r = receipt(24_000, 21_000, 4_000, 1);
        assert_eq!(decide_epoch(&r, &CostPolicy::seed()), EpochDecision::Ungated);
        assert!(EpochDecision::Ungated.runs() && !EpochDecision::DoesNotPay.runs());
    }

    #[test]
    fn at_the_trigger_elision_only_must_reach_the_target() {
        let p = CostPolicy::default();
        assert_eq!(choose_at_trigger(51_200, 51_200, 102_400, &p), TriggerAction::ElideOnly);
        assert_eq!(
            choose_at_trigger(51_201, 51_200, 102_400, &p),
            TriggerAction::ElideAndSummarize
        );
        let seed = CostPolicy::seed();
        assert_eq!(
            choose_at_trigger(102_400, 51_200, 102_400, &seed),
            TriggerAction::ElideOnly
        );
        assert_eq!(
            choose_at_trigger(102_401, 51_200, 102_400, &seed),
            TriggerAction::ElideAndSummarize
        );
    }

    #[test]
    fn the_horizon_is_capped_by_growth_and_by_config() {
        let msgs = vec![
            Message::user("u"),
            Message::assistant("a"),
            Message::user("u"),
            Message::assistant("a"),
        ];
        // 2 turns, 20k tokens: 10k a round; 5k to the trigger: 1 round.
        assert_eq!(horizon(&CostPolicy::default(), &msgs, 20_000, 25_000), 1);
        // Far from the trigger: the configured cap, discounted by the run's short life.
        assert_eq!(horizon(&CostPolicy::default(), &msgs, 20_000, 10_000_000), 5);
        let undiscounted = CostPolicy {
            discount_by_run_length: false,
            ..CostPolicy::default()
        };
        assert_eq!(horizon(&undiscounted, &msgs, 20_000, 10_000_000), 20);
        assert_eq!(growth_per_round(&[], 10), 10);
    }
}
