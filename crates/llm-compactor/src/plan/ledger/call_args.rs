//! What a tool call's arguments are called: the names that carry a command, a path or a
//! URL, an argv array's command line, and an editor tool's sub-commands. Shared words of
//! [`super::extract`], kept apart so the extraction reads as steps.

use serde_json::Value;

/// Argument names that carry a shell command.
pub(super) const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "bash", "shell", "code"];
/// Argument names that carry a path.
pub(super) const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "notebook_path",
    "paths",
    "files",
    "source",
    "destination",
    "old_path",
    "new_path",
];
/// Argument names that carry a URL the call opens (a fetch tool, a browser's
/// navigation, Anthropic's `web_fetch`): the page is an identifier of the run, as a URL
/// the agent writes in its own turn is.
pub(super) const URL_KEYS: &[&str] = &["url", "urls", "uri", "href"];
/// The command line an argv array runs (Codex's `shell` tool and the Responses API's
/// `local_shell_call` send `["bash", "-lc", "make test"]`): the script a shell is given
/// with `-c` (or `-lc`, `-ic`), else the words joined by spaces. `None` when a word is
/// not a string.
pub(super) fn argv_command(argv: &[Value]) -> Option<String> {
    let words = argv.iter().map(Value::as_str).collect::<Option<Vec<&str>>>()?;
    let is_shell = |word: &str| {
        let name = word.rsplit('/').next().unwrap_or(word);
        matches!(name, "bash" | "sh" | "zsh" | "dash" | "ksh")
    };
    let is_script_flag = |word: &str| {
        word.len() > 1
            && word.starts_with('-')
            && word.ends_with('c')
            && word[1..].bytes().all(|b| b.is_ascii_lowercase())
    };
    let command = match words.as_slice() {
        [shell, flag, script] if is_shell(shell) && is_script_flag(flag) => (*script).to_owned(),
        _ => words.join(" "),
    };
    Some(command.trim().to_owned())
}

/// Sub-commands of an editor tool (OpenHands' `str_replace_editor`, Anthropic's text
/// editor) and the operation each means.
pub(super) const EDITOR_COMMANDS: &[(&str, &str)] = &[
    ("view", "read"),
    ("create", "write"),
    ("str_replace", "edit"),
    ("insert", "edit"),
    ("undo_edit", "edit"),
    ("write", "write"),
    ("edit", "edit"),
];
