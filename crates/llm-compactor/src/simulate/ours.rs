//! `ours-inline` and its variants: the engine, [`crate::Compactor`], as an agent loop
//! drives it with every pass inline, on the request that needs it.
//!
//! `ours-inline` is every default of [`crate::CompactorConfig`] with the budget set to
//! the window, passes inline: what a user got before preparation became the default
//! (`ours`, the configured default, is in [`crate::simulate::prepared`]). Variants:
//! `ours-aging` (aging on), `ours-no-aging` (aging off), `ours-economy` (the economy
//! policy), `ours-seed` (the first release: aging on with the seed's rules, no cost policy).
//! The summarizer is the stand-in. Before each request the loop asks `needs_compaction` and, if it says yes,
//! runs one `compact` pass and continues with its messages. A pass that only elided is an
//! elision epoch; a pass that summarized or trimmed is a compaction. Summarizer calls are
//! billed as uncached input plus output: the engine sends a rendered transcript, not the
//! agent's prompt, so nothing of it is in the cache.

use std::sync::Arc;

use crate::Conversation;
use crate::compactor::{CompactOptions, Compactor, CompactorConfig};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::Tokens;
use crate::simulate::SimError;
use crate::simulate::cost::shared_prefix_len;
use crate::simulate::standin::StandIn;
use crate::simulate::strategy::{Env, Step, Strategy};

/// The engine under simulation.
pub struct Ours {
    name: &'static str,
    compactor: Compactor,
    runtime: tokio::runtime::Runtime,
    /// The conversation, counted by the compactor's counter (each message once) and
    /// indexed for the epoch decision as it grows: a round costs its new messages.
    conversation: Conversation,
}

impl std::fmt::Debug for Ours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ours").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Ours {
    /// The engine with budget `window`, aging on or off.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn new(window: usize, aging: bool, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let config = CompactorConfig::builder(window)
            .age_observations(aging)
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        Ours::with_config(if aging { "ours-aging" } else { "ours-no-aging" }, config, counter)
    }

    /// The engine exactly as [`CompactorConfig::builder`] configures it by default,
    /// budget = `window`, every pass inline. Reported as `ours-inline`.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn defaults(window: usize, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let config = CompactorConfig::builder(window)
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        Ours::with_config("ours-inline", config, counter)
    }

    /// The engine under a named [`crate::Policy`], budget = `window`, passes inline:
    /// `ours-inline` for the default, `ours-economy` for economy.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn with_policy(window: usize, policy: crate::Policy, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let config = CompactorConfig::builder(window)
            .policy(policy)
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        let name = match policy {
            crate::Policy::Default => "ours-inline",
            crate::Policy::Economy => "ours-economy",
        };
        Ours::with_config(name, config, counter)
    }

    /// The first release's engine: aging on, the seed's rules (no cost gate,
    /// elision-only accepted under the trigger, the absolute 49,152-char epoch). Reported
    /// as `ours-seed`, for comparison.
    ///
    /// # Errors
    /// An invalid configuration (a zero window) or no runtime.
    pub fn seed(window: usize, counter: Arc<dyn TokenCounter>) -> Result<Self, SimError> {
        let config = CompactorConfig::builder(window)
            .age_observations(true)
            .trigger_ratio(0.8)
            .target_ratio(0.4)
            .keep_recent(6)
            .cost_policy(crate::plan::CostPolicy::seed())
            .build()
            .map_err(|e| SimError::Config(e.to_string()))?;
        Ours::with_config("ours-seed", config, counter)
    }

    /// The engine with any configuration (for experiments), reported as `name`.
    ///
    /// # Errors
    /// No runtime.
    pub fn with_config(
        name: &'static str,
        config: CompactorConfig,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, SimError> {
        let summarizer = Arc::new(StandIn::new(counter.clone()));
        let conversation = Conversation::new(counter.clone());
        let compactor = Compactor::new(config, counter).with_summarizer(summarizer);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| SimError::Config(format!("tokio runtime: {e}")))?;
        Ok(Ours {
            name,
            compactor,
            runtime,
            conversation,
        })
    }
}

impl Strategy for Ours {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], _env: &Env<'_>) -> Result<Step, SimError> {
        self.conversation.extend(appended.iter().cloned());
        let mut step = Step::default();
        if !self.compactor.needs_compaction_in(&self.conversation) {
            return Ok(step);
        }
        let result = self.runtime.block_on(
            self.compactor
                .compact(self.conversation.messages(), CompactOptions::default()),
        )?;
        step.summarizer_calls = result.attempts.len() as u32;
        step.summarizer = Tokens {
            uncached: result.usage.input_tokens,
            output: result.usage.output_tokens,
            ..Tokens::default()
        };
        if result.is_elision_only() {
            step.elision_epochs = 1;
        } else if !result.is_noop() {
            step.compactions = 1;
        }
        if !result.is_noop() {
            step.rewrote_from = Some(shared_prefix_len(self.conversation.messages(), &result.messages));
            self.conversation.replace(result.messages);
        }
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        self.conversation.messages()
    }
}
