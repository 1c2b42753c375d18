//! Token counting.
//!
//! Counting is a trait, [`TokenCounter`], because the right number depends on who asks:
//! the heuristic is free and tokenizer-agnostic, the BPE counters are exact for OpenAI's
//! encodings, and the calibrated usage counter is anchored on what the provider actually
//! billed. The compactor proves every compaction with the counter it was given (or the
//! per-call override), and never mixes units of two tokenizers.

use serde_json::Value;

use crate::message::Message;

/// Counts tokens of text, messages and whole requests.
///
/// Implementations are `Send + Sync` so one instance can be shared (behind an
/// `Arc<dyn TokenCounter>`) by the agent loop and the compactor: the loop's counter is the
/// one that has been calibrated against the provider's bills.
pub trait TokenCounter: Send + Sync {
    /// A short name for reports (`heuristic`, `o200k`, `cl100k`, `calibrated`, ...).
    fn name(&self) -> &str;

    /// Tokens of a bare text.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens of one message, framing overhead included.
    fn count_message(&self, message: &Message) -> usize;

    /// Tokens of a conversation. The default sums [`TokenCounter::count_message`];
    /// counters that are not additive (the calibrated one) override it.
    fn count_messages(&self, messages: &[Message]) -> usize {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    /// Tokens of a complete request: the conversation, the tool declarations it carries
    /// and any runtime context sent beside it.
    fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
        let tools_tokens = if tools.is_empty() {
            0
        } else {
            self.count_text(&serde_json::to_string(tools).unwrap_or_default())
        };
        let context_tokens = if context.is_empty() {
            0
        } else {
            self.count_text(context)
        };
        self.count_messages(messages) + tools_tokens + context_tokens
    }
}

mod heuristic;

pub use heuristic::{HeuristicCounter, MESSAGE_OVERHEAD, message_chars};
