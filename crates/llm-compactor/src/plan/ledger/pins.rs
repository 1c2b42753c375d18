//! Pinned instructions: the instruction files an agent client injects into user turns.
//!
//! Claude Code sends CLAUDE.md (and its other reminders) as `<system-reminder>` blocks
//! inside user turns; Codex sends AGENTS.md as a user message headed `# AGENTS.md
//! instructions for …` with an `<INSTRUCTIONS>` block (older versions: a
//! `<user_instructions>` block). To the ledger they were ordinary user text: one line
//! of 160 chars among the chat's questions, cut with them. Users report it as the first
//! thing compaction loses ("/compact causes Claude Code to ignore CLAUDE.md"). So they
//! are split out of the turn and kept verbatim in the ledger's highest tier, the
//! "Pinned instructions" section, which is filled before every other section, carried
//! from pass to pass, and listed once however often the client re-injected it.
//!
//! Pure: a text in, the pinned blocks and the rest out.

/// The tags whose blocks are pinned, whole (the tags included: they say what the block is).
const TAGS: [&str; 3] = ["system-reminder", "user_instructions", "INSTRUCTIONS"];

/// Headings that make a whole user message an instruction file.
const FILE_HEADINGS: [&str; 4] = ["# AGENTS.md", "# CLAUDE.md", "# agents.md", "# claude.md"];

/// A user turn's text split into its pinned blocks (verbatim, in order) and the rest
/// (trimmed; empty when the turn held nothing else).
///
/// ```
/// use llm_compactor::plan::ledger::split_pinned;
/// let text = "<system-reminder>\nContents of CLAUDE.md: never force-push.\n</system-reminder>\nFix the parser.";
/// let (pins, rest) = split_pinned(text);
/// assert_eq!(pins, vec!["<system-reminder>\nContents of CLAUDE.md: never force-push.\n</system-reminder>"]);
/// assert_eq!(rest, "Fix the parser.");
/// let (pins, rest) = split_pinned("# AGENTS.md instructions for /repo\n\nRun `make test` before committing.");
/// assert_eq!(pins.len(), 1);
/// assert!(rest.is_empty());
/// assert_eq!(split_pinned("Just a question?"), (vec![], "Just a question?".to_owned()));
/// ```
pub fn split_pinned(text: &str) -> (Vec<String>, String) {
    let trimmed = text.trim();
    if FILE_HEADINGS.iter().any(|h| trimmed.starts_with(h)) {
        return (vec![trimmed.to_owned()], String::new());
    }
    let mut pins = Vec::new();
    let mut rest = String::new();
    let mut at = 0;
    while let Some((start, end)) = next_block(text, at) {
        rest.push_str(&text[at..start]);
        pins.push(text[start..end].trim().to_owned());
        at = end;
    }
    rest.push_str(&text[at..]);
    (pins, rest.trim().to_owned())
}

/// The byte range of the first complete pinned block at or after `from`.
fn next_block(text: &str, from: usize) -> Option<(usize, usize)> {
    TAGS.iter()
        .filter_map(|tag| {
            let open = format!("<{tag}>");
            let close = format!("</{tag}>");
            let start = from + text[from..].find(&open)?;
            let end = start + open.len() + text[start + open.len()..].find(&close)? + close.len();
            Some((start, end))
        })
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_pinned_and_the_rest_kept_in_order() {
        let text = "Before. <user_instructions>Use tabs.</user_instructions> Middle. \
                    <system-reminder>Be terse.</system-reminder> After.";
        let (pins, rest) = split_pinned(text);
        assert_eq!(
            pins,
            vec![
                "<user_instructions>Use tabs.</user_instructions>",
                "<system-reminder>Be terse.</system-reminder>"
            ]
        );
        assert_eq!(rest, "Before.  Middle.  After.");
    }

    #[test]
    fn an_unclosed_tag_is_ordinary_text() {
        let (pins, rest) = split_pinned("<system-reminder>never closed");
        assert!(pins.is_empty());
        assert_eq!(rest, "<system-reminder>never closed");
    }
}
