//! Every byte the CLI writes to stdout or stderr goes through here.
//!
//! `println!` and `eprintln!` panic when the write fails (`> /dev/full`, a closed pipe),
//! and a panic is the one thing a command must never do. These helpers make every
//! write fallible instead: a failure becomes [`CliError::Failed`] (exit 1, with a
//! message), except a broken pipe — the reader went away, as with `| head -c1` — which is
//! [`CliError::BrokenPipe`]: the command stops at once and exits quietly, as Unix tools
//! do. Text that echoes a model or a conversation (a summary, a message) goes through
//! [`escape_controls`] first, so no terminal escape sequence in it reaches the terminal.

use std::fmt::Write as _;
use std::io::Write;

use crate::error::CliError;

fn failure(stream: &str, e: &std::io::Error) -> CliError {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        CliError::BrokenPipe
    } else {
        CliError::Failed(format!("cannot write to {stream}: {e}"))
    }
}

/// Writes `text` to stdout as it is, and flushes.
pub fn stdout(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| failure("<stdout>", &e))
}

/// Writes `text` and a newline to stdout.
pub fn stdout_line(text: &str) -> Result<(), CliError> {
    stdout(&format!("{text}\n"))
}

/// Writes `text` to stderr as it is.
pub fn stderr(text: &str) -> Result<(), CliError> {
    let mut err = std::io::stderr().lock();
    err.write_all(text.as_bytes())
        .and_then(|()| err.flush())
        .map_err(|e| failure("<stderr>", &e))
}

/// Writes `text` and a newline to stderr.
pub fn stderr_line(text: &str) -> Result<(), CliError> {
    stderr(&format!("{text}\n"))
}

/// Writes a line to stderr where there is no one to report a failure to (a signal
/// handler, the final error message): a failure is ignored, never a panic.
pub fn stderr_best_effort(text: &str) {
    let _ = stderr_line(text);
}

/// `text` with every control character except newline and tab (ESC and the rest of C0,
/// DEL, C1) and every bidirectional override shown as a visible escape (`\x1b`,
/// `\u{9b}`), so that a summary or message echoed to a terminal cannot move the cursor,
/// recolour, retitle the window or reorder what is shown.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn escapes_terminal_controls_but_keeps_text_newlines_and_tabs() {
        assert_eq!(escape_controls("plain\n\ttext é"), "plain\n\ttext é");
        assert_eq!(escape_controls("\u{1b}]0;pwned\u{7}x"), "\\x1b]0;pwned\\x07x");
        assert_eq!(escape_controls("a\rb\u{7f}\u{9b}31m"), "a\\x0db\\x7f\\u{9b}31m");
        assert_eq!(escape_controls("\u{202e}abc"), "\\u{202e}abc");
    }
}
