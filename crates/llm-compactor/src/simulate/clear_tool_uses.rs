//! `clear-tool-uses`: Anthropic's context editing, tool-result clearing.
//!
//! Source: Anthropic, "Context editing" (docs.claude.com, beta header
//! `context-management-2025-06-27`), strategy `clear_tool_uses_20250919`: when the
//! prompt exceeds `trigger` input tokens (default 100,000) the oldest tool results are
//! cleared in chronological order and replaced by placeholder text, keeping the most
//! recent `keep` tool uses (default 3); `clear_at_least` (no default) makes an
//! activation happen only if it clears at least that many tokens, "to make the cache
//! invalidation worth it"; `exclude_tools` and `clear_tool_inputs` are not modelled
//! (defaults: none excluded, inputs kept).
//!
//! Modelled as: the trigger is checked on the conversation as already edited, cleared
//! results stay cleared, and an activation clears every uncleared tool result but the
//! last `keep`. Without `clear_at_least`, once the edited conversation is back over the
//! trigger, every round clears one more result and breaks the cache once more.
//!
//! At windows below 100k tokens the faithful default never fires before the window
//! overflows; it behaves exactly like `none` there, and the report says so.
//! [`ClearToolUses::scaled`] is a variant of ours, labelled `clear-tool-uses-scaled`,
//! whose trigger is half the window (100k is half of Claude's 200k window).

use crate::message::{Content, Message};
use crate::simulate::SimError;
use crate::simulate::strategy::{Env, Step, Strategy};

/// Anthropic's default trigger, in input tokens.
pub const DEFAULT_TRIGGER: usize = 100_000;
/// Anthropic's default number of tool uses kept.
pub const DEFAULT_KEEP: usize = 3;
/// The text a cleared tool result carries (Anthropic does not publish theirs).
pub const PLACEHOLDER: &str = "[tool result cleared by context editing]";

/// Tool-result clearing.
#[derive(Clone, Debug)]
pub struct ClearToolUses {
    name: &'static str,
    trigger: usize,
    keep: usize,
    clear_at_least: Option<usize>,
    conversation: Vec<Message>,
    /// Positions of tool results, in order.
    results: Vec<usize>,
    /// How many of `results` are cleared (always a prefix).
    cleared: usize,
    /// Tokens of `conversation`, kept up to date (a replay stays linear).
    tokens: usize,
}

impl ClearToolUses {
    /// A clearing strategy with these settings, reported as `name`.
    pub fn new(name: &'static str, trigger: usize, keep: usize, clear_at_least: Option<usize>) -> Self {
        ClearToolUses {
            name,
            trigger,
            keep,
            clear_at_least,
            conversation: Vec::new(),
            results: Vec::new(),
            cleared: 0,
            tokens: 0,
        }
    }

    /// Anthropic's defaults: trigger 100,000, keep 3, no `clear_at_least`.
    pub fn anthropic_defaults() -> Self {
        ClearToolUses::new("clear-tool-uses", DEFAULT_TRIGGER, DEFAULT_KEEP, None)
    }

    /// The labelled variant: trigger at half the window, keep 3.
    pub fn scaled(window: usize) -> Self {
        ClearToolUses::new("clear-tool-uses-scaled", window.div_ceil(2), DEFAULT_KEEP, None)
    }
}

impl Strategy for ClearToolUses {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        for message in appended {
            if message.is_tool_result() {
                self.results.push(self.conversation.len());
            }
            self.tokens += env.counter.count_message(message);
            self.conversation.push(message.clone());
        }
        let mut step = Step::default();
        if self.tokens <= self.trigger {
            return Ok(step);
        }
        let until = self.results.len().saturating_sub(self.keep);
        if until <= self.cleared {
            return Ok(step);
        }
        let stub_of = |m: &Message| {
            let mut stub = m.clone();
            stub.content = Content::Text(PLACEHOLDER.to_owned());
            stub
        };
        let freed: usize = self.results[self.cleared..until]
            .iter()
            .map(|&at| {
                let m = &self.conversation[at];
                env.counter
                    .count_message(m)
                    .saturating_sub(env.counter.count_message(&stub_of(m)))
            })
            .sum();
        if self.clear_at_least.is_some_and(|least| freed < least) {
            return Ok(step);
        }
        for &at in &self.results[self.cleared..until] {
            self.conversation[at] = stub_of(&self.conversation[at]);
        }
        step.rewrote_from = Some(self.results[self.cleared]);
        self.tokens -= freed;
        self.cleared = until;
        step.elision_epochs = 1;
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        &self.conversation
    }
}
