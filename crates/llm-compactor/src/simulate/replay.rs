//! Driving a trajectory request by request.
//!
//! A trajectory is replayed as the agent lived it: request k carries the conversation up
//! to (not including) the k-th assistant turn, as the strategy has shaped it, and that
//! assistant turn is the request's output. Messages after the last assistant turn were
//! never sent to the model and are not replayed.
//!
//! The agent's own behaviour is held fixed: every strategy sees the same assistant turns
//! and tool results. That isolates what context management costs from what it does to
//! the agent's decisions (a strategy that hides a result the model needed would, in real
//! life, also change the path; JetBrains' study measures that separately).

use std::sync::Arc;

use crate::count::MemoCounter;
use crate::count::TokenCounter;
use crate::message::{Message, Role};
use crate::plan::{Pricing, Tokens};
use crate::simulate::SimError;
use crate::simulate::report::{RequestTrace, StrategyTotals, TrajectoryReport};
use crate::simulate::strategy::{Env, Strategy, StrategyKind};

/// The fixed parameters of a simulation.
#[derive(Clone)]
pub struct SimConfig {
    /// The context window in tokens (also the engine's budget).
    pub window: usize,
    /// What the provider bills.
    pub pricing: Pricing,
    /// The counter every number is measured with.
    pub counter: Arc<dyn TokenCounter>,
    /// Output tokens each request reserves in the window (the provider rejects a request
    /// whose context plus its `max_tokens` exceeds the window). The CLI's default is
    /// [`DEFAULT_MAX_OUTPUT`].
    pub max_output: usize,
    /// The summarizer's price relative to the agent model's (1.0: the same model; 0.1:
    /// a model ten times cheaper). At exactly 1.0 the summarizer is taken to be the
    /// agent's own model, whose summary request `ours` sends in the cache-reading form
    /// ([`crate::simulate::Env::agent_summarizer`]).
    pub summarizer_price: f64,
}

/// The output reserve `compactor simulate` assumes by default: 4,096 tokens, a common
/// `max_tokens` of agent requests.
pub const DEFAULT_MAX_OUTPUT: usize = 4096;

impl SimConfig {
    /// A simulation at `window` under `pricing`, counted by `counter`, with the default
    /// output reserve and the summarizer priced as the agent's model.
    pub fn new(window: usize, pricing: Pricing, counter: Arc<dyn TokenCounter>) -> Self {
        SimConfig {
            window,
            pricing,
            counter,
            max_output: DEFAULT_MAX_OUTPUT,
            summarizer_price: 1.0,
        }
    }
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("window", &self.window)
            .field("pricing", &self.pricing.name)
            .field("counter", &self.counter.name())
            .field("max_output", &self.max_output)
            .field("summarizer_price", &self.summarizer_price)
            .finish()
    }
}

/// Replays `trajectory` under `strategy`.
///
/// The counter is used as given: wrap an expensive one in a cache first (as
/// [`simulate_trajectory`] does).
///
/// # Errors
/// The strategy could not run (the engine rejected the input).
pub fn replay(
    trajectory: &[Message],
    strategy: &mut dyn Strategy,
    window: usize,
    pricing: &Pricing,
    counter: &dyn TokenCounter,
) -> Result<TrajectoryReport, SimError> {
    replay_with(trajectory, strategy, &ReplayLimits::new(window, pricing), counter)
}

/// What a replay checks and bills besides the agent's own prices.
#[derive(Clone, Copy, Debug)]
pub struct ReplayLimits<'a> {
    /// The context window in tokens.
    pub window: usize,
    /// Output tokens every request reserves: a request whose context plus this is over
    /// the window is rejected, as a provider would reject it. Default 0 in [`replay`].
    pub max_output: usize,
    /// What the provider bills.
    pub pricing: &'a Pricing,
    /// The summarizer's price relative to the agent's (1.0: the same model, which the
    /// replay takes to be the agent's own model: [`Env::agent_summarizer`]).
    pub summarizer_price: f64,
}

impl<'a> ReplayLimits<'a> {
    /// A window and prices; no output reserve; the summarizer priced as the agent.
    pub fn new(window: usize, pricing: &'a Pricing) -> Self {
        ReplayLimits {
            window,
            max_output: 0,
            pricing,
            summarizer_price: 1.0,
        }
    }
}

/// [`replay`] with an output reserve and a summarizer price.
///
/// Linear in the messages appended: the strategy says which message it first changed
/// ([`crate::simulate::Step::rewrote_from`]), and the replay keeps running token sums,
/// so a round that only appends costs the count of what it appended.
///
/// # Errors
/// The strategy could not run (the engine rejected the input).
pub fn replay_with(
    trajectory: &[Message],
    strategy: &mut dyn Strategy,
    limits: &ReplayLimits<'_>,
    counter: &dyn TokenCounter,
) -> Result<TrajectoryReport, SimError> {
    let window = limits.window;
    let mut totals = StrategyTotals {
        name: strategy.name().to_owned(),
        ..StrategyTotals::default()
    };
    let mut requests = Vec::new();
    // sums[i]: tokens of the first i messages of the strategy's conversation.
    let mut sums: Vec<usize> = vec![0];
    let mut previous_len = 0usize;
    let mut next = 0;
    for (at, turn) in trajectory.iter().enumerate() {
        if turn.role != Role::Assistant {
            continue;
        }
        let env = Env {
            counter,
            window,
            previous_len,
            max_output: limits.max_output,
            agent_summarizer: limits.summarizer_price == 1.0,
        };
        let step = strategy.prepare(&trajectory[next..at], &env)?;
        next = at;
        let current = strategy.conversation();
        let shared = step
            .rewrote_from
            .unwrap_or(previous_len)
            .min(previous_len)
            .min(current.len());
        sums.truncate(shared + 1);
        for message in &current[shared..] {
            let last = sums[sums.len() - 1];
            sums.push(last + counter.count_message(message));
        }
        let (cached, input) = (sums[shared], sums[current.len()]);
        let output = counter.count_message(turn);
        let tokens = Tokens {
            cache_read: cached as u64,
            cache_write: (input - cached) as u64,
            uncached: 0,
            output: output as u64,
        };
        let cost = limits.pricing.cost(&tokens) + limits.summarizer_price * limits.pricing.cost(&step.summarizer);

        totals.cost += cost;
        totals.requests += 1;
        totals.input_tokens += input as u64 + step.summarizer.input();
        totals.cached_tokens += cached as u64 + step.summarizer.cache_read;
        totals.output_tokens += tokens.output + step.summarizer.output;
        totals.peak_context = totals.peak_context.max(input as u64);
        totals.rounds_over_window += u64::from(input.saturating_add(limits.max_output) > window);
        totals.compactions += u64::from(step.compactions);
        totals.elision_epochs += u64::from(step.elision_epochs);
        totals.summarizer_calls += u64::from(step.summarizer_calls);
        requests.push(RequestTrace {
            input_tokens: input as u64,
            cached_tokens: cached as u64,
            output_tokens: tokens.output,
            cost,
            compaction: step.compactions > 0,
            elision: step.elision_epochs > 0,
        });
        previous_len = current.len();
    }
    Ok(TrajectoryReport { totals, requests })
}

/// Replays one trajectory under each strategy of `kinds`, in order, with a fresh
/// strategy each and a shared memoizing wrapper around the configured counter.
///
/// # Errors
/// A strategy could not be built or run.
pub fn simulate_trajectory(
    trajectory: &[Message],
    kinds: &[StrategyKind],
    config: &SimConfig,
) -> Result<Vec<TrajectoryReport>, SimError> {
    let counter: Arc<dyn TokenCounter> = Arc::new(MemoCounter::keeping_all(config.counter.clone()));
    kinds
        .iter()
        .map(|kind| {
            let mut strategy = kind.build(config.window, counter.clone())?;
            let limits = ReplayLimits {
                window: config.window,
                max_output: config.max_output,
                pricing: &config.pricing,
                summarizer_price: config.summarizer_price,
            };
            replay_with(trajectory, strategy.as_mut(), &limits, counter.as_ref())
        })
        .collect()
}
