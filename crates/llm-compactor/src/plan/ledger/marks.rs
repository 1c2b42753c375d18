//! The marks a user line of the ledger may end in: how many times it was said
//! (` (×3)`, see [`super::push_repeated`]) and, after that, whether a later message
//! replaced it ([`SUPERSEDED`], see [`super::supersedes`]). The text before them stays
//! verbatim; the renderer writes the marks and [`super::parse_rendered`] reads them back
//! with the line, so they hold across passes.

/// The suffix that marks a superseded line.
pub const SUPERSEDED: &str = " (superseded by a later message)";

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
pub(crate) fn with_count(text: &str, count: usize) -> String {
    if count > 1 {
        format!("{text}{OPEN}{count})")
    } else {
        text.to_owned()
    }
}

/// A line's text without its superseded mark, and whether it had one.
///
/// ```
/// use llm_compactor::plan::ledger::split_superseded;
/// assert_eq!(split_superseded("Cap is $201. (superseded by a later message)"), ("Cap is $201.", true));
/// assert_eq!(split_superseded("Cap is $956."), ("Cap is $956.", false));
/// ```
pub fn split_superseded(line: &str) -> (&str, bool) {
    match line.strip_suffix(SUPERSEDED) {
        Some(text) => (text, true),
        None => (line, false),
    }
}

/// `line` marked superseded (once).
pub(crate) fn mark(line: &str) -> String {
    let (text, _) = split_superseded(line);
    format!("{text}{SUPERSEDED}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_is_written_once_and_read_back() {
        let once = mark("Cap is $201.");
        assert_eq!(mark(&once), once);
        assert_eq!(split_superseded(&once), ("Cap is $201.", true));
    }
}
