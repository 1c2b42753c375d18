//! `ours` and `ours-no-aging`: the engine, [`crate::Compactor`], as an agent loop drives it.
//!
//! Configuration: every default of [`crate::CompactorConfig`] with the budget set to the
//! window (trigger 80%, target 40%, keep 6 recent, epoch 49,152 chars), and
//! `age_observations` on for `ours`, off for `ours-no-aging`; the summarizer is the
//! stand-in. Before each request the loop asks `needs_compaction` and, if it says yes,
//! runs one `compact` pass and continues with its messages. A pass that only elided is an
//! elision epoch; a pass that summarized or trimmed is a compaction. Summarizer calls are
//! billed as uncached input plus output: the engine sends a rendered transcript, not the
//! agent's prompt, so nothing of it is in the cache.

use std::sync::Arc;

use crate::compactor::{CompactOptions, Compactor, CompactorConfig};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::simulate::SimError;
use crate::simulate::pricing::Tokens;
use crate::simulate::standin::StandIn;
use crate::simulate::strategy::{Env, Step, Strategy};

/// The engine under simulation.
pub struct Ours {
    name: &'static str,
    compactor: Compactor,
    runtime: tokio::runtime::Runtime,
    conversation: Vec<Message>,
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
        Ours::with_config(if aging { "ours" } else { "ours-no-aging" }, config, counter)
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
        let compactor = Compactor::new(config, counter).with_summarizer(summarizer);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| SimError::Config(format!("tokio runtime: {e}")))?;
        Ok(Ours {
            name,
            compactor,
            runtime,
            conversation: Vec::new(),
        })
    }
}

impl Strategy for Ours {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], _env: &Env<'_>) -> Result<Step, SimError> {
        self.conversation.extend_from_slice(appended);
        let mut step = Step::default();
        if !self.compactor.needs_compaction(&self.conversation) {
            return Ok(step);
        }
        let result = self
            .runtime
            .block_on(self.compactor.compact(&self.conversation, CompactOptions::default()))?;
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
        self.conversation = result.messages;
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        &self.conversation
    }
}
