//! [`render`]: the ledger as fixed sections of plain text, under a size cap.
//!
//! The sections always come in the same order with the same headings, so an agent (and
//! a test) knows where to look. The cap is shared so that no section can starve the
//! others (a 2,000-char task description once took two thirds of the default cap and
//! left the commands 6% of their probes):
//!
//! - the *state* comes first and is bounded: the last user request gets at most a
//!   quarter of the room (its verbatim head, cut with `…`), the open errors at most a
//!   quarter (newest first); earlier user messages and identifiers at most a
//!   sixteenth each;
//! - the *history* (files, commands, resolved errors) shares everything left with one
//!   clock: facts are taken newest first across the three sections, and the cut is a
//!   single point in time, so what is kept is exactly "everything since message N"
//!   (each section says how many older facts it omitted);
//! - what the history leaves goes back to the open errors, earlier requests and
//!   identifiers their shares cut.
//!
//! Lines are dense: a path named both absolutely and relatively is one line (the
//! longer form, which contains the shorter), operations merged; a command is its head
//! with `✓` (exit 0) or `✗ N` (exit N) and `×N` when it ran N times.

use super::scan::first_line;
use super::{CommandFact, ErrorFact, FileFact, Ledger};

/// The heading line of a rendered ledger.
pub const LEDGER_HEADING: &str = "## Ledger (verbatim facts from the replaced messages; nothing here is inferred)";

/// Chars of a command shown after an open error (`(from `...`)`).
const FROM_CHARS: usize = 60;
/// Chars reserved with a section's title for its `(N older omitted)` line.
const OMITTED_RESERVE: usize = 28;

struct Section {
    title: &'static str,
    /// (line, order of its last message), oldest first.
    lines: Vec<(String, usize)>,
    /// How many of the newest lines are kept.
    kept: usize,
}

impl Section {
    fn new(title: &'static str, lines: Vec<(String, usize)>) -> Self {
        Section { title, lines, kept: 0 }
    }

    /// Chars of the title line (and the reserve for the omitted note when the section
    /// has more than one line).
    fn title_cost(&self) -> usize {
        let reserve = if self.lines.len() > 1 { OMITTED_RESERVE } else { 0 };
        self.title.chars().count() + 5 + reserve
    }

    /// Chars of the `k`-th newest line.
    fn line_cost(&self, k: usize) -> usize {
        self.lines[self.lines.len() - 1 - k].0.chars().count() + 3
    }

    /// Keeps the newest lines while they fit in `room` (title included); returns the
    /// chars spent.
    fn fill(&mut self, room: usize) -> usize {
        if self.lines.is_empty() {
            return 0;
        }
        let mut spent = self.title_cost();
        while self.kept < self.lines.len() {
            let c = self.line_cost(self.kept);
            if spent + c > room {
                break;
            }
            spent += c;
            self.kept += 1;
        }
        if self.kept == 0 { 0 } else { spent }
    }
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
    let Some(s) = plan(ledger, max_chars) else {
        return String::new();
    };
    let mut out = String::from(LEDGER_HEADING);
    for section in s.iter().filter(|s| s.kept > 0) {
        let omitted = section.lines.len() - section.kept;
        out.push_str("\n### ");
        out.push_str(section.title);
        for (line, _) in &section.lines[omitted..] {
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

/// True when [`render`] at `max_chars` keeps every fact of the history (files,
/// commands, resolved errors) and every open error: nothing of them is cut. (The
/// request is its head by design.) What `compactor eval` uses to tell the probes that
/// fit the cap from those that cannot.
///
/// ```
/// use llm_compactor::plan::ledger::{history_fits, CommandFact, Ledger};
/// let command = CommandFact { command: "pytest".into(), exit: Some(0), runs: 1, last_seen: 0 };
/// let ledger = Ledger { commands: vec![command; 40], ..Ledger::default() };
/// assert!(history_fits(&ledger, 100_000));
/// assert!(!history_fits(&ledger, 300));
/// ```
pub fn history_fits(ledger: &Ledger, max_chars: usize) -> bool {
    match plan(ledger, max_chars) {
        None => ledger.files.is_empty() && ledger.commands.is_empty() && ledger.errors.is_empty(),
        Some(s) => s[1..5].iter().all(|sec| sec.kept == sec.lines.len()),
    }
}

/// The sections with how many lines of each are kept; `None` when nothing is.
fn plan(ledger: &Ledger, max_chars: usize) -> Option<[Section; 7]> {
    let heading = LEDGER_HEADING.chars().count() + 1;
    if ledger.is_empty() || max_chars <= heading {
        return None;
    }
    let budget = max_chars - heading;
    let mut s = sections(ledger, budget);
    let [request, open, files, commands, resolved, earlier, identifiers] = &mut s;
    // The state, each part bounded.
    let mut used = request.fill(budget / 4);
    used += open.fill((budget / 4).min(budget - used));
    used += earlier.fill((budget / 16).min(budget - used));
    used += identifiers.fill((budget / 16).min(budget - used));
    // The history: newest first across files, commands and resolved errors, one cut.
    let mut history = [files, commands, resolved];
    loop {
        let next = history
            .iter()
            .enumerate()
            .filter(|(_, sec)| sec.kept < sec.lines.len())
            .max_by_key(|(k, sec)| (sec.lines[sec.lines.len() - 1 - sec.kept].1, std::cmp::Reverse(*k)))
            .map(|(k, _)| k);
        let Some(k) = next else { break };
        let sec = &mut history[k];
        let mut cost = sec.line_cost(sec.kept);
        if sec.kept == 0 {
            cost += sec.title_cost();
        }
        if used + cost > budget {
            break;
        }
        used += cost;
        sec.kept += 1;
    }
    // What the history left: to the open errors, earlier requests and identifiers
    // their shares cut.
    for k in [1, 5, 6] {
        let sec = &mut s[k];
        if sec.kept == 0 {
            used += sec.fill(budget - used);
            continue;
        }
        while sec.kept < sec.lines.len() && used + sec.line_cost(sec.kept) <= budget {
            used += sec.line_cost(sec.kept);
            sec.kept += 1;
        }
    }
    s.iter().any(|sec| sec.kept > 0).then_some(s)
}

/// `text` cut to at most `cap` chars, with `…` when cut.
fn head(text: &str, cap: usize) -> String {
    if text.chars().count() <= cap {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(cap.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn error_line(e: &ErrorFact) -> (String, usize) {
    let line = match (&e.command, e.open) {
        (Some(c), true) => {
            format!("{} (from `{}`)", e.text, head(first_line(c), FROM_CHARS))
        }
        _ => e.text.clone(),
    };
    (line, e.last_seen)
}

/// The commands' heading, its legend naming only the marks its lines carry: a
/// transcript whose tool results report no exit status shows no ✓ or ✗, and a legend that
/// promised them would read as if every command's status were unknown for a reason.
fn commands_title(commands: &[&CommandFact]) -> &'static str {
    let exits = commands.iter().any(|c| c.exit.is_some());
    let repeats = commands.iter().any(|c| c.runs > 1);
    match (exits, repeats) {
        (true, true) => "Commands run (newest last; ✓ exit 0, ✗ N exit status N, ×N runs)",
        (true, false) => "Commands run (newest last; ✓ exit 0, ✗ N exit status N)",
        (false, true) => "Commands run (newest last; ×N runs)",
        (false, false) => "Commands run (newest last)",
    }
}

fn command_line(c: &CommandFact) -> (String, usize) {
    let mut line = format!("`{}`", c.command);
    match c.exit {
        Some(0) => line.push_str(" ✓"),
        Some(code) => line.push_str(&format!(" ✗ {code}")),
        None => {}
    }
    if c.runs > 1 {
        line.push_str(&format!(" ×{}", c.runs));
    }
    (line, c.last_seen)
}

/// The files with every path that is the tail of exactly one longer path
/// (`src/x.py` of `/testbed/src/x.py`) merged into it: the longer line contains the
/// shorter, so nothing is lost. Oldest first.
pub(crate) fn merged_files(files: &[FileFact]) -> Vec<FileFact> {
    let mut out: Vec<FileFact> = files.to_vec();
    // Longest first, so a path merges into a longer one that is itself final.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(out[i].path.len()));
    let mut gone = vec![false; out.len()];
    for (rank, &short) in order.iter().enumerate() {
        // `./x.py` is not a substring of `/testbed/x.py`: it stays as written.
        if out[short].path.starts_with("./") {
            continue;
        }
        let tail = format!("/{}", out[short].path);
        let longer: Vec<usize> = order[..rank]
            .iter()
            .copied()
            .filter(|&l| !gone[l] && out[l].path.ends_with(&tail))
            .collect();
        if let [target] = longer[..] {
            gone[short] = true;
            let (ops, seen) = (out[short].operations.clone(), out[short].last_seen);
            let fact = &mut out[target];
            for op in ops {
                if !fact.operations.contains(&op) {
                    fact.operations.push(op);
                }
            }
            fact.last_seen = fact.last_seen.max(seen);
        }
    }
    let mut kept: Vec<FileFact> = out.into_iter().zip(gone).filter(|(_, g)| !g).map(|(f, _)| f).collect();
    kept.sort_by_key(|f| f.last_seen);
    kept
}

fn sections(ledger: &Ledger, budget: usize) -> [Section; 7] {
    let errors = |open: bool| -> Vec<(String, usize)> {
        let mut lines: Vec<&ErrorFact> = ledger.errors.iter().filter(|e| e.open == open).collect();
        lines.sort_by_key(|e| e.last_seen);
        lines.into_iter().map(error_line).collect()
    };
    let mut commands: Vec<&CommandFact> = ledger.commands.iter().collect();
    commands.sort_by_key(|c| c.last_seen);
    // Lines without an order keep their list order (oldest first).
    let ordered =
        |lines: &[String]| -> Vec<(String, usize)> { lines.iter().enumerate().map(|(i, l)| (l.clone(), i)).collect() };
    // The request's verbatim head: at most a quarter of the room, less its frame.
    let request_cap = (budget / 4).saturating_sub(60).max(40);
    [
        Section::new(
            "Last user request (verbatim)",
            ledger.last_user.iter().map(|u| (head(u, request_cap), 0)).collect(),
        ),
        Section::new("Open errors and failing tests", errors(true)),
        Section::new(
            "Files touched",
            merged_files(&ledger.files)
                .iter()
                .map(|f| (format!("{} ({})", f.path, f.operations.join(", ")), f.last_seen))
                .collect(),
        ),
        Section::new(
            commands_title(&commands),
            commands.into_iter().map(command_line).collect(),
        ),
        Section::new("Resolved errors", errors(false)),
        Section::new("Earlier user messages", ordered(&ledger.earlier_users)),
        Section::new("Identifiers named", ordered(&ledger.identifiers)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ledger::{CommandFact, FileFact};

    #[test]
    fn the_commands_legend_names_only_the_marks_its_lines_carry() {
        let command = |exit, runs| CommandFact {
            command: "make".into(),
            exit,
            runs,
            last_seen: 0,
        };
        for (facts, title) in [
            (vec![command(None, 1)], "Commands run (newest last)"),
            (vec![command(None, 2)], "Commands run (newest last; ×N runs)"),
            (
                vec![command(Some(1), 1)],
                "Commands run (newest last; ✓ exit 0, ✗ N exit status N)",
            ),
            (
                vec![command(Some(0), 1), command(None, 3)],
                "Commands run (newest last; ✓ exit 0, ✗ N exit status N, ×N runs)",
            ),
        ] {
            assert_eq!(commands_title(&facts.iter().collect::<Vec<_>>()), title);
        }
    }

    fn big() -> Ledger {
        Ledger {
            last_user: Some("fix it".into()),
            files: (0..50)
                .map(|i| FileFact {
                    path: format!("src/file_{i}.py"),
                    operations: vec!["read".into()],
                    last_seen: 2 * i,
                })
                .collect(),
            commands: (0..50)
                .map(|i| CommandFact {
                    command: format!("pytest tests/test_{i}.py"),
                    exit: Some(0),
                    runs: 1,
                    last_seen: 2 * i + 1,
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
    fn the_history_is_cut_at_one_point_in_time() {
        let text = render(&big(), 1500);
        // The oldest file kept is no older than the oldest command kept, give or take
        // one step of the shared clock.
        let oldest = |prefix: &str| {
            (0..50usize)
                .find(|i| text.contains(&format!("{prefix}{i}.py")))
                .unwrap()
        };
        let (f, c) = (oldest("src/file_"), oldest("tests/test_"));
        assert!(f.abs_diff(c) <= 1, "files from {f}, commands from {c}:\n{text}");
    }

    #[test]
    fn a_long_request_takes_at_most_a_quarter() {
        let mut ledger = big();
        ledger.last_user = Some("word ".repeat(1000));
        let text = render(&ledger, 3000);
        let request = text.split("### ").nth(1).unwrap();
        assert!(request.chars().count() <= 750, "{}", request.chars().count());
        assert!(request.trim_end().ends_with('…'));
        assert!(text.contains("pytest tests/test_49.py"));
    }

    #[test]
    fn a_relative_path_merges_into_its_absolute_form() {
        let files = vec![
            FileFact {
                path: "src/x.py".into(),
                operations: vec!["read".into()],
                last_seen: 1,
            },
            FileFact {
                path: "/testbed/src/x.py".into(),
                operations: vec!["edit".into()],
                last_seen: 0,
            },
            FileFact {
                path: "setup.py".into(),
                operations: vec!["run".into()],
                last_seen: 2,
            },
            FileFact {
                path: "/a/setup.py".into(),
                operations: vec!["read".into()],
                last_seen: 3,
            },
            FileFact {
                path: "/b/setup.py".into(),
                operations: vec!["read".into()],
                last_seen: 4,
            },
        ];
        let mut files = files;
        files.push(FileFact {
            path: "./lib/y.py".into(),
            operations: vec!["run".into()],
            last_seen: 5,
        });
        files.push(FileFact {
            path: "/testbed/lib/y.py".into(),
            operations: vec!["read".into()],
            last_seen: 6,
        });
        let merged = merged_files(&files);
        let paths: Vec<&str> = merged.iter().map(|f| f.path.as_str()).collect();
        // `setup.py` is ambiguous (two longer forms): kept apart.
        // `./lib/y.py` is kept as written (a merged line would not contain it).
        assert_eq!(
            paths,
            [
                "/testbed/src/x.py",
                "setup.py",
                "/a/setup.py",
                "/b/setup.py",
                "./lib/y.py",
                "/testbed/lib/y.py"
            ]
        );
        assert_eq!(merged[0].operations, ["edit", "read"]);
        assert_eq!(merged[0].last_seen, 1);
    }

    #[test]
    fn open_errors_get_the_room_the_history_leaves() {
        let ledger = Ledger {
            errors: (0..12)
                .map(|i| crate::plan::ledger::ErrorFact {
                    text: format!("FAILED tests/test_{i}.py::test_case - KeyError: 'h{i}'"),
                    open: true,
                    command: None,
                    last_seen: i,
                })
                .collect(),
            commands: big().commands[..2].to_vec(),
            ..Ledger::default()
        };
        // Twelve error lines need more than a quarter of 1,000 chars.
        let text = render(&ledger, 1000);
        assert!(text.contains("tests/test_0.py::test_case"), "{text}");
        assert!(text.contains("`pytest tests/test_1.py` ✓"), "{text}");
        assert!(history_fits(&ledger, 1000));
        assert!(!history_fits(&ledger, 400));
    }

    #[test]
    fn everything_fits_when_room() {
        let text = render(&big(), 100_000);
        assert!(text.contains("src/file_0.py (read)"));
        assert!(text.contains("`pytest tests/test_0.py` ✓"));
        assert!(!text.contains("omitted"));
    }
}
