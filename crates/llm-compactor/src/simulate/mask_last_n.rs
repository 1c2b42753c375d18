//! `mask-last-n`: observation masking as SWE-agent does it and JetBrains measured it.
//!
//! Sources: SWE-agent's `LastNObservations` history processor (docs "History
//! processors"; `sweagent/agent/history_processors.py`), which replaces every
//! environment observation but the last `n` with `Old environment output: (K lines
//! omitted)`, and Lindenbauer et al., "The Complexity Trap: Simple Observation Masking Is
//! as Efficient as LLM Summarization for Agent Context Management" (JetBrains Research,
//! 2025), which keeps the last 10 observations and reports about half the cost of no
//! management on SWE-bench Verified.
//!
//! It runs every round: each new observation pushes the oldest unmasked one out of the
//! window of N, and that message's content changes. The prompt cache therefore breaks at
//! that position on every round after the first N observations, which is precisely the
//! per-round pattern the seed's epochs exist to avoid. The simulator counts each round in
//! which an observation was newly masked as an elision epoch.
//!
//! Observations are tool results (role `tool`); N counts tool-result messages.

use crate::message::{Content, Message};
use crate::simulate::SimError;
use crate::simulate::strategy::{Env, Step, Strategy};

/// SWE-agent's and JetBrains' N.
pub const DEFAULT_N: usize = 10;

/// SWE-agent's placeholder for a masked observation of `lines` lines.
///
/// ```
/// use llm_compactor::simulate::mask_last_n::placeholder;
/// assert_eq!(placeholder(42), "Old environment output: (42 lines omitted)");
/// ```
pub fn placeholder(lines: usize) -> String {
    format!("Old environment output: ({lines} lines omitted)")
}

/// Masks every tool observation but the last `n`.
#[derive(Clone, Debug)]
pub struct MaskLastN {
    n: usize,
    conversation: Vec<Message>,
    /// Positions of tool results, in order.
    observations: Vec<usize>,
    /// How many of `observations` are masked (always a prefix).
    masked: usize,
}

impl MaskLastN {
    /// Keeps the last `n` observations.
    pub fn new(n: usize) -> Self {
        MaskLastN {
            n,
            conversation: Vec::new(),
            observations: Vec::new(),
            masked: 0,
        }
    }
}

impl Strategy for MaskLastN {
    fn name(&self) -> &str {
        "mask-last-n"
    }

    fn prepare(&mut self, appended: &[Message], _env: &Env<'_>) -> Result<Step, SimError> {
        for message in appended {
            if message.is_tool_result() {
                self.observations.push(self.conversation.len());
            }
            self.conversation.push(message.clone());
        }
        let should_mask = self.observations.len().saturating_sub(self.n);
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
