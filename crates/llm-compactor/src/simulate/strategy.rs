//! The [`Strategy`] trait: one way of shaping the conversation before each request.
//!
//! A strategy owns its managed conversation. Before every request the replay hands it
//! the trajectory messages that arrived since the previous request (the previous
//! assistant turn included) and the strategy appends them, reshapes the conversation
//! however it manages context, and reports what that cost (summarizer calls) and what
//! it did (compactions, elision epochs). The replay then bills the request.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::Tokens;
use crate::simulate::SimError;

/// What a strategy sees besides the new messages.
pub struct Env<'a> {
    /// The counter every number is measured with.
    pub counter: &'a dyn TokenCounter,
    /// The context window in tokens.
    pub window: usize,
    /// How many messages the previous request carried: before [`Strategy::prepare`]
    /// appends, the managed conversation *is* that request's prompt, so its first
    /// `previous_len` messages are in the cache (for strategies whose summarizer call is
    /// itself a cached request).
    pub previous_len: usize,
    /// Output tokens every request reserves in the window: a request whose context is
    /// over `window - max_output` is rejected (what a strategy that defers passes must
    /// stay under).
    pub max_output: usize,
    /// True when the summarizer is the agent's own model (same provider, same model, the
    /// client's key): the default then sends the cache-reading summary request. The
    /// replay sets it when the summarizer is priced as the agent's model
    /// ([`crate::simulate::ReplayLimits::summarizer_price`] = 1): the simulator takes a
    /// summarizer at the agent's price to be the agent's model, one at any other price
    /// to be another model, whose request reads nothing of the agent's cache.
    pub agent_summarizer: bool,
}

/// What a strategy did before one request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// Summarizing or trimming passes.
    pub compactions: u32,
    /// Passes that only elided (stubbed, masked, cleared) old tool results.
    pub elision_epochs: u32,
    /// Summarizer requests made.
    pub summarizer_calls: u32,
    /// What those requests were billed.
    pub summarizer: Tokens,
    /// The first message of the previous conversation this step changed (everything
    /// from it on is billed as rewritten); `None` when the step only appended. The replay
    /// relies on it to bill a request without comparing the whole conversation, which
    /// keeps a replay linear in the messages appended.
    pub rewrote_from: Option<usize>,
}

/// A context-management strategy under simulation.
pub trait Strategy {
    /// The strategy's name in reports.
    fn name(&self) -> &str;

    /// Appends `appended` to the managed conversation and shapes it for the next request.
    ///
    /// # Errors
    /// Only when the strategy cannot run at all (the engine rejected the input).
    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError>;

    /// The conversation the next request carries, as last shaped by
    /// [`Strategy::prepare`].
    fn conversation(&self) -> &[Message];
}

/// The strategies the simulator knows, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum StrategyKind {
    /// `none`: no management at all.
    None,
    /// `ours`: the engine with every default, as a user gets it: passes prepared in the
    /// background (`ours-prepared`), the summary request reading the agent's cache when
    /// the summarizer is the agent's own model ([`Env::agent_summarizer`]).
    Ours,
    /// `ours-inline`: the engine's defaults with every pass run inline, on the request
    /// that needs it (what `ours` was before preparation became the default).
    OursInline,
    /// `ours-aging`: the defaults with observation aging on.
    OursAging,
    /// `ours-no-aging`: the defaults with observation aging off.
    OursNoAging,
    /// `ours-seed`: the first release (aging on, the seed's rules, no cost policy).
    OursSeed,
    /// `ours-prepared`: the defaults with passes prepared in the background.
    OursPrepared,
    /// `ours-prepared-cached`: `ours-prepared` whose summary request reads the agent's
    /// prompt cache.
    OursPreparedCached,
    /// `mask-last-n`: SWE-agent / JetBrains observation masking, N = 10.
    MaskLastN,
    /// `mask-last-n-batched`: SWE-agent's masking with its cache-friendly `polling`
    /// (N = 10, the mask moves every 10 observations).
    MaskLastNBatched,
    /// `jetbrains-hybrid`: JetBrains' masking (last 10) plus a summary every 43 turns or
    /// at 90% of the window.
    JetBrainsHybrid,
    /// `jetbrains-hybrid-batched`: the hybrid with the mask moved every 10 observations.
    JetBrainsHybridBatched,
    /// `clear-tool-uses`: Anthropic context editing with its defaults.
    ClearToolUses,
    /// `clear-tool-uses-scaled`: a variant (ours, not Anthropic's) with the trigger scaled
    /// to the window (half of it, as 100k is half of Claude's 200k).
    ClearToolUsesScaled,
    /// `summarize-at-threshold`: Codex-like auto-compaction at 90% of the window.
    SummarizeAtThreshold,
    /// `ours-economy`: the engine under [`crate::Policy::Economy`] (what
    /// `--policy economy` gets).
    OursEconomy,
    /// `claude-code-like`: Claude Code's auto-compact (a same-model summary at 95% of
    /// the usable window, nothing else kept).
    ClaudeCodeLike,
}

impl StrategyKind {
    /// The strategy that runs the engine under `policy` (`ours` for the default).
    pub fn of_policy(policy: crate::Policy) -> StrategyKind {
        match policy {
            crate::Policy::Default => StrategyKind::Ours,
            crate::Policy::Economy => StrategyKind::OursEconomy,
        }
    }

    /// True for the strategies that drop no context below their trigger, to which the
    /// default policy is held (issue 33): `none`, the clear-tool-uses family, the
    /// summarize-at-threshold family (Codex-like, Claude-Code-like) and the engine's own
    /// default variants.
    pub fn keeps_context_below_trigger(self) -> bool {
        matches!(
            self,
            StrategyKind::None
                | StrategyKind::Ours
                | StrategyKind::OursInline
                | StrategyKind::OursNoAging
                | StrategyKind::ClearToolUses
                | StrategyKind::ClearToolUsesScaled
                | StrategyKind::SummarizeAtThreshold
                | StrategyKind::ClaudeCodeLike
        )
    }

    /// Every strategy, in report order.
    pub const ALL: [StrategyKind; 17] = [
        StrategyKind::None,
        StrategyKind::Ours,
        StrategyKind::OursInline,
        StrategyKind::OursEconomy,
        StrategyKind::OursAging,
        StrategyKind::OursNoAging,
        StrategyKind::OursSeed,
        StrategyKind::OursPrepared,
        StrategyKind::OursPreparedCached,
        StrategyKind::MaskLastN,
        StrategyKind::MaskLastNBatched,
        StrategyKind::JetBrainsHybrid,
        StrategyKind::JetBrainsHybridBatched,
        StrategyKind::ClearToolUses,
        StrategyKind::ClearToolUsesScaled,
        StrategyKind::SummarizeAtThreshold,
        StrategyKind::ClaudeCodeLike,
    ];

    /// The strategy's name.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::None => "none",
            StrategyKind::Ours => "ours",
            StrategyKind::OursInline => "ours-inline",
            StrategyKind::OursAging => "ours-aging",
            StrategyKind::OursNoAging => "ours-no-aging",
            StrategyKind::OursSeed => "ours-seed",
            StrategyKind::OursPrepared => "ours-prepared",
            StrategyKind::OursPreparedCached => "ours-prepared-cached",
            StrategyKind::MaskLastN => "mask-last-n",
            StrategyKind::MaskLastNBatched => "mask-last-n-batched",
            StrategyKind::JetBrainsHybrid => "jetbrains-hybrid",
            StrategyKind::JetBrainsHybridBatched => "jetbrains-hybrid-batched",
            StrategyKind::ClearToolUses => "clear-tool-uses",
            StrategyKind::ClearToolUsesScaled => "clear-tool-uses-scaled",
            StrategyKind::SummarizeAtThreshold => "summarize-at-threshold",
            StrategyKind::OursEconomy => "ours-economy",
            StrategyKind::ClaudeCodeLike => "claude-code-like",
        }
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A strategy name that the simulator does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown strategy {0:?} (expected one of: none, ours, ours-inline, ours-economy, ours-aging, ours-no-aging, ours-seed, ours-prepared, ours-prepared-cached, mask-last-n, mask-last-n-batched, jetbrains-hybrid, jetbrains-hybrid-batched, clear-tool-uses, clear-tool-uses-scaled, summarize-at-threshold, claude-code-like)"
)]
pub struct UnknownStrategy(pub String);

impl FromStr for StrategyKind {
    type Err = UnknownStrategy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StrategyKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownStrategy(s.to_owned()))
    }
}
