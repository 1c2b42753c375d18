//! [`render`]: the ledger as fixed sections of plain text, under a size cap.
//!
//! The sections always come in the same order with the same headings, so an agent (and
//! a test) knows where to look. When the cap is too small, each section first gets a
//! fair share, then the leftover goes to the sections in priority order (the last user
//! request, open errors, files, commands, resolved errors, earlier user messages,
//! identifiers), and within a section the newest facts are kept: the oldest are what a
//! continuing agent needs least.

use super::Ledger;

/// The heading line of a rendered ledger.
pub const LEDGER_HEADING: &str = "## Ledger (verbatim facts from the replaced messages; nothing here is inferred)";

struct Section {
    title: &'static str,
    /// Lines, oldest first.
    lines: Vec<String>,
    /// How many of the newest lines are kept.
    kept: usize,
}

/// Renders `ledger` in at most `max_chars` chars (Unicode scalar values); empty when
/// the ledger is empty or the cap leaves no room for any fact.
///
/// ```
/// use llm_compactor::plan::ledger::{render, Ledger, LEDGER_HEADING};
/// let ledger = Ledger { last_user: Some("Please fix the bug.".into()), ..Ledger::default() };
/// let text = render(&ledger, 1000);
/// assert!(text.starts_with(LEDGER_HEADING));
/// assert!(text.contains("Please fix the bug."));
/// assert!(render(&ledger, 10).is_empty());
/// ```
pub fn render(ledger: &Ledger, max_chars: usize) -> String {
    let mut sections = sections(ledger);
    let heading = LEDGER_HEADING.chars().count() + 1;
    if ledger.is_empty() || max_chars <= heading {
        return String::new();
    }
    let mut used = heading;
    let cost = |s: &Section, line: usize| s.lines[line].chars().count() + 3;
    // Title line plus room for a `(N older omitted)` note.
    let title_cost = |s: &Section| s.title.chars().count() + 5 + 28;
    let present = sections.iter().filter(|s| !s.lines.is_empty()).count().max(1);
    let share = (max_chars - heading) / present;
    // Pass 1: a fair share each, in priority order, newest first.
    for section in sections.iter_mut().filter(|s| !s.lines.is_empty()) {
        let mut spent = title_cost(section);
        if used + spent > max_chars {
            continue;
        }
        let start = used;
        used += spent;
        while section.kept < section.lines.len() {
            let line = section.lines.len() - 1 - section.kept;
            let c = cost(section, line);
            if (spent + c > share && section.kept > 0) || used + c > max_chars {
                break;
            }
            spent += c;
            used += c;
            section.kept += 1;
        }
        if section.kept == 0 {
            used = start;
        }
    }
    // Pass 2: the leftover, in priority order.
    for section in sections.iter_mut().filter(|s| !s.lines.is_empty()) {
        if section.kept == 0 {
            let t = title_cost(section);
            let c = cost(section, section.lines.len() - 1);
            if used + t + c > max_chars {
                continue;
            }
            used += t;
        }
        while section.kept < section.lines.len() {
            let c = cost(section, section.lines.len() - 1 - section.kept);
            if used + c > max_chars {
                break;
            }
            used += c;
            section.kept += 1;
        }
    }
    let mut out = String::from(LEDGER_HEADING);
    for section in sections.iter().filter(|s| s.kept > 0) {
        let omitted = section.lines.len() - section.kept;
        out.push_str("\n### ");
        out.push_str(section.title);
        for line in &section.lines[omitted..] {
            out.push_str("\n- ");
            out.push_str(line);
        }
        if omitted > 0 {
            // Its room was reserved with the title.
            out.push_str(&format!("\n- ({omitted} older omitted)"));
        }
    }
    out
}

fn sections(ledger: &Ledger) -> Vec<Section> {
    let section = |title, lines| Section { title, lines, kept: 0 };
    let errors = |open: bool| {
        ledger
            .errors
            .iter()
            .filter(|e| e.open == open)
            .map(|e| match &e.command {
                Some(c) if c.chars().count() <= 80 => format!("{} (from `{}`)", e.text, c.replace('\n', " ⏎ ")),
                _ => e.text.clone(),
            })
            .collect()
    };
    let mut files: Vec<&super::FileFact> = ledger.files.iter().collect();
    files.sort_by_key(|f| f.last_seen);
    let mut commands: Vec<&super::CommandFact> = ledger.commands.iter().collect();
    commands.sort_by_key(|c| c.last_seen);
    vec![
        section(
            "Last user request (verbatim)",
            ledger.last_user.iter().cloned().collect(),
        ),
        section("Open errors and failing tests", errors(true)),
        section(
            "Files touched",
            files
                .iter()
                .map(|f| format!("{} ({})", f.path, f.operations.join(", ")))
                .collect(),
        ),
        section(
            "Commands run (newest last)",
            commands
                .iter()
                .map(|c| {
                    let mut line = format!("`{}`", c.command);
                    if let Some(code) = c.exit {
                        line.push_str(&format!(" -> exit {code}"));
                    }
                    if c.runs > 1 {
                        line.push_str(&format!(" (x{})", c.runs));
                    }
                    line
                })
                .collect(),
        ),
        section("Resolved errors", errors(false)),
        section("Earlier user messages", ledger.earlier_users.clone()),
        section("Identifiers named", ledger.identifiers.clone()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ledger::{CommandFact, FileFact};

    fn big() -> Ledger {
        Ledger {
            last_user: Some("fix it".into()),
            files: (0..50)
                .map(|i| FileFact {
                    path: format!("src/file_{i}.py"),
                    operations: vec!["read".into()],
                    last_seen: i,
                })
                .collect(),
            commands: (0..50)
                .map(|i| CommandFact {
                    command: format!("pytest tests/test_{i}.py"),
                    exit: Some(0),
                    runs: 1,
                    last_seen: i,
                })
                .collect(),
            ..Ledger::default()
        }
    }

    #[test]
    fn cap_is_respected_and_newest_kept() {
        let ledger = big();
        for cap in [100, 300, 1000, 5000] {
            let text = render(&ledger, cap);
            assert!(text.chars().count() <= cap, "{cap}: {}", text.chars().count());
        }
        let text = render(&ledger, 1000);
        assert!(text.contains("src/file_49.py"));
        assert!(!text.contains("src/file_0.py"));
        assert!(text.contains("pytest tests/test_49.py"));
        assert!(text.contains("fix it"));
        assert!(text.contains("older omitted"));
    }

    #[test]
    fn everything_fits_when_room() {
        let text = render(&big(), 100_000);
        assert!(text.contains("src/file_0.py (read)"));
        assert!(!text.contains("omitted"));
    }
}
