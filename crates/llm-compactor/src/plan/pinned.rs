//! Pinned messages: what a compaction must leave exactly where it is.
//!
//! Sticky messages are never summarized, elided or trimmed. A sticky assistant turn that
//! asked for tools drags its answers along: dropping them would leave the kept turn with
//! unanswered calls, which every provider rejects, and before this rule every pass over
//! such a conversation ended `exhausted` with no progress. So the answers of a sticky
//! turn are pinned with it: kept in place, never in the middle, never stubbed. The engine,
//! the validator and the session replay all ask this one function.

use super::pairs::Pairs;
use crate::message::Message;

/// For each message: true when it is sticky, or a tool result answering a sticky turn.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::{Pairs, pinned};
/// let messages = vec![
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("a", "ls", "{}")]).sticky(),
///     Message::tool("a", "x"),
///     Message::user("go"),
/// ];
/// assert_eq!(pinned(&messages, &Pairs::build(&messages)), vec![true, true, false]);
/// ```
pub fn pinned(messages: &[Message], pairs: &Pairs) -> Vec<bool> {
    (0..messages.len()).map(|i| is_pinned(messages, pairs, i)).collect()
}

/// [`pinned`] of the message at `index` alone (what a growing conversation learns once
/// per message: the asking turn comes before its answers).
pub(crate) fn is_pinned(messages: &[Message], pairs: &Pairs, index: usize) -> bool {
    let m = &messages[index];
    m.is_sticky()
        || (m.is_tool_result()
            && pairs
                .asker(index)
                .and_then(|turn| messages.get(turn))
                .is_some_and(Message::is_sticky))
}
