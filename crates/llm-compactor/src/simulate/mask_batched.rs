//! `mask-last-n-batched`: SWE-agent's observation masking with its cache-friendly polling.
//!
//! Source: SWE-agent, `sweagent/agent/history_processors.py`, class `LastNObservations`
//! (fields `n` and `polling`). Its docstring: "How many steps to keep between updating
//! the number of observations to keep. This is useful for caching, as we want to remove
//! more and more messages, but every time we change the history, we need to cache
//! everything again. Effectively, we will now keep between `n` and `n+polling`
//! observations." The rule it implements: with `k` observations in the history, the
//! observations before position `max(0, floor(k / polling) x polling - n)` are replaced by
//! `Old environment output: (L lines omitted)` ([`placeholder`]). With a `polling` of 1 it
//! is `mask-last-n` ([`crate::simulate::mask_last_n`], this strategy under that name).
//!
//! Parameters: `n` = 10, the window JetBrains' "The Complexity Trap" (Lindenbauer et
//! al., 2025) measured (SWE-agent's own 0.7 config uses 5). SWE-agent's default `polling`
//! is 1 (every round, which is [`crate::simulate::mask_last_n`]); it publishes no value for
//! caching, so the batch here is [`DEFAULT_POLLING`] = 10 = `n`, our choice, stated: the
//! mask then moves once every 10 observations, by 10 observations, and the history keeps
//! between 10 and 20 of them unmasked.
//!
//! Differences from SWE-agent, both neutral for cost: SWE-agent never masks its first
//! "observation", which is the instance template (the task), a user message in the
//! trajectories here and so never a candidate; observations are tool results (role
//! `tool`), as in `mask-last-n`.

use crate::message::{Content, Message};
use crate::simulate::SimError;
use crate::simulate::strategy::{Env, Step, Strategy};

/// The observations kept unmasked at least: SWE-agent's and JetBrains' N (M = 10).
pub const DEFAULT_N: usize = 10;

/// SWE-agent's placeholder for a masked observation of `lines` lines.
///
/// ```
/// use llm_compactor::simulate::mask_batched::placeholder;
/// assert_eq!(placeholder(42), "Old environment output: (42 lines omitted)");
/// ```
pub fn placeholder(lines: usize) -> String {
    format!("Old environment output: ({lines} lines omitted)")
}

/// Observations between two updates of the mask (ours: SWE-agent publishes no value for
/// caching; 10 keeps between 10 and 20 observations unmasked).
pub const DEFAULT_POLLING: usize = 10;

/// How many of `observations` SWE-agent's `LastNObservations(n, polling)` masks:
/// `max(0, floor(observations / polling) x polling - n)`.
///
/// ```
/// use llm_compactor::simulate::mask_batched::masked_count;
/// assert_eq!(masked_count(19, 10, 10), 0);
/// assert_eq!(masked_count(20, 10, 10), 10);
/// assert_eq!(masked_count(29, 10, 10), 10);
/// assert_eq!(masked_count(11, 10, 1), 1);
/// ```
pub fn masked_count(observations: usize, n: usize, polling: usize) -> usize {
    let polling = polling.max(1);
    ((observations / polling) * polling).saturating_sub(n)
}

/// Masks every observation but the last `n` to `n + polling`, updating every `polling`
/// observations.
#[derive(Clone, Debug)]
pub struct MaskBatched {
    n: usize,
    polling: usize,
    conversation: Vec<Message>,
    /// Positions of tool results, in order.
    observations: Vec<usize>,
    /// How many of `observations` are masked (always a prefix).
    masked: usize,
}

impl MaskBatched {
    /// `LastNObservations(n, polling)`; a `polling` of 0 is taken as 1.
    pub fn new(n: usize, polling: usize) -> Self {
        MaskBatched {
            n,
            polling: polling.max(1),
            conversation: Vec::new(),
            observations: Vec::new(),
            masked: 0,
        }
    }

    /// The published window with the batch of [`DEFAULT_POLLING`].
    pub fn defaults() -> Self {
        MaskBatched::new(DEFAULT_N, DEFAULT_POLLING)
    }
}

impl Strategy for MaskBatched {
    fn name(&self) -> &str {
        "mask-last-n-batched"
    }

    fn prepare(&mut self, appended: &[Message], _env: &Env<'_>) -> Result<Step, SimError> {
        for message in appended {
            if message.is_tool_result() {
                self.observations.push(self.conversation.len());
            }
            self.conversation.push(message.clone());
        }
        let should_mask = masked_count(self.observations.len(), self.n, self.polling);
        let mut step = Step::default();
        if should_mask > self.masked {
            for &at in &self.observations[self.masked..should_mask] {
                let message = &mut self.conversation[at];
                let lines = message.text().lines().count();
                message.content = Content::Text(placeholder(lines));
            }
            step.rewrote_from = Some(self.observations[self.masked]);
            self.masked = should_mask;
            step.elision_epochs = 1;
        }
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        &self.conversation
    }
}
