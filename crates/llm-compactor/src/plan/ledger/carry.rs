//! Carrying a ledger forward: the facts of an earlier summary's ledger, read back from
//! its text, so that a pass whose middle holds that summary keeps them.
//!
//! Each pass extracts its ledger from the messages it replaces, and the previous
//! summary is one of them. Without this, its facts survived only if a model copied them
//! (the ledger summarizer never did): in an agent-loop replay with eight passes, 35% of
//! the files touched before the first pass were still named after the last. Now a fact
//! leaves the ledger only by a rule: superseded (a later run, read or edit of the same
//! thing replaces its line), resolved (an error a later result shows fixed moves to the
//! resolved errors), or cut by the cap in the order of importance of
//! [`ImportanceTier`] — never because it was summarized twice.
//!
//! The rendered ledger is read back rather than stored beside the summary: the summary
//! text is all a later pass (or another process, or the proxy after a restart) is sure
//! to have, and the renderer's format is fixed (same headings, same line shapes), so
//! [`parse_rendered`] is its exact inverse on everything the renderer writes.

use super::command::command_paths;
use super::sections::{LEDGER_HEADING, ORIGINALS, PINNED_INDENT, SECTION_TITLES};
use super::{CommandFact, ErrorFact, FileFact, Ledger};
use crate::plan::handle::{HANDLE_DIGITS, handle_ranges_in, is_handle};

/// How important a history line is when the ledger's cap cuts: a higher tier is kept
/// before any line of a lower one (within a tier, newest first, one cut in time).
///
/// Files touched (with their operations; a file a listing only named is not touched)
/// and the commands that changed something are
/// the artifact trail, what every summarizer loses first and what the agent cannot
/// re-derive; a command that only read (a `cat`, a test run) can be run again and its
/// files are named in the files' section anyway; a resolved error is history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImportanceTier {
    /// Read-only commands, resolved errors, files only listed: cut first.
    Reread,
    /// Files touched and the commands that changed something: cut last.
    Artifact,
}

/// True when `command` (a command's head, as the ledger shows it) changed something: it
/// writes, edits, deletes, copies or moves a file (a redirect, `sed -i`, `rm`, `mv`, a
/// heredoc into a file, a patch), or commits, installs, migrates or deploys.
///
/// ```
/// use llm_compactor::plan::ledger::changes_something;
/// assert!(changes_something("sed -i 's/a/b/' src/x.py"));
/// assert!(changes_something("cat <<'EOF' > fix.py"));
/// assert!(changes_something("git commit -am 'fix'"));
/// assert!(changes_something("pip install -e ."));
/// assert!(!changes_something("cat src/x.py"));
/// assert!(!changes_something("python -m pytest tests/test_x.py"));
/// ```
pub fn changes_something(command: &str) -> bool {
    let by_path = command_paths(command)
        .iter()
        .any(|(_, op)| matches!(*op, "write" | "edit" | "delete" | "copy" | "move" | "patch"));
    if by_path {
        return true;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(2).any(|w| {
        matches!(
            (w[0], w[1]),
            (
                "git",
                "commit" | "apply" | "checkout" | "reset" | "stash" | "merge" | "rebase" | "am" | "mv" | "rm"
            ) | (
                "pip" | "pip3" | "npm" | "yarn" | "cargo" | "apt-get" | "apt" | "uv",
                "install" | "add"
            )
        )
    }) || words
        .iter()
        .any(|w| matches!(*w, "migrate" | "deploy" | "rm" | "mv" | "mkdir" | "touch" | "patch"))
}

/// Strips a trailing ` [#handle]` from a rendered line.
fn split_handle(line: &str) -> (&str, Option<String>) {
    let tail = HANDLE_DIGITS + 4; // ` [#` + digits + `]`
    if line.len() > tail && line.ends_with(']') && line.is_char_boundary(line.len() - tail) {
        let (body, mark) = line.split_at(line.len() - tail);
        if let Some(handle) = mark.strip_prefix(" [").and_then(|m| m.strip_suffix(']'))
            && is_handle(handle)
        {
            return (body, Some(handle.to_owned()));
        }
    }
    (line, None)
}

fn command_fact(line: &str) -> Option<CommandFact> {
    let (line, handle) = split_handle(line);
    let rest = line.strip_prefix('`')?;
    let end = rest.rfind('`')?;
    let (command, marks) = (&rest[..end], &rest[end + 1..]);
    let mut exit = None;
    let mut runs = 1;
    let mut words = marks.split_whitespace().peekable();
    while let Some(word) = words.next() {
        if word == "✓" {
            exit = Some(0);
        } else if word == "✗" {
            exit = words.next().and_then(|code| code.parse().ok());
        } else if let Some(n) = word.strip_prefix('×') {
            runs = n.parse().unwrap_or(1);
        }
    }
    Some(CommandFact {
        command: command.to_owned(),
        exit,
        runs,
        last_seen: 0,
        handle,
    })
}

fn file_fact(line: &str) -> Option<FileFact> {
    let (line, handle) = split_handle(line);
    let (path, ops) = line.rsplit_once(" (")?;
    let ops = ops.strip_suffix(')')?;
    Some(FileFact {
        path: path.to_owned(),
        operations: ops.split(", ").filter(|o| !o.is_empty()).map(str::to_owned).collect(),
        last_seen: 0,
        handle,
    })
}

fn error_fact(line: &str, open: bool) -> ErrorFact {
    let (line, handle) = split_handle(line);
    let (text, command) = match line.rsplit_once(" (from `") {
        Some((text, from)) if open && from.ends_with("`)") => (text, Some(from[..from.len() - 2].to_owned())),
        _ => (line, None),
    };
    ErrorFact {
        text: text.to_owned(),
        open,
        command,
        last_seen: 0,
        handle,
    }
}

/// The ledger rendered in `summary` (the last one, when it holds several), read back:
/// every fact the renderer wrote, with its handle when it named one; `None` when the
/// summary has no ledger. The facts' `last_seen` is 0 (the caller dates them).
///
/// ```
/// use llm_compactor::plan::ledger::{parse_rendered, render, CommandFact, FileFact, Ledger};
/// let ledger = Ledger {
///     last_user: Some("Fix the parser".into()),
///     files: vec![FileFact { path: "src/p.py".into(), operations: vec!["read".into(), "edit".into()], last_seen: 0, handle: None }],
///     commands: vec![CommandFact { command: "pytest -x".into(), exit: Some(1), runs: 2, last_seen: 1, handle: None }],
///     ..Ledger::default()
/// };
/// let text = format!("A model's summary.\n\n{}", render(&ledger, 10_000));
/// assert_eq!(parse_rendered(&text), Some(ledger.clone()).map(|mut l| { l.commands[0].last_seen = 0; l }));
/// ```
pub fn parse_rendered(summary: &str) -> Option<Ledger> {
    let start = summary.rfind(LEDGER_HEADING)?;
    let body = &summary[start + LEDGER_HEADING.len()..];
    let mut ledger = Ledger::default();
    if let Some(line) = body.lines().nth(1).and_then(|l| l.strip_prefix(ORIGINALS)) {
        ledger.originals = handle_ranges_in(line).into_iter().next();
    }
    // Split into sections at the known titles only (a request may hold `### ` lines).
    let mut sections: Vec<(usize, &str)> = Vec::new();
    let mut rest = body;
    let mut offset = 0;
    while let Some(pos) = rest.find("\n### ") {
        let after = &rest[pos + 5..];
        if let Some(k) = SECTION_TITLES.iter().position(|t| after.starts_with(t)) {
            sections.push((k, &body[offset + pos + 5..]));
        }
        offset += pos + 5;
        rest = after;
    }
    for (n, &(k, text)) in sections.iter().enumerate() {
        // A section ends where the next one's title starts.
        let end = sections
            .get(n + 1)
            .map(|(_, next)| text.len() - next.len() - 5)
            .unwrap_or(text.len());
        let text = &text[..end];
        let lines = text.split_once('\n').map_or("", |(_, lines)| lines);
        if k == 0 {
            // The request is one verbatim item, its own `- ` lines included.
            if let Some(request) = lines.strip_prefix("- ") {
                ledger.last_user = Some(request.trim_end_matches('\n').to_owned());
            }
            continue;
        }
        for item in items(lines) {
            if item.starts_with('(') && item.ends_with(')') && item.contains(" omitted") {
                continue;
            }
            match k {
                1 => ledger.errors.push(error_fact(item, true)),
                2 => ledger.files.extend(file_fact(item)),
                3 => ledger.commands.extend(command_fact(item)),
                4 => ledger.errors.push(error_fact(item, false)),
                5 => ledger.earlier_users.push(item.to_owned()),
                6 => ledger.identifiers.push(item.to_owned()),
                // A pinned block's own lines were indented by two spaces.
                _ => ledger.pinned.push(item.replace(PINNED_INDENT, "\n")),
            }
        }
    }
    (!ledger.is_empty()).then_some(ledger)
}

/// The `- ` items of a section's lines; a line that does not start one continues the
/// item before it (a verbatim request keeps its newlines).
fn items(lines: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut start: Option<usize> = None;
    let mut pos = 0;
    for line in lines.split_inclusive('\n') {
        if line.starts_with("- ") {
            if let Some(s) = start {
                out.push(lines[s..pos].trim_end_matches('\n'));
            }
            start = Some(pos + 2);
        }
        pos += line.len();
    }
    if let Some(s) = start {
        out.push(lines[s..].trim_end_matches('\n'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ledger::render;

    #[test]
    fn every_fact_the_renderer_writes_is_read_back() {
        let ledger = Ledger {
            last_user: Some("Fix it.\n### Not a title\n- not an item".into()),
            earlier_users: vec!["first ask".into()],
            files: vec![FileFact {
                path: "/testbed/a b.py".into(),
                operations: vec!["write".into()],
                last_seen: 0,
                handle: Some("#0123456789".into()),
            }],
            commands: vec![CommandFact {
                command: "echo `date` (x)".into(),
                exit: None,
                runs: 3,
                last_seen: 0,
                handle: Some("#abcdef0123".into()),
            }],
            errors: vec![
                ErrorFact {
                    text: "KeyError: 'x'".into(),
                    open: true,
                    command: Some("pytest -x".into()),
                    last_seen: 0,
                    handle: None,
                },
                ErrorFact {
                    text: "FAILED t.py::test_a".into(),
                    open: false,
                    command: None,
                    last_seen: 0,
                    handle: Some("#9999999999".into()),
                },
            ],
            identifiers: vec!["parse_args".into()],
            pinned: vec![
                "<system-reminder>\n# CLAUDE.md\n- never force-push\n  - nested\n</system-reminder> (×2)".into(),
            ],
            originals: Some(("#0000000001".into(), "#00000000ff".into())),
        };
        let text = render(&ledger, 10_000);
        let back = parse_rendered(&format!("summary\n\n{text}")).unwrap();
        assert_eq!(back, ledger, "{text}");
        assert_eq!(parse_rendered("no ledger here"), None);
    }
}
