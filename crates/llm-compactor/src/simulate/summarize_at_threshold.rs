//! `summarize-at-threshold`: Codex-CLI-like auto-compaction.
//!
//! Source: OpenAI Codex CLI, `codex-rs/core/src/codex/compact.rs` (2025): when the
//! conversation nears the model's window (the auto-compact token limit; 90% of the window
//! here) the whole history is replaced by the initial context, the user messages (the
//! most recent ones, up to 20,000 tokens in all) and one summary message prefixed "Another
//! language model started to solve this problem and produced a summary of its thinking
//! process:". The summary is produced by the same model, as an ordinary turn: the whole
//! current history plus a summarization prompt.
//!
//! Modelled as: when the request about to be sent exceeds `ceil(0.9 x window)` tokens,
//! the summarizer call is billed like an agent request over the current conversation
//! plus the prompt (its prefix is read from the cache, the rest written) with the stand-in
//! summary as output; the new conversation is the sticky messages (system prompt), the
//! kept user messages in their order (earlier summaries excluded; a message that does not
//! fit the 20,000-token allowance is dropped with everything older) and the summary. No
//! tool result and no assistant turn survives, so the next request shares only the
//! system prompt with the cache.
//!
//! `claude-code-like` ([`SummarizeAtThreshold::claude_code`]) is the same mechanism with
//! Claude Code's auto-compact: a summary by the same model, as a cached turn, when 95%
//! of the usable window (the window less the output reserve) is used, and no user
//! message kept beside the summary (Claude Code's summary restates them).

use std::sync::Arc;

use crate::count::TokenCounter;
use crate::message::{Message, Role};
use crate::plan::Tokens;
use crate::simulate::SimError;
use crate::simulate::cost::shared_prefix_len;
use crate::simulate::standin::{STANDIN_MAX_SUMMARY_TOKENS, StandIn};
use crate::simulate::strategy::{Env, Step, Strategy};

/// The fraction of the window at which the conversation is compacted.
pub const THRESHOLD_RATIO: f64 = 0.9;
/// Tokens of user messages kept through a compaction.
pub const USER_MESSAGE_ALLOWANCE: usize = 20_000;
/// The prefix of the summary message.
pub const SUMMARY_PREFIX: &str =
    "Another language model started to solve this problem and produced a summary of its thinking process:";
/// The summarization prompt appended to the history (ours; Codex's is longer).
pub const PROMPT: &str = "Summarize the conversation so far for another model that will continue the task: \
the goal, what was done, the current state, and what remains.";

/// Claude Code's auto-compact threshold: 95% of the usable window.
pub const CLAUDE_CODE_RATIO: f64 = 0.95;

/// Codex-like: summarize everything but the user messages near the limit.
#[derive(Debug)]
pub struct SummarizeAtThreshold {
    name: &'static str,
    threshold: usize,
    user_allowance: usize,
    standin: StandIn,
    conversation: Vec<Message>,
    /// Tokens of `conversation`, kept up to date (a replay stays linear).
    tokens: usize,
}

impl SummarizeAtThreshold {
    /// Compacts above 90% of `window`.
    pub fn new(window: usize, counter: Arc<dyn TokenCounter>) -> Self {
        SummarizeAtThreshold {
            name: "summarize-at-threshold",
            threshold: (window as f64 * THRESHOLD_RATIO).ceil() as usize,
            user_allowance: USER_MESSAGE_ALLOWANCE,
            standin: StandIn::new(counter),
            conversation: Vec::new(),
            tokens: 0,
        }
    }

    /// Claude-Code-like: compacts above 95% of `window` less the output reserve the
    /// replay counts ([`crate::simulate::DEFAULT_MAX_OUTPUT`], or a quarter of a small
    /// window), keeping the system prompt and the summary only.
    pub fn claude_code(window: usize, counter: Arc<dyn TokenCounter>) -> Self {
        let usable = window - crate::simulate::DEFAULT_MAX_OUTPUT.min(window / 4);
        SummarizeAtThreshold {
            name: "claude-code-like",
            threshold: (usable as f64 * CLAUDE_CODE_RATIO).floor() as usize,
            user_allowance: 0,
            ..SummarizeAtThreshold::new(window, counter)
        }
    }

    fn is_summary(message: &Message) -> bool {
        message.role == Role::User && message.text().starts_with(SUMMARY_PREFIX)
    }
}

impl Strategy for SummarizeAtThreshold {
    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        self.conversation.extend_from_slice(appended);
        self.tokens += env.counter.count_messages(appended);
        let mut step = Step::default();
        let tokens = self.tokens;
        if tokens <= self.threshold {
            return Ok(step);
        }
        // The compaction turn: the history plus the prompt, a cached request (the
        // previous request's prompt is this conversation before the append).
        let cached = tokens - env.counter.count_messages(appended);
        let prompt = Message::user(PROMPT);
        let input = tokens + env.counter.count_message(&prompt);
        let (text, output) = self.standin.summary_for(input, STANDIN_MAX_SUMMARY_TOKENS);
        step.summarizer_calls = 1;
        step.summarizer = Tokens {
            cache_read: cached as u64,
            cache_write: (input - cached) as u64,
            uncached: 0,
            output: output as u64,
        };
        step.compactions = 1;

        // Newest user messages first, within the allowance.
        let mut kept_users = Vec::new();
        let mut allowance = self.user_allowance;
        for (i, m) in self.conversation.iter().enumerate().rev() {
            if m.role == Role::User && !m.is_sticky() && !Self::is_summary(m) {
                let n = env.counter.count_message(m);
                if n > allowance {
                    break;
                }
                allowance -= n;
                kept_users.push(i);
            }
        }
        let mut rebuilt: Vec<Message> = Vec::new();
        for (i, m) in self.conversation.iter().enumerate() {
            if m.is_sticky() || kept_users.contains(&i) {
                rebuilt.push(m.clone());
            }
        }
        rebuilt.push(Message::user(format!("{SUMMARY_PREFIX}\n{text}")));
        step.rewrote_from = Some(shared_prefix_len(&self.conversation, &rebuilt));
        self.tokens = env.counter.count_messages(&rebuilt);
        self.conversation = rebuilt;
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        &self.conversation
    }
}
