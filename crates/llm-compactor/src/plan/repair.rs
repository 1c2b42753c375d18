//! Repairing a conversation that arrives already broken.
//!
//! The promise is that whatever `compact` hands back is a conversation the provider
//! accepts. An input can break that before any compaction happens: a tool result whose
//! call is nowhere before it (an orphan), or a call that was never answered while the
//! conversation went on. We repair as the strongest peers do, in the pure core, and say
//! so in the result:
//!
//! - an orphan tool result is dropped, with a warning, and listed (the whole message, so
//!   nothing is lost to the caller);
//! - a call with no answer, in a turn that the conversation has moved on from, gets a
//!   synthetic answer ([`SYNTHETIC_ANSWER`]) placed right after the answers that exist
//!   (or right after the turn). Calls of the last turn that are followed only by their
//!   own answers are pending, not missing: the agent is about to run them;
//! - two tool calls with the same id in one turn, or an id reused while the earlier call
//!   with it is still unanswered, cannot be told apart by any provider: that is refused
//!   ([`RepairError`]) with the index of the second one, not guessed at. An id reused
//!   after its earlier call was answered is accepted (gpt-4o trajectories do this, and
//!   each result pairs with the nearest call before it).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::pairs::Pairs;
use crate::message::Message;

/// The content of a synthetic answer to a call that was never answered.
pub const SYNTHETIC_ANSWER: &str =
    "[no result recorded: the harness has no result for this tool call; run it again if you need it]";

/// One change the repair made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Repair {
    /// A tool result that answers no call before it, dropped.
    DroppedOrphan {
        /// Its index in the input.
        index: usize,
        /// The dropped message, whole.
        message: Message,
    },
    /// A synthetic answer to a call that was never answered.
    SyntheticAnswer {
        /// The input index of the message it was placed right after (the asking turn
        /// or its last existing answer).
        after: usize,
        /// The id of the call it answers.
        tool_call_id: String,
        /// Its content ([`SYNTHETIC_ANSWER`]).
        content: String,
    },
}

/// An input no repair can make valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("message {index}: {problem}")]
#[non_exhaustive]
pub struct RepairError {
    /// The index of the offending message.
    pub index: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// The repairs `messages` needs, in input order (none for a well-formed conversation).
///
/// # Errors
/// A tool call id used twice in one turn, or again before its earlier call was answered
/// (the index is the message with the second use).
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::{Repair, apply_repairs, plan_repairs};
/// let messages = vec![
///     Message::tool("ghost", "orphan"),
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("a", "ls", "{}")]),
///     Message::user("never mind"),
/// ];
/// let repairs = plan_repairs(&messages).unwrap();
/// assert!(matches!(&repairs[0], Repair::DroppedOrphan { index: 0, .. }));
/// assert!(matches!(&repairs[1], Repair::SyntheticAnswer { after: 1, .. }));
/// let repaired = apply_repairs(&messages, &repairs);
/// assert_eq!(repaired.len(), 3);
/// assert_eq!(repaired[1].tool_call_id.as_deref(), Some("a"));
/// ```
pub fn plan_repairs(messages: &[Message]) -> Result<Vec<Repair>, RepairError> {
    // An id may be reused once its earlier call was answered (gpt-4o trajectories do,
    // and OpenAI-compatible servers pair them in order); reused within one turn, or
    // while the earlier call with it is still unanswered, it is ambiguous.
    let mut open: HashSet<&str> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        if message.is_tool_result()
            && let Some(id) = message.tool_call_id.as_deref()
        {
            open.remove(id);
        }
        let mut own: HashSet<&str> = HashSet::new();
        for call in &message.tool_calls {
            if !own.insert(call.id.as_str()) || open.contains(call.id.as_str()) {
                return Err(RepairError {
                    index,
                    problem: format!(
                        "tool call id {:?} is used again before its earlier call was answered; no provider can \
                         tell their results apart",
                        call.id
                    ),
                });
            }
        }
        open.extend(own);
    }
    let pairs = Pairs::build(messages);
    let dropped = orphans(messages, &pairs);
    let mut repairs: Vec<Repair> = dropped
        .iter()
        .map(|&index| Repair::DroppedOrphan {
            index,
            message: messages[index].clone(),
        })
        .collect();
    let mut answered: HashSet<&str> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        if message.is_tool_result()
            && !dropped.contains(&index)
            && let Some(id) = message.tool_call_id.as_deref()
        {
            answered.insert(id);
        }
    }
    for (turn, message) in messages.iter().enumerate() {
        // A dropped orphan takes its own calls with it: answering them would leave
        // answers with no call (fuzz-found: a tool result that also carries calls).
        if message.tool_calls.is_empty() || dropped.contains(&turn) {
            continue;
        }
        let after = pairs.last_answer(turn).unwrap_or(turn);
        // Pending: nothing but tool results follows the turn.
        if messages[turn + 1..].iter().all(Message::is_tool_result) {
            continue;
        }
        for call in &message.tool_calls {
            if !answered.contains(call.id.as_str()) {
                repairs.push(Repair::SyntheticAnswer {
                    after,
                    tool_call_id: call.id.clone(),
                    content: SYNTHETIC_ANSWER.to_owned(),
                });
            }
        }
    }
    repairs.sort_by_key(|r| match r {
        Repair::DroppedOrphan { index, .. } => (*index, 0),
        Repair::SyntheticAnswer { after, .. } => (*after, 1),
    });
    Ok(repairs)
}

/// The tool results no provider would accept: those answering no call, then (to a fixed
/// point) those answering a call of a result dropped before them, since a result that
/// also carries calls leaves with them.
fn orphans(messages: &[Message], pairs: &Pairs) -> std::collections::BTreeSet<usize> {
    let mut dropped = std::collections::BTreeSet::new();
    loop {
        let before = dropped.len();
        for (index, message) in messages.iter().enumerate() {
            if !message.is_tool_result() || dropped.contains(&index) {
                continue;
            }
            let asked = match (pairs.asker(index), message.tool_call_id.as_deref()) {
                (Some(asker), Some(_)) => !dropped.contains(&asker),
                _ => false,
            };
            if !asked {
                dropped.insert(index);
            }
        }
        if dropped.len() == before {
            return dropped;
        }
    }
}

/// `messages` with `repairs` applied: orphans removed, synthetic answers inserted after
/// the message they name (an answer to a sticky turn is pinned with it, see
/// [`super::pinned`]). Repairs naming an index out of range are ignored.
pub fn apply_repairs(messages: &[Message], repairs: &[Repair]) -> Vec<Message> {
    let dropped: HashSet<usize> = repairs
        .iter()
        .filter_map(|r| match r {
            Repair::DroppedOrphan { index, .. } => Some(*index),
            Repair::SyntheticAnswer { .. } => None,
        })
        .collect();
    let mut answers: std::collections::BTreeMap<usize, Vec<Message>> = std::collections::BTreeMap::new();
    for repair in repairs {
        if let Repair::SyntheticAnswer {
            after,
            tool_call_id,
            content,
        } = repair
        {
            answers
                .entry(*after)
                .or_default()
                .push(Message::tool(tool_call_id.clone(), content.clone()));
        }
    }
    let mut out = Vec::with_capacity(messages.len() + repairs.len());
    for (index, message) in messages.iter().enumerate() {
        if !dropped.contains(&index) {
            out.push(message.clone());
        }
        if let Some(synthetic) = answers.remove(&index) {
            out.extend(synthetic);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Role, ToolCall};

    /// Regression (fuzz-found): a tool result that answers nothing but carries calls of its
    /// own was dropped while its calls got synthetic answers, which were then orphans.
    #[test]
    fn an_orphan_result_that_carries_calls_takes_them_with_it() {
        let mut caller_result = Message::tool("nobody", "out");
        caller_result.tool_calls = vec![ToolCall::new("a", "ls", "{}")];
        let mut answer = Message::tool("a", "answer to a");
        answer.role = Role::Tool;
        let messages = vec![Message::user("go"), caller_result, answer, Message::user("next")];
        let repairs = plan_repairs(&messages).unwrap();
        let repaired = apply_repairs(&messages, &repairs);
        assert_eq!(repaired.len(), 2, "{repaired:?}");
        assert!(repaired.iter().all(|m| !m.is_tool_result()), "{repaired:?}");
        assert!(
            repairs.iter().all(|r| matches!(r, Repair::DroppedOrphan { .. })),
            "{repairs:?}"
        );
    }
}
