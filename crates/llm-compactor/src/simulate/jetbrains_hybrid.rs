//! `jetbrains-hybrid`: observation masking plus an LLM summary, as JetBrains measured it.
//!
//! Source: Lindenbauer et al., "The Complexity Trap: Simple Observation Masking Is as
//! Efficient as LLM Summarization for Agent Context Management" (JetBrains Research,
//! NeurIPS 2025 DL4Code workshop, arXiv 2508.21433), whose hybrid was 7% cheaper than
//! masking alone and 11% cheaper than summarizing alone. Its published configuration
//! (`config/default_no_demo_checkpoint_same_model_openhands_N=43_M=10_masking_M=10.yaml`
//! in the paper's repository) chains two SWE-agent history processors:
//!
//! 1. `summarize_every_n_turns` with `n: 43`, `keep_last_m_turns: 10` and static
//!    checkpointing: when 43 + 10 turns have not been summarized, the oldest are
//!    condensed by the same model (a separate summarization prompt) into one summary that
//!    replaces them and the previous summary; the system prompt and the task (the first
//!    two messages) and the last 10 turns stay;
//! 2. `last_n_observations` with `n: 10`: every tool observation but the last 10 is
//!    replaced by `Old environment output: (L lines omitted)`.
//!
//! Modelled here with the published numbers ([`SUMMARY_EVERY_TURNS`], [`KEEP_LAST_TURNS`],
//! [`MASK_LAST`]), and two additions, both stated:
//!
//! - **a summary at the threshold**: the paper's trigger counts turns only, which cannot
//!   keep a conversation inside a 32k window; the summary also runs when the request about
//!   to be sent (as masked) is over [`THRESHOLD_RATIO`] of the window. 0.9 is the
//!   `limit_trigger_fraction` default of the limit-aware trigger that a maintained fork of
//!   the paper's code added to both processors;
//! - **batched masking** ([`JetBrainsHybrid::batched`], reported as
//!   `jetbrains-hybrid-batched`): SWE-agent's `polling` ([`crate::simulate::mask_batched`])
//!   set to 10, so the mask moves once every 10 observations instead of every round (the
//!   published hybrid uses SWE-agent's default `polling: 1`, reported as
//!   `jetbrains-hybrid`).
//!
//! A turn is an assistant message and everything after it up to the next one (its tool
//! results), so a summary never separates a call from its answer. The summarizer sees the
//! turns unmasked (summarizing runs before masking in SWE-agent's chain) and is billed as
//! uncached input plus output: its prompt is the summarization template, not the agent's.

use std::sync::Arc;

use crate::count::TokenCounter;
use crate::message::{Content, Message, Role};
use crate::plan::Tokens;
use crate::simulate::SimError;
use crate::simulate::cost::shared_prefix_len;
use crate::simulate::mask_batched::{masked_count, placeholder};
use crate::simulate::standin::{STANDIN_MAX_SUMMARY_TOKENS, StandIn};
use crate::simulate::strategy::{Env, Step, Strategy};

/// `summarize_every_n_turns.n`: turns condensed by one summary.
pub const SUMMARY_EVERY_TURNS: usize = 43;
/// `summarize_every_n_turns.keep_last_m_turns`: the newest turns a summary leaves alone.
pub const KEEP_LAST_TURNS: usize = 10;
/// `last_n_observations.n`: observations kept unmasked.
pub const MASK_LAST: usize = 10;
/// The masking batch of the batched variant (ours; see [`crate::simulate::mask_batched`]).
pub const BATCHED_POLLING: usize = 10;
/// A summary also runs when the masked request is over this share of the window.
pub const THRESHOLD_RATIO: f64 = 0.9;
/// The first line of the summary message.
pub const SUMMARY_PREFIX: &str = "Summary of the earlier turns of this task:";
/// The summarization instruction whose tokens the summarizer call is billed for (ours;
/// the paper's template is longer).
pub const PROMPT: &str = "You are maintaining a context-aware state summary for an interactive agent. \
Track the user's goals, what was completed, what is pending, the current state, code changes and test results.";

/// Masking every round (or in batches) plus a summary every 43 turns or at the threshold.
pub struct JetBrainsHybrid {
    name: &'static str,
    polling: usize,
    threshold: usize,
    standin: StandIn,
    /// The conversation unmasked: head, the summary (if any, at `head_len`), the
    /// unsummarized turns.
    history: Vec<Message>,
    /// Tokens of each `history` message, unmasked.
    raw: Vec<usize>,
    /// What the next request carries: `history` with old observations masked.
    view: Vec<Message>,
    /// Tokens of `view`, kept up to date.
    view_tokens: usize,
    /// Messages before the first assistant turn (system prompt, task).
    head_len: usize,
    /// An assistant turn has been seen (everything before it is the head).
    seen_assistant: bool,
    /// Positions of the unsummarized turns' assistant messages.
    turn_starts: Vec<usize>,
    /// Positions of tool results.
    observations: Vec<usize>,
    /// How many of `observations` are masked in `view` (a prefix).
    masked: usize,
}

impl std::fmt::Debug for JetBrainsHybrid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetBrainsHybrid")
            .field("name", &self.name)
            .field("polling", &self.polling)
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl JetBrainsHybrid {
    /// The published hybrid (masking every round), threshold at 90% of `window`.
    pub fn new(window: usize, counter: Arc<dyn TokenCounter>) -> Self {
        JetBrainsHybrid::with_polling("jetbrains-hybrid", 1, window, counter)
    }

    /// The hybrid with the mask updated every [`BATCHED_POLLING`] observations.
    pub fn batched(window: usize, counter: Arc<dyn TokenCounter>) -> Self {
        JetBrainsHybrid::with_polling("jetbrains-hybrid-batched", BATCHED_POLLING, window, counter)
    }

    /// The hybrid with any masking batch, reported as `name`.
    pub fn with_polling(name: &'static str, polling: usize, window: usize, counter: Arc<dyn TokenCounter>) -> Self {
        JetBrainsHybrid {
            name,
            polling: polling.max(1),
            threshold: (window as f64 * THRESHOLD_RATIO).ceil() as usize,
            standin: StandIn::new(counter),
            history: Vec::new(),
            raw: Vec::new(),
            view: Vec::new(),
            view_tokens: 0,
            head_len: 0,
            seen_assistant: false,
            turn_starts: Vec::new(),
            observations: Vec::new(),
            masked: 0,
        }
    }

    /// Masks `observations[masked..should]` in the view; the first position changed.
    fn update_mask(&mut self, counter: &dyn TokenCounter) -> Option<usize> {
        let should = masked_count(self.observations.len(), MASK_LAST, self.polling);
        if should <= self.masked {
            return None;
        }
        let first = self.observations[self.masked];
        for &at in &self.observations[self.masked..should] {
            let message = &mut self.view[at];
            let lines = message.text().lines().count();
            message.content = Content::Text(placeholder(lines));
            self.view_tokens = self.view_tokens - self.raw[at] + counter.count_message(message);
        }
        self.masked = should;
        Some(first)
    }

    /// Replaces the previous summary and every turn before `cut` with one summary; the
    /// summarizer's bill.
    fn summarize(&mut self, cut: usize, counter: &dyn TokenCounter) -> Tokens {
        let body = self.head_len;
        let input = counter.count_text(PROMPT) + self.raw[body..cut].iter().sum::<usize>();
        let (text, output) = self.standin.summary_for(input, STANDIN_MAX_SUMMARY_TOKENS);
        let summary = Message::user(format!("{SUMMARY_PREFIX}\n{text}"));
        let summary_tokens = counter.count_message(&summary);

        let mut history = self.history[..body].to_vec();
        let mut raw = self.raw[..body].to_vec();
        history.push(summary);
        raw.push(summary_tokens);
        history.extend_from_slice(&self.history[cut..]);
        raw.extend_from_slice(&self.raw[cut..]);
        self.history = history;
        self.raw = raw;

        let shift = |at: usize| at - cut + body + 1;
        self.turn_starts = self
            .turn_starts
            .iter()
            .filter(|&&at| at >= cut)
            .map(|&at| shift(at))
            .collect();
        self.observations = self
            .observations
            .iter()
            .filter(|&&at| at >= cut)
            .map(|&at| shift(at))
            .collect();
        self.view = self.history.clone();
        self.view_tokens = self.raw.iter().sum();
        self.masked = 0;
        Tokens {
            uncached: input as u64,
            output: output as u64,
            ..Tokens::default()
        }
    }
}

impl Strategy for JetBrainsHybrid {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        let counter = env.counter;
        for message in appended {
            let at = self.history.len();
            if message.role == Role::Assistant {
                self.seen_assistant = true;
                self.turn_starts.push(at);
            } else if !self.seen_assistant {
                self.head_len += 1;
            }
            if message.is_tool_result() {
                self.observations.push(at);
            }
            let tokens = counter.count_message(message);
            self.raw.push(tokens);
            self.view_tokens += tokens;
            self.history.push(message.clone());
            self.view.push(message.clone());
        }
        let mut step = Step::default();
        let mut rewrote_from = self.update_mask(counter);
        if rewrote_from.is_some() {
            step.elision_epochs = 1;
        }

        let unsummarized = self.turn_starts.len();
        let periodic = unsummarized >= SUMMARY_EVERY_TURNS + KEEP_LAST_TURNS;
        let at_threshold = self.view_tokens > self.threshold;
        if (periodic || at_threshold) && unsummarized > KEEP_LAST_TURNS {
            let cut = self.turn_starts[unsummarized - KEEP_LAST_TURNS];
            // `summarize` rebuilds the view from the history; the masked `before` only
            // serves to find the first changed message.
            let before = std::mem::take(&mut self.view);
            step.summarizer = self.summarize(cut, counter);
            self.update_mask(counter);
            let shared = shared_prefix_len(&before, &self.view);
            rewrote_from = Some(rewrote_from.map_or(shared, |r| r.min(shared)));
            step.compactions = 1;
            step.elision_epochs = 0;
            step.summarizer_calls = 1;
        }
        step.rewrote_from = rewrote_from;
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        &self.view
    }
}
