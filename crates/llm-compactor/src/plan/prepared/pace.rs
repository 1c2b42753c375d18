//! When to start a prepared pass, from the session's own pace.
//!
//! A prepared pass must be finished before the request that needs it: the first one over
//! the hard limit (the budget, or the backend's room) is the only request that waits.
//! A fixed threshold (start at 65% of the budget) serves a session that grows a few
//! hundred tokens a round; one whose tool outputs add thousands of tokens a round
//! reaches the hard limit before a five-second summary started at 65% is ready, and
//! that round waits for it. So the threshold is computed from what the session shows:
//!
//! - **growth**: tokens a request adds to the one before (rounds where a pass shrank the
//!   conversation are skipped), as the mean of the last few rounds plus the largest of
//!   them (one burst allowance);
//! - **round time**: seconds between consecutive requests (the model's answer plus the
//!   agent's tools), as the median of the last few;
//! - **summary time**: the slowest of the last few passes that ran, or the caller's prior
//!   until one has; times a safety factor.
//!
//! The pass needs `ceil(summary × safety / round)` rounds; the session adds
//! `rounds × mean growth + largest growth` tokens meanwhile; the pass starts that far
//! below the hard limit. The result is clamped between a floor (a share of the budget:
//! a pass started earlier replaces too little to pay for itself) and a ceiling (by
//! default the whole budget). Before two requests have been seen the fixed ratio's
//! threshold is the answer.
//!
//! Why the ceiling is not the fixed ratio (issue 40): a slowly growing session that
//! reaches the ratio (0.65) and ends below the trigger (0.7) paid for a summary never
//! installed: 2 of 50 such mini-swe-agent runs at a 64k window billed up to 1.05 of
//! `none`. With the pace known, a session whose summary is ready in time from the hard
//! limit's side starts no earlier than it must; a request over the trigger starts a pass
//! anyway ([`super::next_step`]), so in practice a slow session starts at the trigger
//! and is installed a few rounds later, before the hard limit. Measured
//! (`scripts/policy-tables.sh`): 0 of those 50 runs over `none` × 1.001, and the default
//! as cheap or cheaper at every window and pricing (0.931 against 0.934 of `none` at 64k).
//!
//! Pure: the shell measures the times (its clock) and hands them in as seconds.

use std::collections::VecDeque;

use super::step::prepare_at;

/// How many recent rounds (and passes) the estimate looks at.
pub const PACE_WINDOW: usize = 8;

/// What a session's pace is made of, as observed by the shell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pace {
    /// The last request seen: its tokens and when it came (seconds on the shell's clock).
    last: Option<(usize, f64)>,
    /// Tokens added by each of the last rounds that grew.
    growth: VecDeque<usize>,
    /// Seconds between each of the last consecutive requests.
    intervals: VecDeque<f64>,
    /// Seconds each of the last passes took.
    summaries: VecDeque<f64>,
}

/// The rule that turns a [`Pace`] into a threshold.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartRule {
    /// The fixed threshold, as a share of the budget: the threshold before the pace is
    /// known (two requests seen).
    pub ratio: f64,
    /// The earliest a pass starts, as a share of the budget.
    pub floor: f64,
    /// Once the pace is known, the latest a pass starts, as a share of the budget
    /// (1.0 by default: a request over the trigger starts one anyway; `ratio` for a
    /// threshold that never moves later).
    pub ceiling: f64,
    /// Seconds a summary is assumed to take before one has been timed.
    pub assumed_summary_secs: f64,
    /// The summary time is multiplied by this (a slow answer, a retry).
    pub safety: f64,
}

impl Pace {
    /// An empty pace (nothing observed).
    pub fn new() -> Self {
        Pace::default()
    }

    /// A request of `tokens` tokens came at `at_secs` (any monotonic origin).
    pub fn observe_request(&mut self, tokens: usize, at_secs: f64) {
        if let Some((before, then)) = self.last {
            if tokens > before {
                push(&mut self.growth, tokens - before);
            }
            let interval = at_secs - then;
            if interval.is_finite() && interval >= 0.0 {
                push(&mut self.intervals, interval);
            }
        }
        self.last = Some((tokens, at_secs));
    }

    /// The request just observed was shrunk by a pass to `tokens` (what went out): the
    /// next request's growth is counted from it.
    pub fn observe_sent(&mut self, tokens: usize) {
        if let Some((_, at)) = self.last {
            self.last = Some((tokens, at));
        }
    }

    /// A pass took `secs` seconds (its summarizer's answer included).
    pub fn observe_summary(&mut self, secs: f64) {
        if secs.is_finite() && secs >= 0.0 {
            push(&mut self.summaries, secs);
        }
    }

    /// The slowest recent pass, if any was timed.
    pub fn summary_secs(&self) -> Option<f64> {
        self.summaries.iter().copied().reduce(f64::max)
    }

    /// The median of the recent round times, if two requests were seen.
    pub fn round_secs(&self) -> Option<f64> {
        if self.intervals.is_empty() {
            return None;
        }
        let mut sorted: Vec<f64> = self.intervals.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        Some(sorted[sorted.len() / 2])
    }

    /// The tokens the session is expected to add over `rounds` rounds: the mean growth
    /// of the recent rounds times `rounds`, plus the largest one (0 when none grew).
    pub fn growth_over(&self, rounds: usize) -> usize {
        if self.growth.is_empty() {
            return 0;
        }
        let total: usize = self.growth.iter().sum();
        let mean = total as f64 / self.growth.len() as f64;
        let largest = self.growth.iter().copied().max().unwrap_or(0);
        (mean * rounds as f64).ceil() as usize + largest
    }
}

fn push<T>(window: &mut VecDeque<T>, value: T) {
    if window.len() == PACE_WINDOW {
        window.pop_front();
    }
    window.push_back(value);
}

impl StartRule {
    /// The rule for a `ratio` before the pace is known, with the default floor (0.35),
    /// ceiling (1.0), prior (10 s) and safety (1.5).
    pub fn new(ratio: f64) -> Self {
        StartRule {
            ratio,
            floor: 0.35,
            ceiling: 1.0,
            assumed_summary_secs: 10.0,
            safety: 1.5,
        }
    }
}

/// The prepare threshold for a session of `budget` tokens whose requests wait over
/// `hard` tokens, given its `pace` (see the module docs).
///
/// ```
/// use llm_compactor::plan::prepared::{Pace, StartRule, start_at};
/// let rule = StartRule::new(0.65);
/// let mut pace = Pace::new();
/// // Nothing observed yet: the fixed threshold.
/// assert_eq!(start_at(10_000, 10_000, &rule, &pace), 6_500);
/// // 2,000 tokens a round, a round a second, a 5 s summary (7.5 s with the safety
/// // factor): 8 rounds of room, 16,000 tokens, plus one 2,000-token burst.
/// for round in 0..4 {
///     pace.observe_request(2_000 * round, round as f64);
/// }
/// pace.observe_summary(5.0);
/// assert_eq!(start_at(40_000, 40_000, &rule, &pace), 40_000 - 18_000);
/// // A fixed rule (the ceiling at the ratio) never starts later than the ratio.
/// let fixed = StartRule { ceiling: 0.65, ..rule };
/// assert_eq!(start_at(100_000, 100_000, &fixed, &pace), 65_000);
/// ```
pub fn start_at(budget: usize, hard: usize, rule: &StartRule, pace: &Pace) -> usize {
    let Some(round) = pace.round_secs() else {
        return prepare_at(budget, rule.ratio);
    };
    let latest = prepare_at(budget, rule.ceiling.max(rule.floor));
    let summary = pace.summary_secs().unwrap_or(rule.assumed_summary_secs).max(0.0) * rule.safety.max(1.0);
    // A round that takes no time would need endless rounds: count at least a millisecond.
    let rounds = (summary / round.max(0.001)).ceil();
    let rounds = if rounds.is_finite() {
        rounds.min(1e6) as usize
    } else {
        1_000_000
    };
    let need = pace.growth_over(rounds);
    let earliest = prepare_at(budget, rule.floor).min(latest);
    hard.saturating_sub(need).clamp(earliest, latest)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn steady(growth: usize, round_secs: f64, rounds: usize) -> Pace {
        let mut pace = Pace::new();
        for i in 0..rounds {
            pace.observe_request(1_000 + growth * i, round_secs * i as f64);
        }
        pace
    }

    #[test]
    fn before_two_requests_the_fixed_ratio_decides() {
        let rule = StartRule::new(0.65);
        let mut pace = Pace::new();
        assert_eq!(start_at(32_000, 32_000, &rule, &pace), 20_800);
        pace.observe_request(5_000, 0.0);
        assert_eq!(start_at(32_000, 32_000, &rule, &pace), 20_800);
    }

    #[test]
    fn a_slow_session_starts_no_earlier_than_its_summary_needs() {
        // 140 tokens a round, 20 s rounds, a 5 s summary: one round (7.5 s) of 140
        // tokens plus a 140 burst below the hard limit, past the trigger: the request
        // over the trigger starts it (issue 40: a run ending under the trigger pays
        // for no summary).
        let rule = StartRule::new(0.65);
        let mut pace = steady(140, 20.0, 6);
        pace.observe_summary(5.0);
        assert_eq!(start_at(32_000, 32_000, &rule, &pace), 32_000 - 280);
        // With the ceiling at the ratio (a fixed threshold): where the ratio is.
        let fixed = StartRule { ceiling: 0.65, ..rule };
        assert_eq!(start_at(32_000, 32_000, &fixed, &pace), 20_800);
    }

    #[test]
    fn a_fast_session_starts_early_enough_for_the_summary() {
        // 3,000 tokens a round, one round a second, a 5 s summary: 8 rounds (7.5 s)
        // add 24,000 + one 3,000 burst.
        let rule = StartRule::new(0.65);
        let mut pace = steady(3_000, 1.0, 5);
        pace.observe_summary(5.0);
        let at = start_at(64_000, 64_000, &rule, &pace);
        assert_eq!(at, 64_000 - 27_000);
        // The unobserved summary is assumed slower (10 s): earlier still, down to the floor.
        let unobserved = steady(3_000, 1.0, 5);
        assert_eq!(start_at(64_000, 64_000, &rule, &unobserved), 22_400);
    }

    #[test]
    fn shrinking_rounds_are_not_growth_and_the_window_forgets() {
        let mut pace = Pace::new();
        pace.observe_request(10_000, 0.0);
        pace.observe_request(4_000, 1.0);
        assert_eq!(pace.growth_over(3), 0);
        for i in 0..20 {
            pace.observe_request(4_000 + 100 * (i + 1), 2.0 + i as f64);
        }
        assert_eq!(pace.growth_over(1), 200);
        pace.observe_sent(1_000);
        pace.observe_request(1_500, 30.0);
        assert_eq!(pace.growth_over(0), 500);
    }

    #[test]
    fn hostile_times_never_panic() {
        let rule = StartRule::new(0.65);
        let mut pace = Pace::new();
        pace.observe_request(1_000, f64::NAN);
        pace.observe_request(5_000, f64::INFINITY);
        pace.observe_request(9_000, 0.0);
        pace.observe_summary(f64::NAN);
        pace.observe_summary(-1.0);
        let at = start_at(10_000, 10_000, &rule, &pace);
        assert!((3_500..=6_500).contains(&at));
    }

    proptest! {
        #[test]
        fn the_threshold_stays_between_floor_and_ceiling(
            budget in 1_000usize..2_000_000,
            hard_share in 0.5f64..1.5,
            ratio in 0.4f64..0.95,
            ceiling in 0.4f64..1.0,
            growth in proptest::collection::vec(0usize..50_000, 0..20),
            intervals in proptest::collection::vec(0.0f64..120.0, 0..20),
            summary in proptest::option::of(0.0f64..600.0),
        ) {
            let rule = StartRule { ceiling, ..StartRule::new(ratio) };
            let mut pace = Pace::new();
            let (mut tokens, mut at) = (0usize, 0.0f64);
            for (g, i) in growth.iter().zip(intervals.iter()) {
                tokens += g;
                at += i;
                pace.observe_request(tokens, at);
            }
            if let Some(s) = summary {
                pace.observe_summary(s);
            }
            let hard = (budget as f64 * hard_share) as usize;
            let threshold = start_at(budget, hard, &rule, &pace);
            if pace.round_secs().is_none() {
                prop_assert_eq!(threshold, prepare_at(budget, ratio));
            } else {
                prop_assert!(threshold <= prepare_at(budget, ceiling.max(rule.floor)));
                prop_assert!(threshold >= prepare_at(budget, rule.floor).min(prepare_at(budget, ceiling.max(rule.floor))));
            }
        }

        #[test]
        fn a_slower_summary_or_faster_growth_never_starts_later(
            growth in 1usize..5_000,
            round in 0.1f64..30.0,
            summary in 0.0f64..60.0,
            extra in 0.0f64..60.0,
        ) {
            let rule = StartRule::new(0.65);
            let mut fast = steady(growth, round, 6);
            let mut slow = fast.clone();
            fast.observe_summary(summary);
            slow.observe_summary(summary + extra);
            let faster_growth = {
                let mut p = steady(growth * 2, round, 6);
                p.observe_summary(summary);
                p
            };
            let at = start_at(100_000, 100_000, &rule, &fast);
            prop_assert!(start_at(100_000, 100_000, &rule, &slow) <= at);
            prop_assert!(start_at(100_000, 100_000, &rule, &faster_growth) <= at);
        }
    }
}
