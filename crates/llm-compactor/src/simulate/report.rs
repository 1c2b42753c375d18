//! What a simulation reports: per request ([`RequestTrace`]), per strategy
//! ([`StrategyTotals`]), and the pinned JSON of `compactor simulate --json`
//! ([`SimulationSummary`]).

use serde::{Deserialize, Serialize};

/// One agent request of a replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RequestTrace {
    /// Tokens of the conversation the request carried.
    pub input_tokens: u64,
    /// Of those, tokens read from the prompt cache.
    pub cached_tokens: u64,
    /// Tokens of the assistant turn it produced.
    pub output_tokens: u64,
    /// What this request cost, including any summarizer call made before it.
    pub cost: f64,
    /// A summarizing or trimming pass ran before this request.
    pub compaction: bool,
    /// An elision-only pass ran before this request.
    pub elision: bool,
}

/// A strategy's totals over one or more trajectories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyTotals {
    /// The strategy's name.
    pub name: String,
    /// Total cost in base-input-token units (agent requests plus summarizer calls).
    pub cost: f64,
    /// Agent requests.
    pub requests: u64,
    /// Every input token billed (agent requests and summarizer calls).
    pub input_tokens: u64,
    /// Of those, tokens read from the cache.
    pub cached_tokens: u64,
    /// Output tokens billed (agent turns and summaries).
    pub output_tokens: u64,
    /// The largest context an agent request carried.
    pub peak_context: u64,
    /// Agent requests whose context was larger than the window.
    pub rounds_over_window: u64,
    /// Summarizing or trimming passes.
    pub compactions: u64,
    /// Elision-only passes (masking, clearing, aging epochs).
    pub elision_epochs: u64,
    /// Summarizer requests.
    pub summarizer_calls: u64,
}

impl StrategyTotals {
    /// Cached input over all input; 0 when there was no input.
    pub fn cache_hit_ratio(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / self.input_tokens as f64
        }
    }

    /// Adds another trajectory's totals of the same strategy.
    pub fn merge(&mut self, other: &StrategyTotals) {
        self.cost += other.cost;
        self.requests += other.requests;
        self.input_tokens += other.input_tokens;
        self.cached_tokens += other.cached_tokens;
        self.output_tokens += other.output_tokens;
        self.peak_context = self.peak_context.max(other.peak_context);
        self.rounds_over_window += other.rounds_over_window;
        self.compactions += other.compactions;
        self.elision_epochs += other.elision_epochs;
        self.summarizer_calls += other.summarizer_calls;
    }
}

/// One strategy's replay of one trajectory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TrajectoryReport {
    /// The totals.
    pub totals: StrategyTotals,
    /// Every request, in order.
    pub requests: Vec<RequestTrace>,
}

/// One row of the pinned `--json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StrategyRow {
    /// The strategy's name.
    pub name: String,
    /// Total cost in base-input-token units.
    pub cost: f64,
    /// Agent requests.
    pub requests: u64,
    /// Cached input over all input.
    pub cache_hit_ratio: f64,
    /// The largest context of any request.
    pub peak_context: u64,
    /// Requests over the window.
    pub rounds_over_window: u64,
    /// Summarizing or trimming passes.
    pub compactions: u64,
    /// Elision-only passes.
    pub elision_epochs: u64,
}

impl From<&StrategyTotals> for StrategyRow {
    fn from(t: &StrategyTotals) -> Self {
        StrategyRow {
            name: t.name.clone(),
            cost: t.cost,
            requests: t.requests,
            cache_hit_ratio: t.cache_hit_ratio(),
            peak_context: t.peak_context,
            rounds_over_window: t.rounds_over_window,
            compactions: t.compactions,
            elision_epochs: t.elision_epochs,
        }
    }
}

/// The pinned JSON of `compactor simulate --json`, summed over every input trajectory:
/// `{"trajectories", "window", "pricing", "strategies": [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimulationSummary {
    /// Trajectories replayed.
    pub trajectories: u64,
    /// The window in tokens.
    pub window: u64,
    /// The pricing preset's name.
    pub pricing: String,
    /// One row per strategy, in the order asked.
    pub strategies: Vec<StrategyRow>,
}
