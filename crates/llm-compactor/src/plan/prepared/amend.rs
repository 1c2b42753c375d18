//! [`amend_summary`]: a prepared summary with the ledger lines that changed since its
//! snapshot marked, so that the model does not read a stale fact as current.

use super::check::Change;
use crate::plan::ledger::LEDGER_HEADING;

/// The heading of the section listing changes no ledger line could carry.
pub const CHANGED_HEADING: &str = "### Changed since this summary was prepared (see the messages after it)";

/// The mark put after a ledger line whose fact changed.
fn mark(change: &Change) -> String {
    match change {
        Change::ErrorResolved { .. } => " [resolved since: see the messages after this summary]".to_owned(),
        Change::FileChanged { operation, .. } => {
            format!(" [{operation} since: see the messages after this summary]")
        }
        Change::NewerRequest { .. } => " [superseded: a newer request follows this summary]".to_owned(),
    }
}

/// The section a change's line lives in, and whether `line` (a `- ` item of it) is that
/// change's line.
fn owns(change: &Change, section: &str, line: &str) -> bool {
    let item = line.strip_prefix("- ").unwrap_or("");
    match change {
        Change::ErrorResolved { text } => section.starts_with("Open errors") && item.starts_with(text.as_str()),
        Change::FileChanged { path, .. } => {
            section.starts_with("Files touched")
                && item
                    .split_once(" (")
                    .is_some_and(|(p, _)| p == path || p.ends_with(&format!("/{path}")))
        }
        Change::NewerRequest { .. } => section.starts_with("Last user request"),
    }
}

/// `summary` (a summary message's whole content) with every changed fact marked on its
/// ledger line; changes whose line is not in the summary (no ledger, or the line was
/// cut by the ledger's cap) are listed under [`CHANGED_HEADING`] at the end. Pure and
/// deterministic; unchanged when `changes` is empty.
///
/// ```
/// use llm_compactor::plan::prepared::{amend_summary, Change};
/// let summary = "S\n\n## Ledger (verbatim facts from the replaced messages; nothing here is inferred)\n\
///                \x23## Open errors and failing tests\n- FAILED test_a (from `pytest`)";
/// let amended = amend_summary(summary, &[Change::ErrorResolved { text: "FAILED test_a".into() }]);
/// assert!(amended.contains("- FAILED test_a (from `pytest`) [resolved since"), "{amended}");
/// ```
pub fn amend_summary(summary: &str, changes: &[Change]) -> String {
    if changes.is_empty() {
        return summary.to_owned();
    }
    let mut placed = vec![false; changes.len()];
    let mut out: Vec<String> = Vec::new();
    let mut in_ledger = false;
    let mut section = String::new();
    for line in summary.split('\n') {
        if line.starts_with(LEDGER_HEADING) {
            in_ledger = true;
        } else if in_ledger && let Some(title) = line.strip_prefix("### ") {
            section = title.to_owned();
        }
        let mut line = line.to_owned();
        if in_ledger && line.starts_with("- ") {
            for (k, change) in changes.iter().enumerate() {
                if !placed[k] && owns(change, &section, &line) {
                    line.push_str(&mark(change));
                    placed[k] = true;
                }
            }
        }
        out.push(line);
    }
    let rest: Vec<&Change> = changes
        .iter()
        .zip(&placed)
        .filter(|(_, p)| !**p)
        .map(|(c, _)| c)
        .collect();
    let mut text = out.join("\n");
    if !rest.is_empty() {
        text.push_str("\n\n");
        text.push_str(CHANGED_HEADING);
        for change in rest {
            text.push_str("\n- ");
            text.push_str(&change.describe());
        }
    }
    text
}
