//! Building the compacted conversation from a cut and the text that replaces the middle.
//!
//! This is the one transformation both `compact` and a session replay perform:
//! `[sticky messages at or before cut] ++ [one inserted message] ++ [everything after
//! cut]`, after the elisions have been applied. The inserted message is a user message
//! (the role every provider accepts arbitrary text in) and is not sticky, so a later
//! compaction folds it into a newer summary.

use super::elision::Elision;
use super::pairs::Pairs;
use super::pinned::pinned;
use crate::message::{Content, Message};

/// The first line of every message a compaction inserts (a summary or a trim notice).
pub const SUMMARY_HEADER: &str = "[Summary of the earlier conversation, written by the context compactor]";

/// The whole content of a summary message: the header line, a newline, the summary.
///
/// ```
/// use llm_compactor::plan::{summary_content, SUMMARY_HEADER};
/// assert_eq!(summary_content("Goals: ..."), format!("{SUMMARY_HEADER}\nGoals: ..."));
/// ```
pub fn summary_content(summary: &str) -> String {
    format!("{SUMMARY_HEADER}\n{summary}")
}

/// The whole content of a hard-trim notice: the header line, then what happened and
/// what to do about it.
pub(crate) fn notice_content(dropped: usize) -> String {
    let noun = if dropped == 1 { "message was" } else { "messages were" };
    format!(
        "{SUMMARY_HEADER}\n{dropped} earlier {noun} dropped unsummarized to fit the context window \
         (the summarizer could not produce a summary). Their content is gone: if you need \
         something from them, ask the user rather than guess."
    )
}

/// The inserted message: role user, not sticky, with exactly `content`.
pub(crate) fn summary_message(content: &str) -> Message {
    Message::user(content)
}

/// `messages` with each elision's stub in place of its content. Role, position, ids
/// and every other field are kept. An index out of range is ignored.
pub fn apply_elisions(messages: &[Message], elisions: &[Elision]) -> Vec<Message> {
    let mut out = messages.to_vec();
    for elision in elisions {
        if let Some(message) = out.get_mut(elision.index) {
            message.content = Content::Text(elision.stub.clone());
        }
    }
    out
}

/// The conversation with every non-pinned message in `0..=cut` replaced by one message
/// of `content`, placed after the pinned messages of `0..=cut` (sticky ones, and the
/// answers of a sticky turn, see [`super::pinned`]); and how many messages were replaced.
///
/// ```
/// use llm_compactor::message::Message;
/// use llm_compactor::plan::assemble;
/// let messages = vec![Message::system("s"), Message::user("a"), Message::assistant("b"), Message::user("c")];
/// let (out, dropped) = assemble(&messages, 2, "S");
/// assert_eq!(dropped, 2);
/// assert_eq!(out, vec![Message::system("s"), Message::user("S"), Message::user("c")]);
/// ```
pub fn assemble(messages: &[Message], cut: usize, content: &str) -> (Vec<Message>, usize) {
    let split = (cut + 1).min(messages.len());
    let (head, tail) = messages.split_at(split);
    let mut out: Vec<Message> = Vec::with_capacity(messages.len().saturating_sub(split) + 8);
    let pins = pinned(head, &Pairs::build(head));
    out.extend(head.iter().zip(&pins).filter(|(_, pin)| **pin).map(|(m, _)| m.clone()));
    let dropped = head.len() - out.len();
    out.push(summary_message(content));
    out.extend(tail.iter().cloned());
    (out, dropped)
}
