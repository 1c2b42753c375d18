//! The cache-aware cost simulator: what a context strategy costs on a real trajectory.
//!
//! Users pick a context strategy for two reasons: to stay inside the window and to pay
//! less. The second depends on the provider's prompt cache far more than on the number
//! of tokens sent, because a cache hit costs about a tenth of a miss: a strategy that
//! rewrites the conversation early breaks the cache from that point on. The seed's case
//! for eliding old observations in *epochs* rather than a bit every round rests on that,
//! and this module measures it.
//!
//! A trajectory is replayed request by request ([`replay`]); each strategy
//! ([`Strategy`]) shapes the conversation before every request; the provider's bill is
//! computed with prefix caching ([`bill_request`]) under a pricing preset ([`Pricing`]);
//! summarizer calls are made by a deterministic stand-in ([`StandIn`]) and billed too.
//! Everything here is pure except the `ours` strategies, which drive the async engine on
//! a private current-thread runtime (so the simulator must not be called from inside an
//! async runtime's worker).
//!
//! ```
//! use std::sync::Arc;
//! use llm_compactor::count::HeuristicCounter;
//! use llm_compactor::simulate::{simulate_trajectory, Pricing, SimConfig, StrategyKind};
//! use llm_compactor::{Message, ToolCall};
//!
//! let trajectory = vec![
//!     Message::system("You are an agent."),
//!     Message::user("Fix the bug."),
//!     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "read", "{}")]),
//!     Message::tool("c1", "x".repeat(4000)),
//!     Message::assistant("Done."),
//! ];
//! let config = SimConfig::new(32_000, Pricing::ANTHROPIC, Arc::new(HeuristicCounter));
//! let reports = simulate_trajectory(&trajectory, &[StrategyKind::None], &config).unwrap();
//! assert_eq!(reports[0].totals.requests, 2);
//! ```

mod build;
pub mod clear_tool_uses;
mod cost;
pub mod jetbrains_hybrid;
pub mod mask_batched;
pub mod mask_last_n;
pub mod none;
pub mod ours;
pub mod prepared;

mod replay;
mod report;
mod standin;
mod strategy;
pub mod summarize_at_threshold;

pub use crate::plan::{Pricing, Tokens, UnknownPricing};
pub use cost::{RequestBill, bill_request, shared_prefix_len};
pub use replay::{DEFAULT_MAX_OUTPUT, ReplayLimits, SimConfig, replay, replay_with, simulate_trajectory};
pub use report::{RequestTrace, SimulationSummary, StrategyRow, StrategyTotals, TrajectoryReport};
pub use standin::{STANDIN_MAX_SUMMARY_TOKENS, StandIn, standin_summary_tokens, standin_text};
pub use strategy::{Env, Step, Strategy, StrategyKind, UnknownStrategy};

use crate::compactor::CompactError;

/// A simulation that could not run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The engine rejected the conversation.
    #[error("the engine rejected the conversation: {0}")]
    Compact(#[from] CompactError),
    /// A strategy could not be configured (a zero window, no runtime).
    #[error("invalid simulation setup: {0}")]
    Config(String),
}
