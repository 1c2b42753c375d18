//! Building a strategy from its kind: the one place that names every strategy's type.
//!
//! It lives apart from [`super::strategy`] (the trait every strategy implements) so that
//! the strategies depend on the trait and this file on the strategies, and no file
//! depends on one that depends on it.

use std::sync::Arc;

use super::strategy::{Strategy, StrategyKind};
use super::{
    clear_tool_uses, jetbrains_hybrid, mask_batched, mask_last_n, none, ours, prepared, summarize_at_threshold,
};
use crate::count::TokenCounter;
use crate::simulate::SimError;

impl StrategyKind {
    /// A fresh instance for one trajectory.
    ///
    /// # Errors
    /// The engine's configuration is invalid for this window (a zero window).
    pub fn build(self, window: usize, counter: Arc<dyn TokenCounter>) -> Result<Box<dyn Strategy>, SimError> {
        Ok(match self {
            StrategyKind::None => Box::new(none::NoManagement::default()),
            StrategyKind::Ours => Box::new(prepared::Prepared::defaults(window, counter)?),
            StrategyKind::OursInline => Box::new(ours::Ours::defaults(window, counter)?),
            StrategyKind::OursAging => Box::new(ours::Ours::new(window, true, counter)?),
            StrategyKind::OursNoAging => Box::new(ours::Ours::new(window, false, counter)?),
            StrategyKind::OursSeed => Box::new(ours::Ours::seed(window, counter)?),
            StrategyKind::OursPrepared => Box::new(prepared::Prepared::new(window, false, counter)?),
            StrategyKind::OursPreparedCached => Box::new(prepared::Prepared::new(window, true, counter)?),
            StrategyKind::MaskLastN => Box::new(mask_last_n::MaskLastN::new(mask_last_n::DEFAULT_N)),
            StrategyKind::MaskLastNBatched => Box::new(mask_batched::MaskBatched::defaults()),
            StrategyKind::JetBrainsHybrid => Box::new(jetbrains_hybrid::JetBrainsHybrid::new(window, counter)),
            StrategyKind::JetBrainsHybridBatched => {
                Box::new(jetbrains_hybrid::JetBrainsHybrid::batched(window, counter))
            }
            StrategyKind::ClearToolUses => Box::new(clear_tool_uses::ClearToolUses::anthropic_defaults()),
            StrategyKind::ClearToolUsesScaled => Box::new(clear_tool_uses::ClearToolUses::scaled(window)),
            StrategyKind::SummarizeAtThreshold => {
                Box::new(summarize_at_threshold::SummarizeAtThreshold::new(window, counter))
            }
            StrategyKind::OursEconomy => Box::new(ours::Ours::with_policy(window, crate::Policy::Economy, counter)?),
            StrategyKind::ClaudeCodeLike => Box::new(summarize_at_threshold::SummarizeAtThreshold::claude_code(
                window, counter,
            )),
        })
    }
}
