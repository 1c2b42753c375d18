//! A repeated user message, listed once with a count.
//!
//! Chat users restate: "remember, never touch the backups" three times in a session, a
//! "continue" after every answer. Listed once per turn, the same line took three slots of
//! the "Earlier user messages" section and pushed older, different instructions out of
//! its share of the cap. So an identical line (the message's one-line form) is listed
//! once, at its newest position, with how many times it was said: `… (×3)`. The text
//! stays verbatim; the count is a suffix the renderer writes and
//! [`super::parse_rendered`] reads back, so counts add up across passes.

use super::marks::{mark, split_count, split_superseded, with_count};

/// Adds `line` (an earlier user message's line, perhaps with a count of its own, as a
/// carried ledger holds it) to `lines`: a line with the same text already there is
/// moved to the end (the newest position) with the counts added.
///
/// ```
/// use llm_compactor::plan::ledger::push_repeated;
/// let mut lines = Vec::new();
/// for line in ["Keep it short.", "Use metric units.", "Keep it short.", "Keep it short. (×2)"] {
///     push_repeated(&mut lines, line.to_owned());
/// }
/// assert_eq!(lines, vec!["Use metric units.".to_owned(), "Keep it short. (×4)".to_owned()]);
/// ```
pub fn push_repeated(lines: &mut Vec<String>, line: String) {
    // A superseded mark follows the count; said again, the line holds again unless the
    // newer copy is itself marked.
    let (body, superseded) = split_superseded(&line);
    let (text, count) = split_count(body);
    match lines
        .iter()
        .position(|known| split_count(split_superseded(known).0).0 == text)
    {
        Some(i) => {
            let known = lines.remove(i);
            let total = split_count(split_superseded(&known).0).1.saturating_add(count);
            let merged = with_count(text, total);
            lines.push(if superseded { mark(&merged) } else { merged });
        }
        None => lines.push(line),
    }
}

/// Drops from `lines` the one that says `last` (the last request's line): a message said
/// again as the last request is listed there, not also among the earlier ones
/// (`compactor eval --instructions` found a rule said three times listed twice in 53 of
/// 56 runs).
pub(super) fn drop_said_again(lines: &mut Vec<String>, last: &str) {
    lines.retain(|known| split_count(split_superseded(known).0).0 != last);
}
