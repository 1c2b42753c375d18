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

use crate::count::TokenCounter;
use crate::message::{Message, Role};
use crate::simulate::SimError;
use crate::simulate::cost::bill_request;
use crate::simulate::memo::MemoCounter;
use crate::simulate::pricing::Pricing;
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
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("window", &self.window)
            .field("pricing", &self.pricing.name)
            .field("counter", &self.counter.name())
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
    let mut totals = StrategyTotals {
        name: strategy.name().to_owned(),
        ..StrategyTotals::default()
    };
    let mut requests = Vec::new();
    let mut previous: Vec<Message> = Vec::new();
    let mut next = 0;
    for (at, turn) in trajectory.iter().enumerate() {
        if turn.role != Role::Assistant {
            continue;
        }
        let env = Env {
            counter,
            window,
            previous: &previous,
        };
        let step = strategy.prepare(&trajectory[next..at], &env)?;
        next = at;
        let current = strategy.conversation();
        let output = counter.count_message(turn);
        let bill = bill_request(&previous, current, output, counter);
        let cost = pricing.cost(&bill.tokens) + pricing.cost(&step.summarizer);

        totals.cost += cost;
        totals.requests += 1;
        totals.input_tokens += bill.input_tokens + step.summarizer.input();
        totals.cached_tokens += bill.cached_tokens + step.summarizer.cache_read;
        totals.output_tokens += bill.tokens.output + step.summarizer.output;
        totals.peak_context = totals.peak_context.max(bill.input_tokens);
        totals.rounds_over_window += u64::from(bill.input_tokens > window as u64);
        totals.compactions += u64::from(step.compactions);
        totals.elision_epochs += u64::from(step.elision_epochs);
        totals.summarizer_calls += u64::from(step.summarizer_calls);
        requests.push(RequestTrace {
            input_tokens: bill.input_tokens,
            cached_tokens: bill.cached_tokens,
            output_tokens: bill.tokens.output,
            cost,
            compaction: step.compactions > 0,
            elision: step.elision_epochs > 0,
        });
        previous = current.to_vec();
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
    let counter: Arc<dyn TokenCounter> = Arc::new(MemoCounter::new(config.counter.clone()));
    kinds
        .iter()
        .map(|kind| {
            let mut strategy = kind.build(config.window, counter.clone())?;
            replay(
                trajectory,
                strategy.as_mut(),
                config.window,
                &config.pricing,
                counter.as_ref(),
            )
        })
        .collect()
}
