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

use crate::message::Message;
use crate::simulate::SimError;
use crate::simulate::mask_batched::MaskBatched;
use crate::simulate::strategy::{Env, Step, Strategy};

pub use crate::simulate::mask_batched::{DEFAULT_N, placeholder};

/// Masks every tool observation but the last `n`: [`MaskBatched`] with a `polling` of 1.
#[derive(Clone, Debug)]
pub struct MaskLastN(MaskBatched);

impl MaskLastN {
    /// Keeps the last `n` observations.
    pub fn new(n: usize) -> Self {
        MaskLastN(MaskBatched::new(n, 1))
    }
}

impl Strategy for MaskLastN {
    fn name(&self) -> &str {
        "mask-last-n"
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        self.0.prepare(appended, env)
    }

    fn conversation(&self) -> &[Message] {
        self.0.conversation()
    }
}
