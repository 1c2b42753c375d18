//! A repeated user message, listed once with a count.
//!
//! Chat users restate: "remember, never touch the backups" three times in a session, a
//! "continue" after every answer. Listed once per turn, the same line took three slots of
//! the "Earlier user messages" section and pushed older, different instructions out of
//! its share of the cap. So an identical line (the message's one-line form) is listed
//! once, at its newest position, with how many times it was said: `… (×3)`. The text
//! stays verbatim; the count is a suffix the renderer writes and
//! [`super::parse_rendered`] reads back, so counts add up across passes.

/// The suffix's opening: ` (×3)` ends a line said three times.
const OPEN: &str = " (×";

/// A line's text without its count, and the count (1 when it has none).
///
/// ```
/// use llm_compactor::plan::ledger::split_count;
/// assert_eq!(split_count("Never delete the backups. (×3)"), ("Never delete the backups.", 3));
/// assert_eq!(split_count("Use metric units."), ("Use metric units.", 1));
/// assert_eq!(split_count("a (×) b"), ("a (×) b", 1));
/// ```
pub fn split_count(line: &str) -> (&str, usize) {
    let parsed = line.strip_suffix(')').and_then(|body| {
        let (text, digits) = body.rsplit_once(OPEN)?;
        let count = digits
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| digits.parse::<usize>().ok())??;
        (count > 1).then_some((text, count))
    });
    parsed.unwrap_or((line, 1))
}

/// `text` as a line said `count` times.
fn with_count(text: &str, count: usize) -> String {
    if count > 1 {
        format!("{text}{OPEN}{count})")
    } else {
        text.to_owned()
    }
}

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
    let (text, count) = split_count(&line);
    match lines.iter().position(|known| split_count(known).0 == text) {
        Some(i) => {
            let known = lines.remove(i);
            let total = split_count(&known).1.saturating_add(count);
            lines.push(with_count(text, total));
        }
        None => lines.push(line),
    }
}
