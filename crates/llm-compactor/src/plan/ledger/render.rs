//! [`render`]: the ledger as fixed sections of plain text, under a size cap.
//!
//! The sections always come in the same order with the same headings, so an agent (and
//! a test) knows where to look. The cap is shared so that no section can starve the
//! others (a 2,000-char task description once took two thirds of the default cap and
//! left the commands 6% of their probes):
//!
//! - the *pinned instructions* (instruction files injected into user turns, see
//!   [`super::split_pinned`]) come before everything, as far as they go;
//! - the *state* comes next and is bounded: the last user request gets at most a
//!   quarter of the room (its verbatim head, cut with `…`), the open errors at most a
//!   quarter (newest first); the earlier user messages that instruct at most a quarter
//!   (the questions and acknowledgements, see [`super::is_chatter`], and the superseded
//!   lines only what the history leaves); identifiers at most a sixteenth;
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

use super::carry::{ImportanceTier, changes_something};
use super::chatter::is_chatter;
use super::marks::{split_count, split_superseded};
use super::scan::first_line;
use super::sections::{
    COMMANDS_EXITS, COMMANDS_EXITS_RUNS, COMMANDS_PLAIN, COMMANDS_RUNS, EARLIER_USER_MESSAGES, FILES_TOUCHED,
    IDENTIFIERS_NAMED, LAST_USER_REQUEST, LEDGER_HEADING, OPEN_ERRORS, ORIGINALS, PINNED_INDENT, PINNED_INSTRUCTIONS,
    RESOLVED_ERRORS,
};
use super::{CommandFact, ErrorFact, FileFact, Ledger};

/// Chars of a command shown after an open error (`(from `...`)`).
const FROM_CHARS: usize = 60;
/// Chars reserved with a section's title for its `(N older omitted)` line.
const OMITTED_RESERVE: usize = 28;

/// One line of a section: its text, the order of its last message, its tier.
struct Line {
    text: String,
    seq: usize,
    tier: ImportanceTier,
}

struct Section {
    title: &'static str,
    /// Oldest first.
    lines: Vec<Line>,
    /// Which lines are kept.
    keep: Vec<bool>,
    /// How many are kept.
    kept: usize,
}

impl Section {
    fn new(title: &'static str, lines: Vec<(String, usize)>) -> Self {
        Self::tiered(
            title,
            lines
                .into_iter()
                .map(|(text, seq)| Line {
                    text,
                    seq,
                    tier: ImportanceTier::Artifact,
                })
                .collect(),
        )
    }

    fn tiered(title: &'static str, lines: Vec<Line>) -> Self {
        let keep = vec![false; lines.len()];
        Section {
            title,
            lines,
            keep,
            kept: 0,
        }
    }

    /// Chars of the title line (and the reserve for the omitted note when the section
    /// has more than one line).
    fn title_cost(&self) -> usize {
        let reserve = if self.lines.len() > 1 { OMITTED_RESERVE } else { 0 };
        self.title.chars().count() + 5 + reserve
    }

    /// Chars of line `i`, less the handle it names (see [`handle_chars`]).
    fn cost(&self, i: usize) -> usize {
        let text = &self.lines[i].text;
        text.chars().count() - handle_chars(text) + 3
    }

    fn take(&mut self, i: usize) {
        if !self.keep[i] {
            self.keep[i] = true;
            self.kept += 1;
        }
    }

    /// The line to keep next: of the highest tier left, the newest.
    fn newest_left(&self) -> Option<usize> {
        (0..self.lines.len())
            .filter(|&i| !self.keep[i])
            .max_by_key(|&i| (self.lines[i].tier, i))
    }

    /// Keeps the newest lines (of the highest tier first) while they fit in `room`
    /// (title included); returns the chars spent.
    fn fill(&mut self, room: usize) -> usize {
        self.fill_from(room, ImportanceTier::Reread)
    }

    /// [`Section::fill`] of the lines of `tier` and above only.
    fn fill_from(&mut self, room: usize, tier: ImportanceTier) -> usize {
        if self.lines.is_empty() {
            return 0;
        }
        let mut spent = self.title_cost();
        while let Some(i) = self.newest_left().filter(|&i| self.lines[i].tier >= tier) {
            let c = self.cost(i);
            if spent + c > room {
                break;
            }
            spent += c;
            self.take(i);
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
    render_with(ledger, max_chars, Sharing::Shares)
}

/// Renders `ledger` in at most `max_chars` chars with the user's own words kept first:
/// the last request (verbatim, cut only when it alone is over the room), then the
/// earlier user messages (newest first), then the open errors, then the history by
/// tier, and the identifiers with what is left. What a pass uses when its target leaves
/// the ledger less room than its configured cap (see [`super::sized_ledgers`]): a small
/// room is spent on the instructions before the artifacts, which the agent can re-read.
///
/// ```
/// use llm_compactor::plan::ledger::{render, render_user_first, FileFact, Ledger};
/// let file = |i: usize| FileFact { path: format!("src/file_{i}.py"), operations: vec!["edit".into()], last_seen: i, handle: None };
/// let ledger = Ledger {
///     last_user: Some("Keep the budget cap at $956.".into()),
///     earlier_users: vec!["Never delete the backups.".into()],
///     files: (0..40).map(file).collect(),
///     ..Ledger::default()
/// };
/// let text = render_user_first(&ledger, 400);
/// assert!(text.contains("Keep the budget cap at $956.") && text.contains("Never delete the backups."));
/// assert!(text.chars().count() <= 400 && text.contains("src/file_39.py"));
/// // The configured sharing keeps an instruction too (within a quarter of the room).
/// assert!(render(&ledger, 400).contains("Never delete the backups."));
/// ```
pub fn render_user_first(ledger: &Ledger, max_chars: usize) -> String {
    render_with(ledger, max_chars, Sharing::UserFirst)
}

/// How [`plan`] shares the room among the sections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sharing {
    /// The bounded shares of the state, then the history (the configured cap's sharing,
    /// the one `compactor eval` tuned).
    Shares,
    /// The user's words first, then the open errors, the history, the identifiers.
    UserFirst,
}

fn render_with(ledger: &Ledger, max_chars: usize, sharing: Sharing) -> String {
    let Some(s) = plan(ledger, max_chars, sharing) else {
        return String::new();
    };
    let mut out = String::from(LEDGER_HEADING);
    out.push_str(&originals_line(ledger));
    // The pinned instructions first: the highest tier.
    let order = [7, 0, 1, 2, 3, 4, 5, 6];
    for section in order.iter().map(|&k| &s[k]).filter(|s| s.kept > 0) {
        let omitted = section.lines.len() - section.kept;
        out.push_str("\n### ");
        out.push_str(section.title);
        for (line, _) in section.lines.iter().zip(&section.keep).filter(|(_, keep)| **keep) {
            out.push_str("\n- ");
            out.push_str(&line.text);
        }
        if omitted > 0 {
            // Its room was reserved with the title. "older" when every omitted line is
            // older than every kept one (the one cut in time), else the tier cut them.
            let first_kept = section.keep.iter().position(|k| *k).unwrap_or(0);
            let older = section.keep[first_kept..].iter().all(|k| *k);
            let note = if older {
                "older omitted"
            } else if section.title == EARLIER_USER_MESSAGES {
                "omitted, questions first"
            } else {
                "omitted, read-only first"
            };
            out.push_str(&format!("\n- ({omitted} {note})"));
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
/// let command = CommandFact { command: "pytest".into(), exit: Some(0), runs: 1, last_seen: 0, handle: None };
/// let ledger = Ledger { commands: vec![command; 40], ..Ledger::default() };
/// assert!(history_fits(&ledger, 100_000));
/// assert!(!history_fits(&ledger, 300));
/// ```
pub fn history_fits(ledger: &Ledger, max_chars: usize) -> bool {
    match plan(ledger, max_chars, Sharing::Shares) {
        None => ledger.files.is_empty() && ledger.commands.is_empty() && ledger.errors.is_empty(),
        Some(s) => s[1..5].iter().all(|sec| sec.kept == sec.lines.len()),
    }
}

/// The sections with how many lines of each are kept; `None` when nothing is.
fn plan(ledger: &Ledger, max_chars: usize, sharing: Sharing) -> Option<[Section; 8]> {
    // The originals' line is a handle range: like the lines' handles, not counted.
    let heading = LEDGER_HEADING.chars().count() + 1;
    if ledger.is_empty() || max_chars <= heading {
        return None;
    }
    let budget = max_chars - heading;
    let mut s = sections(ledger, budget, sharing);
    let [request, open, _, _, _, earlier, identifiers, pinned] = &mut s;
    // The pinned instructions before anything else, as far as they go.
    let pinned_used = pinned.fill(budget);
    if pinned_used > 0 {
        // The request's head in the room they leave.
        *request = request_section(ledger, request_cap(budget - pinned_used, sharing));
    }
    let mut used = pinned_used;
    used += match sharing {
        // The state, each part bounded.
        Sharing::Shares => {
            let budget = budget - used;
            let mut used = request.fill(budget / 4);
            used += open.fill((budget / 4).min(budget - used));
            // The earlier messages that instruct: up to a quarter (the rest of them, and
            // the questions, get what the history leaves).
            used += earlier.fill_from((budget / 4).min(budget - used), ImportanceTier::Artifact);
            used + identifiers.fill((budget / 16).min(budget - used))
        }
        // The user's words, whole as far as they go, then the open errors.
        Sharing::UserFirst => {
            let budget = budget - used;
            let mut used = request.fill(budget);
            used += earlier.fill(budget - used);
            used + open.fill(budget - used)
        }
    };
    // The history: by tier (the artifact trail before what can be re-read), within a
    // tier newest first across files, commands and resolved errors: one cut.
    let mut order: Vec<(ImportanceTier, usize, std::cmp::Reverse<usize>, usize)> = Vec::new();
    for (k, section) in s.iter().enumerate().take(5).skip(2) {
        for (i, line) in section.lines.iter().enumerate() {
            order.push((line.tier, line.seq, std::cmp::Reverse(k), i));
        }
    }
    order.sort_unstable_by(|a, b| b.cmp(a));
    for (_, _, std::cmp::Reverse(k), i) in order {
        let sec = &mut s[k];
        let mut cost = sec.cost(i);
        if sec.kept == 0 {
            cost += sec.title_cost();
        }
        if used + cost > budget {
            break;
        }
        used += cost;
        sec.take(i);
    }
    // What the history left: to the open errors, earlier requests and identifiers
    // their shares cut.
    for k in [1, 5, 6] {
        let sec = &mut s[k];
        if sec.kept == 0 {
            used += sec.fill(budget - used);
            continue;
        }
        while let Some(i) = sec.newest_left() {
            if used + sec.cost(i) > budget {
                break;
            }
            used += sec.cost(i);
            sec.take(i);
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

/// `\n` and the originals' line, when the ledger names them; else empty.
fn originals_line(ledger: &Ledger) -> String {
    match &ledger.originals {
        Some((first, last)) => format!("\n{ORIGINALS}{first}..{last}"),
        None => String::new(),
    }
}

/// Chars of the ` [#0123456789]` a line ends with when it names a handle; 0 when it
/// names none.
///
/// Why handles are not counted against the cap: with expansion on (issue 31) every line
/// names one, about a tenth of the ledger's room; counted, they pushed facts out and the
/// summary itself recalled less (76% of the probes against 84% without). Uncounted, a
/// ledger keeps the same facts whether or not it names handles, and is that much longer
/// (the pass still proves the whole summary fits its target, and falls back to a smaller
/// cap when it does not).
fn handle_chars(text: &str) -> usize {
    const SUFFIX: usize = " [#0123456789]".len();
    let Some(start) = text.len().checked_sub(SUFFIX) else {
        return 0;
    };
    let Some(suffix) = text.get(start..) else {
        return 0;
    };
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let named =
        suffix.starts_with(" [#") && suffix.ends_with(']') && suffix.as_bytes()[3..SUFFIX - 1].iter().all(|b| hex(*b));
    if named { SUFFIX } else { 0 }
}

/// `line` with ` [#handle]` when the fact names the message it comes from.
fn with_handle(mut line: String, handle: &Option<String>) -> String {
    if let Some(handle) = handle {
        line.push_str(" [");
        line.push_str(handle);
        line.push(']');
    }
    line
}

fn error_line(e: &ErrorFact) -> (String, usize) {
    let line = match (&e.command, e.open) {
        (Some(c), true) => {
            format!("{} (from `{}`)", e.text, head(first_line(c), FROM_CHARS))
        }
        _ => e.text.clone(),
    };
    (with_handle(line, &e.handle), e.last_seen)
}

/// The commands' heading, its legend naming only the marks its lines carry: a
/// transcript whose tool results report no exit status shows no ✓ or ✗, and a legend that
/// promised them would read as if every command's status were unknown for a reason.
fn commands_title(commands: &[&CommandFact]) -> &'static str {
    let exits = commands.iter().any(|c| c.exit.is_some());
    let repeats = commands.iter().any(|c| c.runs > 1);
    match (exits, repeats) {
        (true, true) => COMMANDS_EXITS_RUNS,
        (true, false) => COMMANDS_EXITS,
        (false, true) => COMMANDS_RUNS,
        (false, false) => COMMANDS_PLAIN,
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
    (with_handle(line, &c.handle), c.last_seen)
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
            let handle = out[short].handle.clone();
            let fact = &mut out[target];
            if seen > fact.last_seen || fact.handle.is_none() {
                fact.handle = handle.or(fact.handle.take());
            }
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

/// The most chars of the last request's verbatim head in a room of `budget` chars: at
/// most a quarter of it, less its frame; with the user's words first, all of it less its
/// frame.
fn request_cap(budget: usize, sharing: Sharing) -> usize {
    match sharing {
        Sharing::Shares => (budget / 4).saturating_sub(60).max(40),
        Sharing::UserFirst => budget.saturating_sub(60).max(40),
    }
}

/// The last request's section, its head cut to `cap` chars.
fn request_section(ledger: &Ledger, cap: usize) -> Section {
    Section::new(
        LAST_USER_REQUEST,
        ledger.last_user.iter().map(|u| (head(u, cap), 0)).collect(),
    )
}

/// The earlier user messages' section: a line that only asks or acknowledges, or that a
/// later message superseded, is cut before the lines that instruct (see
/// [`super::is_chatter`]).
fn earlier_section(ledger: &Ledger) -> Section {
    let lines = ledger
        .earlier_users
        .iter()
        .enumerate()
        .map(|(seq, text)| {
            let (body, superseded) = split_superseded(text);
            let tier = if superseded || is_chatter(split_count(body).0) {
                ImportanceTier::Reread
            } else {
                ImportanceTier::Artifact
            };
            Line {
                text: text.clone(),
                seq,
                tier,
            }
        })
        .collect();
    Section::tiered(EARLIER_USER_MESSAGES, lines)
}

/// The pinned instructions' section, each block one item, its newlines indented.
fn pinned_section(ledger: &Ledger) -> Section {
    let lines = ledger
        .pinned
        .iter()
        .enumerate()
        .map(|(i, text)| (text.replace('\n', PINNED_INDENT), i))
        .collect();
    Section::new(PINNED_INSTRUCTIONS, lines)
}

fn sections(ledger: &Ledger, budget: usize, sharing: Sharing) -> [Section; 8] {
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
    [
        request_section(ledger, request_cap(budget, sharing)),
        Section::new(OPEN_ERRORS, errors(true)),
        Section::tiered(
            FILES_TOUCHED,
            merged_files(&ledger.files)
                .iter()
                .map(|f| {
                    let line = format!("{} ({})", f.path, f.operations.join(", "));
                    // A file a listing only named was not touched.
                    let tier = if f.operations.iter().all(|op| op == "listed") {
                        ImportanceTier::Reread
                    } else {
                        ImportanceTier::Artifact
                    };
                    Line {
                        text: with_handle(line, &f.handle),
                        seq: f.last_seen,
                        tier,
                    }
                })
                .collect(),
        ),
        Section::tiered(
            commands_title(&commands),
            commands
                .into_iter()
                .map(|c| {
                    let (text, seq) = command_line(c);
                    let tier = if changes_something(&c.command) {
                        ImportanceTier::Artifact
                    } else {
                        ImportanceTier::Reread
                    };
                    Line { text, seq, tier }
                })
                .collect(),
        ),
        Section::tiered(
            RESOLVED_ERRORS,
            errors(false)
                .into_iter()
                .map(|(text, seq)| Line {
                    text,
                    seq,
                    tier: ImportanceTier::Reread,
                })
                .collect(),
        ),
        earlier_section(ledger),
        Section::new(IDENTIFIERS_NAMED, ordered(&ledger.identifiers)),
        pinned_section(ledger),
    ]
}

#[cfg(test)]
mod tests;
