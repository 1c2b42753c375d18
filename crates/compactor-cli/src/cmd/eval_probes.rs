//! The probes of `compactor eval`: facts of the replaced middle a good summary keeps,
//! drawn deterministically.
//!
//! Drawn here, independently of the ledger's extractor (a shared extractor would grade
//! the ledger against itself): paths and commands from the agent's actions, error lines
//! and failing tests from the results, the start of the user's last request, and code
//! identifiers the agent named in backticks. A probe is found when its text occurs
//! verbatim in the summary.

use llm_compactor::Message;
use llm_compactor::message::Role;
use serde::Serialize;

/// Probes kept per kind (spread evenly over the middle).
pub const PER_KIND: usize = 12;
/// Chars of a command or an error line a probe takes (its start).
const PROBE_CHARS: usize = 60;

/// The kinds of probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeKind {
    /// A path the agent acted on.
    Path,
    /// The start of a command the agent ran.
    Command,
    /// An error line or failing test from a result.
    Error,
    /// The start of the user's last request.
    Request,
    /// A code identifier the agent named.
    Identifier,
}

impl ProbeKind {
    /// Every kind, in table order.
    pub const ALL: [ProbeKind; 5] = [
        ProbeKind::Path,
        ProbeKind::Command,
        ProbeKind::Error,
        ProbeKind::Request,
        ProbeKind::Identifier,
    ];

    /// The column name.
    pub fn name(self) -> &'static str {
        match self {
            ProbeKind::Path => "path",
            ProbeKind::Command => "command",
            ProbeKind::Error => "error",
            ProbeKind::Request => "request",
            ProbeKind::Identifier => "ident",
        }
    }
}

/// One probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Probe {
    /// Its kind.
    pub kind: ProbeKind,
    /// The verbatim text looked for.
    pub text: String,
    /// The index of the newest message it was drawn from.
    pub message: usize,
}

fn start(text: &str, n: usize) -> String {
    text.chars().take(n).collect::<String>().trim().to_owned()
}

fn is_pathlike(token: &str) -> bool {
    let len = token.chars().count();
    // A device (`/dev/null` of a redirect) is not a file the agent worked on.
    if !(4..=160).contains(&len) || token.starts_with('-') || token.contains("://") || token.starts_with("/dev/") {
        return false;
    }
    if !token
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
    {
        return false;
    }
    let ext = token.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let known = [
        "py", "rs", "js", "ts", "go", "c", "h", "toml", "json", "md", "txt", "cfg", "yaml", "yml", "sh", "java", "cpp",
        "pony",
    ];
    token.chars().any(|c| c.is_ascii_alphabetic())
        && (known.contains(&ext) || token.matches('/').count() >= 2 && !token.ends_with('/'))
}

fn is_ident(token: &str) -> bool {
    let len = token.len();
    (4..=80).contains(&len)
        && token
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (token.trim_matches('_').contains('_') || token.contains('.') && !token.ends_with('.'))
}

/// Shell text of an action: a tool call's `command`/`cmd` argument, or a ```bash block.
fn commands_of(message: &Message) -> Vec<String> {
    let mut out = Vec::new();
    for call in &message.tool_calls {
        if let Ok(serde_json::Value::Object(args)) = serde_json::from_str(&call.arguments) {
            for key in ["command", "cmd"] {
                if let Some(serde_json::Value::String(c)) = args.get(key) {
                    out.push(c.clone());
                }
            }
            for key in ["path", "file_path", "filename"] {
                if let Some(serde_json::Value::String(p)) = args.get(key) {
                    out.push(p.clone());
                }
            }
        }
    }
    if message.tool_calls.is_empty() {
        let text = message.text();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("```bash\n") {
            let body = &rest[i + 8..];
            let end = body.find("```").unwrap_or(body.len());
            out.push(body[..end].to_owned());
            rest = &body[end..];
            if rest.len() >= 3 {
                rest = &rest[3..];
            }
        }
    }
    out
}

/// The part of a command that is the agent's action: every line but a heredoc's body,
/// which is file content (a script, a patch) rather than something the agent ran, so a
/// path-like token in it (`1e9/60/60`, a URL's tail) is not a path the agent acted on.
/// The headers of a unified diff in a body are kept, as the files the patch changes
/// (without git's `a/` and `b/` prefixes).
fn action_text(command: &str) -> String {
    let mut out = String::new();
    let mut end: Option<&str> = None;
    for line in command.lines() {
        if let Some(word) = end {
            if line.trim() == word {
                end = None;
            } else if let Some(path) = diff_header(line) {
                out.push_str(path);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if let Some(pos) = line.find("<<") {
            let word = line[pos + 2..].trim_start_matches('-').trim_start();
            let word = word
                .split(|c: char| c.is_whitespace() || c == '>' || c == ';')
                .next()
                .unwrap_or("")
                .trim_matches(|c| c == '\'' || c == '"');
            if !word.is_empty() {
                end = Some(word);
            }
        }
    }
    out
}

/// The file a unified diff header names, without git's `a/` or `b/` prefix.
fn diff_header(line: &str) -> Option<&str> {
    let named = match line.strip_prefix("diff --git ") {
        Some(rest) => rest.split_whitespace().next()?,
        None => line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("+++ "))?
            .split('\t')
            .next()?
            .trim(),
    };
    let path = named
        .strip_prefix("a/")
        .or_else(|| named.strip_prefix("b/"))
        .unwrap_or(named);
    (path != "/dev/null").then_some(path)
}

fn is_observation(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<returncode>") || t.starts_with("<output>")
}

/// The probes of `messages[i]` for every `i` in `middle`.
pub fn draw(messages: &[Message], middle: &[usize]) -> Vec<Probe> {
    let mut found: Vec<Probe> = Vec::new();
    let mut last_request: Option<(String, usize)> = None;
    for &i in middle {
        let mut push = |kind: ProbeKind, text: String, found: &mut Vec<Probe>| {
            if text.chars().count() < 4 {
                return;
            }
            match found.iter_mut().find(|p| p.kind == kind && p.text == text) {
                // Drawn once, where it first appears; dated by its newest appearance.
                Some(p) => p.message = i,
                None => found.push(Probe { kind, text, message: i }),
            }
        };
        let Some(message) = messages.get(i) else { continue };
        let text = message.text();
        match message.role {
            Role::Assistant => {
                for command in commands_of(message) {
                    if let Some(first) = command.lines().find(|l| !l.trim().is_empty()) {
                        if first.len() > 4 && !first.contains("<<") {
                            push(ProbeKind::Command, start(first, PROBE_CHARS), &mut found);
                        }
                    }
                    let action = action_text(&command);
                    for token in action.split(|c: char| c.is_whitespace() || "'\"`;|&()<>=,:".contains(c)) {
                        if is_pathlike(token) {
                            push(ProbeKind::Path, token.to_owned(), &mut found);
                        }
                    }
                }
                for span in text.split('`').skip(1).step_by(2) {
                    if is_ident(span) && !is_pathlike(span) {
                        push(ProbeKind::Identifier, span.to_owned(), &mut found);
                    }
                }
            }
            Role::Tool => errors(&text, &mut found, &mut push),
            Role::User if is_observation(&text) => errors(&text, &mut found, &mut push),
            Role::User if !text.starts_with(llm_compactor::plan::SUMMARY_HEADER) => {
                if let Some(first) = text.lines().find(|l| l.trim().len() >= 8) {
                    last_request = Some((start(first.trim(), PROBE_CHARS), i));
                }
            }
            _ => {}
        }
    }
    if let Some((text, message)) = last_request.filter(|(t, _)| t.chars().count() >= 4) {
        found.push(Probe {
            kind: ProbeKind::Request,
            text,
            message,
        });
    }
    let mut out = Vec::new();
    for kind in ProbeKind::ALL {
        let all: Vec<&Probe> = found.iter().filter(|p| p.kind == kind).collect();
        if all.len() <= PER_KIND {
            out.extend(all.into_iter().cloned());
        } else {
            // Evenly spaced, always including the newest.
            for k in 0..PER_KIND {
                let index = (all.len() - 1) - k * (all.len() - 1) / (PER_KIND - 1);
                out.push(all[index].clone());
            }
        }
    }
    out
}

fn errors(text: &str, found: &mut Vec<Probe>, push: &mut impl FnMut(ProbeKind, String, &mut Vec<Probe>)) {
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("FAILED ") {
            if let Some(test) = rest.split_whitespace().next().filter(|t| t.contains("::")) {
                push(ProbeKind::Error, test.to_owned(), found);
            }
            continue;
        }
        let head = line.split(':').next().unwrap_or("");
        // An exception's name (`ValueError`, `pkg.CustomError`), not a string literal
        // that contains one (`"TypeError: ..."` in printed source code).
        if (head.ends_with("Error") || head.ends_with("Exception"))
            && head.len() > 5
            && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            && line.len() > head.len()
        {
            push(ProbeKind::Error, start(line, PROBE_CHARS), found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_compactor::message::ToolCall;

    #[test]
    fn probes_are_drawn_from_actions_results_and_the_last_request() {
        let messages = vec![
            Message::user("Please fix the crash in the parser"),
            Message::assistant("Looking at `parse_header` first.").with_tool_calls(vec![ToolCall::new(
                "c",
                "bash",
                r#"{"command":"pytest tests/test_parse.py -x"}"#,
            )]),
            Message::tool("c", "FAILED tests/test_parse.py::test_empty - KeyError\nKeyError: 'x'"),
        ];
        let probes = draw(&messages, &[0, 1, 2]);
        let texts: Vec<(ProbeKind, &str)> = probes.iter().map(|p| (p.kind, p.text.as_str())).collect();
        assert!(texts.contains(&(ProbeKind::Path, "tests/test_parse.py")));
        assert!(texts.contains(&(ProbeKind::Command, "pytest tests/test_parse.py -x")));
        assert!(texts.contains(&(ProbeKind::Error, "tests/test_parse.py::test_empty")));
        assert!(texts.contains(&(ProbeKind::Error, "KeyError: 'x'")));
        assert!(texts.contains(&(ProbeKind::Request, "Please fix the crash in the parser")));
        assert!(texts.contains(&(ProbeKind::Identifier, "parse_header")));
    }

    #[test]
    fn a_heredoc_body_gives_no_path_probe_but_its_diff_headers_do() {
        let command = "cat <<'EOF' > /tmp/fix.patch\n--- a/src/rules/L031.py\n+++ b/src/rules/L031.py\n\
                       -x = 1e9/60/60\n+x = 2\nEOF\ngit apply /tmp/fix.patch";
        let messages = vec![Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "c",
            "bash",
            serde_json::json!({ "command": command }).to_string(),
        )])];
        let paths: Vec<String> = draw(&messages, &[0])
            .into_iter()
            .filter(|p| p.kind == ProbeKind::Path)
            .map(|p| p.text)
            .collect();
        assert_eq!(paths, vec!["/tmp/fix.patch", "src/rules/L031.py"]);
    }

    #[test]
    fn a_device_and_a_quoted_exception_name_are_not_probes() {
        let messages = vec![
            Message::assistant("").with_tool_calls(vec![ToolCall::new(
                "c",
                "bash",
                r#"{"command":"python run.py > /dev/null"}"#,
            )]),
            Message::tool(
                "c",
                "raise TypeError(\n\"TypeError: len() takes one argument \"\nValueError: bad",
            ),
        ];
        let texts: Vec<(ProbeKind, String)> = draw(&messages, &[0, 1]).into_iter().map(|p| (p.kind, p.text)).collect();
        assert!(!texts.iter().any(|(_, t)| t == "/dev/null"), "{texts:?}");
        assert!(!texts.iter().any(|(_, t)| t.starts_with('"')), "{texts:?}");
        assert!(
            texts.contains(&(ProbeKind::Error, "ValueError: bad".to_owned())),
            "{texts:?}"
        );
    }
}
