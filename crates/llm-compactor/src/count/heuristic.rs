//! The heuristic counter: `8 + ceil(chars / 4)` per message.
//!
//! Free, tokenizer-agnostic and monotonic in the content, which makes it the fallback of
//! the calibrated counter and a safe default where no tokenizer is known.

use crate::count::TokenCounter;
use crate::count::framing::tool_calls_json_chars;
use crate::message::Message;

/// Per-message framing allowance of the heuristic.
pub const MESSAGE_OVERHEAD: usize = 8;

/// Chars of a message as the heuristic sees them: content chars plus the chars of the
/// compact JSON of its tool calls (`[{"id":..,"name":..,"arguments":..}]`).
pub fn message_chars(message: &Message) -> usize {
    message.content.chars() + tool_calls_json_chars(message)
}

/// `8 + ceil(chars / 4)` per message; `ceil(chars / 4)` for bare text.
///
/// ```
/// use llm_compactor::count::{HeuristicCounter, TokenCounter};
/// use llm_compactor::Message;
/// let counter = HeuristicCounter;
/// assert_eq!(counter.count_text("abcde"), 2);
/// assert_eq!(counter.count_message(&Message::user("abcde")), 10);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeuristicCounter;

impl TokenCounter for HeuristicCounter {
    fn name(&self) -> &str {
        "heuristic"
    }

    fn count_text(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }

    fn count_message(&self, message: &Message) -> usize {
        MESSAGE_OVERHEAD + message_chars(message).div_ceil(4)
    }
}
