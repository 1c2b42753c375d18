//! Lexical scanners the ledger and the grounding gate share: path-like tokens, code
//! identifiers, exit statuses, error lines and fenced shell blocks.
//!
//! Hand-written on purpose: they run over every replaced message of every pass (100k
//! tokens and more), must be fast and deterministic, and the core takes no regex
//! dependency. Each scanner errs on the side of *not* recognising something: a fact the
//! ledger misses costs recall, a fact it invents would cost trust.

/// File extensions that make a slash-free token a path (`setup.py`, `Cargo.toml`).
const EXTENSIONS: &[&str] = &[
    "py", "rs", "toml", "json", "yaml", "yml", "md", "txt", "cfg", "ini", "js", "ts", "tsx", "jsx", "go", "c", "h",
    "cc", "cpp", "hpp", "java", "kt", "rb", "php", "sh", "sql", "html", "css", "lock", "xml", "pony", "rst", "csv",
    "ipynb", "pyi", "swift", "scala", "cs", "lua", "pl", "r", "mjs", "cjs", "vue", "proto", "gradle",
];

/// Characters that end a token in shell text and prose.
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\'' | '"'
                | '`'
                | ';'
                | '|'
                | '&'
                | '('
                | ')'
                | '<'
                | '>'
                | ','
                | '='
                | '['
                | ']'
                | '{'
                | '}'
                | '*'
                | '$'
                | '!'
                | '?'
        )
}

/// Whitespace/punctuation-separated tokens of `text`, in order.
pub(crate) fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_separator).filter(|t| !t.is_empty())
}

/// Trims the punctuation prose puts around a token (`foo.py:12:`, `(bar)`, `x.`).
/// A leading `./` or `../` is part of a relative path and is kept (trimming its dot
/// made `./pkg/x.py` the absolute `/pkg/x.py`).
pub(crate) fn trim_token(token: &str) -> &str {
    let punctuation = |c: char| {
        matches!(
            c,
            ':' | '.' | ',' | ';' | '\'' | '"' | '`' | '(' | ')' | '[' | ']' | '{' | '}' | '*' | '<' | '>' | '!' | '?'
        )
    };
    let ended = token.trim_end_matches(punctuation);
    let mut token = ended.trim_start_matches(punctuation);
    if token.starts_with('/') {
        // Give back the dots right before the slash (`./`, `../`).
        let cut = ended.len() - token.len();
        let dots = cut - ended[..cut].trim_end_matches('.').len();
        token = &ended[cut - dots.min(2)..];
    }
    // `path.py:12` and `path.py:12:3` name the path.
    match token.find(':') {
        Some(i) if token[i + 1..].chars().next().is_some_and(|c| c.is_ascii_digit()) => &token[..i],
        _ => token,
    }
}

/// True for a token that names a file or directory: it contains a slash between
/// path-safe characters (and is not a URL), or it ends in a known extension.
pub(crate) fn is_path(token: &str) -> bool {
    let len = token.chars().count();
    if !(3..=200).contains(&len) || token.starts_with('-') || token.contains("://") {
        return false;
    }
    if !token
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+' | '@' | '~'))
    {
        return false;
    }
    if !token.chars().any(|c| c.is_alphabetic()) {
        return false;
    }
    if token.contains('/') {
        // `a/b`, `/testbed/x.py`, `src/`; not `/`, `//`, `and/or`-style prose pairs.
        let parts: Vec<&str> = token.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return false;
        }
        if token.starts_with('/') || token.starts_with("./") || token.starts_with("~/") {
            return true;
        }
        // Relative: `pkg/mod.py`, `src/a/b`; not sed's `s/a/b/g`.
        return parts.len() >= 2
            && parts.iter().all(|p| p.chars().count() >= 2)
            && (parts.iter().any(|p| p.contains('.') || p.contains('_')) || parts.len() >= 3);
    }
    match token.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && !stem.ends_with('.')
                && EXTENSIONS.contains(&ext)
                && stem
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        }
        None => false,
    }
}

/// True for a code identifier worth checking verbatim: `snake_case` (with an
/// underscore), `dotted.names`, `CamelCase` with an inner capital, `call()`; not plain
/// words, not numbers.
pub(crate) fn is_code_identifier(token: &str) -> bool {
    let core = token.strip_suffix("()").unwrap_or(token);
    let len = core.chars().count();
    if !(3..=120).contains(&len) {
        return false;
    }
    let mut chars = core.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
        return false;
    }
    if !core
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'))
    {
        return false;
    }
    if core.ends_with('.') || core.ends_with(':') || core.contains("..") {
        return false;
    }
    let has_letters = core.chars().filter(|c| c.is_ascii_alphabetic()).count() >= 2;
    let snake = core.trim_matches('_').contains('_');
    let dotted = core.contains('.')
        && core
            .split('.')
            .all(|p| p.len() >= 2 && p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_'));
    let pathy = core.contains("::");
    let camel = core.chars().skip(1).any(|c| c.is_ascii_uppercase()) && core.chars().any(|c| c.is_ascii_lowercase());
    has_letters && (snake || dotted || pathy || camel || token.ends_with("()"))
}

/// True for a test name: `test_x`, `tests/a.py::test_b`, `TestCase.test_y`.
/// Only name characters: `test_x\\n` (a JSON-escaped newline glued to a name, as an
/// echoed transcript carries it) is not a test name.
pub(crate) fn is_test_name(token: &str) -> bool {
    (token.contains("::test") || token.starts_with("test_") || token.contains(".test_"))
        && token
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':' | '/' | '-'))
}

/// The exit status a tool result reports, if it reports one: mini-swe-agent's
/// `<returncode>N</returncode>`, OpenHands' `[Command finished with exit code N]`, and
/// `exit code N` / `Exit code: N` lines.
pub(crate) fn exit_status(result: &str) -> Option<i64> {
    if let Some(rest) = result.split("<returncode>").nth(1) {
        return rest.split("</returncode>").next()?.trim().parse().ok();
    }
    let lower_head: String = result.chars().take(4096).collect::<String>().to_ascii_lowercase();
    let lower = if result.len() > 8192 {
        // The status is usually on the last lines.
        let tail: String = result
            .chars()
            .rev()
            .take(2048)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("{lower_head}\n{}", tail.to_ascii_lowercase())
    } else {
        result.to_ascii_lowercase()
    };
    for marker in ["exit code:", "exit code", "exit status:", "exit status"] {
        if let Some(rest) = lower.rsplit(marker).next().filter(|_| lower.contains(marker)) {
            let digits: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '-')
                .collect();
            if let Ok(code) = digits.parse() {
                return Some(code);
            }
        }
    }
    None
}

/// The error lines of a tool result: Python exception lines (`NameError: ...`,
/// `AssertionError`), pytest `FAILED x::y` lines, `error:` / `error[E0308]:` lines of
/// compilers, each trimmed and capped at `cap` chars. Deduplicated, in order.
pub(crate) fn error_lines(result: &str, cap: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in result.lines() {
        let line = line.trim();
        if line.is_empty() || line.len() > 4000 {
            continue;
        }
        let hit = is_failed_test_line(line) || is_exception_line(line) || is_compiler_error(line);
        if hit {
            let capped: String = line.chars().take(cap).collect();
            if !out.contains(&capped) {
                out.push(capped);
            }
        }
    }
    out
}

/// `FAILED tests/test_x.py::test_y - AssertionError` (pytest's summary line).
pub(crate) fn is_failed_test_line(line: &str) -> bool {
    line.starts_with("FAILED ") && line.contains("::")
}

/// pytest's closing line of a run in which nothing failed: `=== 75 passed in 0.42s ===`,
/// `75 passed, 2 skipped in 1.2s` (`-q`). A summary that counts a failure or an error is
/// not clean.
pub(crate) fn is_clean_test_summary(line: &str) -> bool {
    let body = line.trim_matches(|c: char| c == '=' || c.is_whitespace());
    let Some((counts, time)) = body.rsplit_once(" in ") else {
        return false;
    };
    let timed = time.trim_end_matches('s').parse::<f64>().is_ok();
    let mut passed = false;
    for part in counts.split(", ") {
        let Some((n, what)) = part.split_once(' ') else {
            return false;
        };
        if n.parse::<u64>().is_err() {
            return false;
        }
        match what {
            "passed" => passed = true,
            "skipped" | "deselected" | "xfailed" | "xpassed" | "warning" | "warnings" => {}
            _ => return false,
        }
    }
    timed && passed
}

/// The test a line reports as passed: `PASSED x::test_y` (pytest's `-rA` summary) or
/// `x::test_y PASSED` (its `-v` progress line, maybe followed by a percentage).
pub(crate) fn passed_test(line: &str) -> Option<&str> {
    if line.starts_with("PASSED ") {
        return test_of(line);
    }
    let mut words = line.split_whitespace();
    let name = words.next()?;
    (name.contains("::") && words.next() == Some("PASSED")).then_some(name)
}

/// The test a `FAILED` or `PASSED` line names.
pub(crate) fn test_of(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("FAILED ").or_else(|| line.strip_prefix("PASSED "))?;
    let name = rest.split_whitespace().next()?;
    name.contains("::").then_some(name)
}

fn is_exception_line(line: &str) -> bool {
    // `ValueError: bad`, `pkg.mod.CustomError: x`, `AssertionError` alone.
    let head = line.split(':').next().unwrap_or("");
    let name = head.rsplit('.').next().unwrap_or("");
    let named = (name.ends_with("Error") || name.ends_with("Exception")) && name.len() > 5;
    named
        && !head.contains(' ')
        && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (line.len() == head.len() || line[head.len()..].starts_with(':'))
}

fn is_compiler_error(line: &str) -> bool {
    line.starts_with("error:") || line.starts_with("error[E") || line.contains(": error:")
}

/// The fenced shell blocks of an assistant's text (mini-swe-agent writes its action as
/// one ```` ```bash ```` block), in order.
pub(crate) fn bash_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(newline) = after.find('\n') else { break };
        let lang = after[..newline].trim();
        let body = &after[newline + 1..];
        let Some(end) = body.find("```") else { break };
        if matches!(lang, "bash" | "sh" | "shell" | "console" | "zsh") {
            out.push(body[..end].trim());
        }
        rest = &body[end + 3..];
    }
    out
}

/// URLs in text (`http://`, `https://`), without trailing punctuation.
pub(crate) fn urls(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | '(' | ')'))
        .filter(|t| t.starts_with("http://") || t.starts_with("https://"))
        .map(|t| t.trim_end_matches(['.', ',', ';', ':', ']']))
        .filter(|t| t.len() > 10)
}

/// The first non-blank line of `text`, trimmed ("" when there is none).
pub(crate) fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("")
}

/// The `` `code spans` `` of text, in order.
pub(crate) fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| !s.is_empty() && !s.contains('\n'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_recognised_and_prose_is_not() {
        for p in [
            "pvlib/temperature.py",
            "/testbed/setup.py",
            "src/lib.rs",
            "setup.py",
            "./run_tests.sh",
            "ab/cd/ef",
        ] {
            assert!(is_path(p), "{p}");
        }
        for p in [
            "and/or",
            "s/a/b/g",
            "-n",
            "https://x.org/a.py",
            "/",
            "3.14",
            "e.g",
            "1/2",
            "hello",
        ] {
            assert!(!is_path(p), "{p}");
        }
    }

    // Regression (issue 11): the eval counted 109 "hallucinations" in the echo bound,
    // most of them names glued to a JSON-escaped newline (`test_cases:\\n`).
    #[test]
    fn a_test_name_is_made_of_name_characters() {
        for t in ["test_x", "tests/a.py::test_b", "TestCase.test_y", "test_a-b"] {
            assert!(is_test_name(t), "{t}");
        }
        for t in ["test_cases:\\n", "test_iam\\n\\n#", "test_\\", "testing"] {
            assert!(!is_test_name(t), "{t}");
        }
    }

    // Regression (issue 11): `./astroid/x.py.backup2` was recorded as `/astroid/...`.
    #[test]
    fn a_relative_path_keeps_its_leading_dots() {
        assert_eq!(trim_token("./astroid/x.py.backup2"), "./astroid/x.py.backup2");
        assert_eq!(trim_token("(../a/b.py)"), "../a/b.py");
        assert_eq!(trim_token("`src/x.py:12:`"), "src/x.py");
        assert_eq!(trim_token("/testbed/x.py."), "/testbed/x.py");
        assert_eq!(trim_token("\"./x.py\""), "./x.py");
    }

    #[test]
    fn identifiers() {
        for t in ["fit_model", "pvlib.temperature", "CamelCase", "run()", "a::b"] {
            assert!(is_code_identifier(t), "{t}");
        }
        for t in ["the", "Hello", "1.2.3", "x", "done.", "e.g", "i.e"] {
            assert!(!is_code_identifier(t), "{t}");
        }
    }

    #[test]
    fn exit_statuses() {
        assert_eq!(exit_status("<returncode>2</returncode>\n<output>x</output>"), Some(2));
        assert_eq!(exit_status("ok\n[Command finished with exit code 0]"), Some(0));
        assert_eq!(exit_status("Exit code: 1"), Some(1));
        assert_eq!(exit_status("nothing here"), None);
    }

    #[test]
    fn errors() {
        let out = "Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: name 'y' is not defined\nFAILED tests/t.py::test_a - assert 1 == 2\nerror[E0308]: mismatched types\nThis is not an Error: prose";
        let lines = error_lines(out, 200);
        assert_eq!(
            lines,
            vec![
                "NameError: name 'y' is not defined".to_owned(),
                "FAILED tests/t.py::test_a - assert 1 == 2".to_owned(),
                "error[E0308]: mismatched types".to_owned()
            ]
        );
        assert_eq!(test_of("FAILED tests/t.py::test_a - x"), Some("tests/t.py::test_a"));
        assert_eq!(passed_test("PASSED tests/t.py::test_a"), Some("tests/t.py::test_a"));
        assert_eq!(
            passed_test("tests/t.py::test_b[x-1] PASSED   [ 12%]"),
            Some("tests/t.py::test_b[x-1]")
        );
        assert_eq!(passed_test("tests/t.py::test_c FAILED"), None);
        for clean in [
            "============================== 75 passed in 0.42s ===============================",
            "75 passed, 2 skipped, 1 warning in 1.20s",
        ] {
            assert!(is_clean_test_summary(clean), "{clean}");
        }
        for not_clean in [
            "========================= 2 failed, 73 passed in 0.61s ==========================",
            "=== 1 error, 3 passed in 0.1s ===",
            "=== 2 skipped in 0.1s ===",
            "we passed in review",
        ] {
            assert!(!is_clean_test_summary(not_clean), "{not_clean}");
        }
    }

    #[test]
    fn bash_blocks_are_found() {
        let text = "THOUGHT: look\n\n```bash\ncat a.py | head\n```\n```python\nx\n```";
        assert_eq!(bash_blocks(text), vec!["cat a.py | head"]);
    }
}
