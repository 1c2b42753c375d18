//! What a tool call or a shell command touches, and how a command is shown: the
//! operation a tool's name or a program implies for its paths, the paths a command line
//! names (heredoc bodies skipped but for a diff's headers, redirect targets written), and
//! a command's head.
//!
//! Why apart from [`super::extract`]: these read one command or one name, know nothing of
//! the conversation, and are tested on command lines alone.

use super::scan::{self, is_path, trim_token};

/// How a command is shown: its non-blank lines joined with ` ⏎ `, stopping after a
/// heredoc's first line (the body is file content, and the file is listed with its
/// operation), capped at `cap` chars with `…`. The first line, where the program and
/// its arguments are, always comes first verbatim.
pub(crate) fn command_head(command: &str, cap: usize) -> String {
    let mut shown = String::new();
    let mut lines = command.lines().map(str::trim_end).filter(|l| !l.trim().is_empty());
    for line in lines.by_ref() {
        if !shown.is_empty() {
            shown.push_str(" ⏎ ");
        }
        shown.push_str(line);
        if line.contains("<<") || shown.chars().count() >= cap {
            break;
        }
    }
    if lines.next().is_some() {
        shown.push_str(" ⏎ …");
    }
    cap_chars(shown.trim(), cap)
}

/// `text` cut to `cap` chars, the last one `…` when it was longer.
pub(super) fn cap_chars(text: &str, cap: usize) -> String {
    if text.chars().count() <= cap {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(cap.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The operation a tool's name implies for the paths it is given.
pub(super) fn op_of_tool(name: &str) -> &'static str {
    if [
        "read", "view", "cat", "open", "get", "show", "list", "search", "grep", "glob", "find",
    ]
    .iter()
    .any(|k| name.contains(k))
    {
        "read"
    } else if ["edit", "replace", "patch", "apply", "modify", "update"]
        .iter()
        .any(|k| name.contains(k))
    {
        "edit"
    } else if ["write", "create", "save", "new"].iter().any(|k| name.contains(k)) {
        "write"
    } else if ["delete", "remove", "rm"].iter().any(|k| name.contains(k)) {
        "delete"
    } else {
        "used"
    }
}

/// The operation a shell program implies for the paths in its arguments.
fn op_of_program(program: &str, segment: &str) -> &'static str {
    match program {
        "cat" | "head" | "tail" | "less" | "more" | "nl" | "grep" | "rg" | "egrep" | "wc" | "diff" | "ls" | "find"
        | "awk" => "read",
        "sed" | "perl" if segment.contains(" -i") => "edit",
        "sed" | "perl" => "read",
        "python" | "python3" | "pytest" | "node" | "bash" | "sh" | "cargo" | "go" | "make" | "tox" => "run",
        "rm" | "rmdir" => "delete",
        "cp" => "copy",
        "mv" => "move",
        "touch" | "mkdir" | "tee" => "write",
        "git" => "git",
        "patch" => "edit",
        "cd" | "echo" | "printf" => "",
        _ => "used",
    }
}

/// The paths a shell command names, with the operation each gets. Heredoc bodies are
/// skipped (their content is code, not arguments); a `>`/`>>` target is written.
pub(super) fn command_paths(command: &str) -> Vec<(&str, &'static str)> {
    let mut out = Vec::new();
    let mut heredoc: Option<String> = None;
    for line in command.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            } else if let Some(path) = diff_header_path(line)
                && !out.contains(&(path, "patch"))
            {
                // A heredoc body is file content, except the headers of a unified diff:
                // they name the files the patch changes.
                out.push((path, "patch"));
            }
            continue;
        }
        if let Some(pos) = line.find("<<") {
            let word: String = line[pos + 2..]
                .trim_start_matches('-')
                .trim_start()
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '>' && *c != ';')
                .collect();
            let word = word.trim_matches(|c| c == '\'' || c == '"').to_owned();
            if !word.is_empty() {
                heredoc = Some(word);
            }
        }
        for segment in line.split(['|', ';', '&']) {
            let mut words = segment
                .split_whitespace()
                .filter(|w| !w.contains('=') || w.starts_with('-'));
            let mut program = words.next().unwrap_or("");
            while matches!(program, "sudo" | "timeout" | "time" | "env" | "nohup" | "xargs")
                || program.chars().all(|c| c.is_ascii_digit() || c == 's') && !program.is_empty()
            {
                program = words.next().unwrap_or("");
            }
            let program = program.rsplit('/').next().unwrap_or(program);
            let op = op_of_program(program, segment);
            // Redirect targets.
            let mut rest = segment;
            let mut targets: Vec<&str> = Vec::new();
            while let Some(pos) = rest.find('>') {
                rest = &rest[pos + 1..];
                let target = rest.trim_start_matches('>').split_whitespace().next().unwrap_or("");
                let target = trim_token(target);
                if is_path(target) && !target.starts_with("/dev/") {
                    targets.push(target);
                    if !out.contains(&(target, "write")) {
                        out.push((target, "write"));
                    }
                }
            }
            if op.is_empty() {
                continue;
            }
            for token in scan::tokens(segment).skip(1) {
                let token = trim_token(token);
                if is_path(token)
                    && !token.starts_with("/dev/")
                    && !targets.contains(&token)
                    && !out.contains(&(token, op))
                {
                    out.push((token, op));
                }
            }
        }
    }
    out
}

/// The file a unified diff's header line names (`--- a/x.py`, `+++ b/x.py`,
/// `diff --git a/x.py b/x.py`), without git's `a/` or `b/` prefix; `None` for any other
/// line and for `/dev/null`.
pub(crate) fn diff_header_path(line: &str) -> Option<&str> {
    let line = line.trim_end();
    let named = if let Some(rest) = line.strip_prefix("diff --git ") {
        rest.split_whitespace().next()?
    } else {
        let rest = line.strip_prefix("--- ").or_else(|| line.strip_prefix("+++ "))?;
        // `--- a/x.py\t2024-01-01 ...`: the date after a tab is not the path.
        rest.split('\t').next()?.trim()
    };
    let path = named
        .strip_prefix("a/")
        .or_else(|| named.strip_prefix("b/"))
        .unwrap_or(named);
    (path != "/dev/null" && !path.contains(' ') && is_path(path)).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_written_by_a_heredoc_names_the_files_it_changes() {
        // From a real run (sqlfluff-1625): the patch is written with `cat <<EOF`, then
        // applied; its body is not read as commands, but its headers name the file.
        let command = "cat <<'EOF' > /tmp/fix.patch\ndiff --git a/src/sqlfluff/rules/L031.py b/src/sqlfluff/rules/L031.py\n\
                       --- a/src/sqlfluff/rules/L031.py\n+++ b/src/sqlfluff/rules/L031.py\n@@ -1,2 +1,2 @@\n\
                       -x = a/b/c.py\n+x = 1\n--- not/a header.py\nEOF\ngit apply /tmp/fix.patch";
        assert_eq!(
            command_paths(command),
            vec![
                ("/tmp/fix.patch", "write"),
                ("src/sqlfluff/rules/L031.py", "patch"),
                ("/tmp/fix.patch", "git")
            ]
        );
        assert_eq!(diff_header_path("+++ /dev/null"), None);
        assert_eq!(diff_header_path("--- a/x.py\t2024-01-01 10:00"), Some("x.py"));
        assert_eq!(diff_header_path("--- just prose"), None);
    }

    #[test]
    fn command_paths_with_ops() {
        let paths = command_paths("cd /testbed && sed -n '590,610p' pvlib/temperature.py");
        assert_eq!(paths, vec![("pvlib/temperature.py", "read")]);
        let paths = command_paths("sed -i 's/a/b/' src/x.py && python reproduce.py > out.txt");
        assert_eq!(
            paths,
            vec![("src/x.py", "edit"), ("out.txt", "write"), ("reproduce.py", "run")]
        );
        let paths =
            command_paths("cat <<'EOF' > test_fix.py\nimport os.path\nprint(a/b/c.py)\nEOF\npython test_fix.py");
        assert_eq!(paths, vec![("test_fix.py", "write"), ("test_fix.py", "run")]);
    }

    // Regression (issue 11), from a real run (astroid-1866, message 108).
    #[test]
    fn relative_paths_stay_relative() {
        let paths = command_paths(
            "# First, let me backup the original\ncp ./astroid/brain/brain_builtin_inference.py ./astroid/brain/brain_builtin_inference.py.backup2",
        );
        assert_eq!(
            paths,
            vec![
                ("./astroid/brain/brain_builtin_inference.py", "copy"),
                ("./astroid/brain/brain_builtin_inference.py.backup2", "copy")
            ]
        );
    }

    #[test]
    fn a_heredoc_is_shown_by_its_first_line() {
        assert_eq!(
            command_head("cat <<'EOF' > fix.py\nimport os\nprint(1)\nEOF", 100),
            "cat <<'EOF' > fix.py ⏎ …"
        );
        assert_eq!(command_head("cd /testbed\n\npytest -x", 100), "cd /testbed ⏎ pytest -x");
        assert_eq!(command_head(&"x".repeat(300), 100).chars().count(), 100);
    }
}
