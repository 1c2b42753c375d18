//! The cut: where the middle ends and the recent window begins.
//!
//! The recent window starts `keep_recent` messages from the end and is extended backwards
//! while its first message is a tool result, so an assistant turn and the results that
//! answered it are never separated. Everything before the cut that is not sticky is the
//! middle: what a summary replaces, what aging may stub, what a hard trim may drop.

use super::pairs::Pairs;
use super::pinned::pinned;
use crate::message::Message;

/// The three regions of a conversation for one pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Layout {
    /// The last index of the region before the recent window; `None` when the recent
    /// window is the whole conversation.
    pub cut: Option<usize>,
    /// The first index of the recent window (`messages.len()` when it is empty).
    pub recent_start: usize,
    /// The indices in `0..=cut` that are not pinned (sticky, or answering a sticky
    /// turn), in order.
    pub middle: Vec<usize>,
}

impl Layout {
    /// The cut as the result reports it: -1 when there is none.
    pub fn cut_index(&self) -> i64 {
        self.cut.map_or(-1, |c| c as i64)
    }

    /// True when there is nothing to summarize (a no-op pass).
    pub fn is_noop(&self) -> bool {
        self.middle.is_empty()
    }
}

/// The layout of `messages` with `keep_recent` recent messages.
///
/// `start = max(0, n - keep_recent)`, then moved back while it points at a tool result
/// (the spec's pair extension), and also while a result at or after it answers a
/// non-sticky turn before it (a result separated from its asking turn by other messages;
/// for ordinary conversations this second rule never fires). `cut = start - 1`.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::layout;
/// let messages = vec![
///     Message::system("rules"),
///     Message::user("go"),
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "ls", "[]")]),
///     Message::tool("a", "x"),
///     Message::tool("b", "y"),
///     Message::assistant("done"),
/// ];
/// let l = layout(&messages, 2);
/// assert_eq!((l.cut, l.recent_start, l.middle.clone()), (Some(1), 2, vec![1]));
/// ```
pub fn layout(messages: &[Message], keep_recent: usize) -> Layout {
    let pairs = Pairs::build(messages);
    layout_with(messages, &pairs, keep_recent)
}

/// [`layout`] with a prebuilt pair index.
pub fn layout_with(messages: &[Message], pairs: &Pairs, keep_recent: usize) -> Layout {
    let start = recent_start(messages, pairs, keep_recent);
    let cut = start.checked_sub(1);
    let middle = match cut {
        Some(c) => {
            let pins = pinned(&messages[..=c], pairs);
            (0..=c).filter(|&i| !pins[i]).collect()
        }
        None => Vec::new(),
    };
    Layout {
        cut,
        recent_start: start,
        middle,
    }
}

/// The first index of the recent window ([`layout_with`]'s `recent_start`), reading only
/// the messages from there to the end: what a growing conversation can ask every round.
pub(crate) fn recent_start(messages: &[Message], pairs: &Pairs, keep_recent: usize) -> usize {
    let n = messages.len();
    let mut start = n.saturating_sub(keep_recent);
    // A last turn still waiting for its results is always recent: a summary placed
    // after it would leave its calls unanswered.
    if let Some(turn) = pending_turn(messages) {
        start = start.min(turn);
    }
    // The earliest non-sticky asking turn of any result at or after `start`, scanned
    // down only as far as `start` moves.
    let mut scanned = n;
    let mut earliest_asker = usize::MAX;
    let mut earliest_from = |start: usize| {
        while scanned > start {
            scanned -= 1;
            let own = pairs
                .asker(scanned)
                .filter(|&turn| messages.get(turn).is_some_and(|m| !m.is_sticky()))
                .unwrap_or(usize::MAX);
            earliest_asker = earliest_asker.min(own);
        }
        earliest_asker
    };
    loop {
        if start > 0 && start < n && messages[start].is_tool_result() {
            start -= 1;
        } else if start > 0 && earliest_from(start) < start {
            start = earliest_from(start);
        } else {
            break;
        }
    }
    start
}

/// The index of the last turn when it asked for tools and nothing but tool results
/// follows it (its calls may still be waiting for their results).
pub(crate) fn pending_turn(messages: &[Message]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| !m.is_tool_result())
        .filter(|&t| !messages[t].tool_calls.is_empty())
}
