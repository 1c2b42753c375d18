//! Unit tests of the parent module: kept beside it, in their own file, so that the
//! module itself holds only its rules.

use super::*;

#[test]
fn near_duplicate_heredocs_merge() {
    let messages = vec![
        Message::assistant("").with_tool_calls(vec![crate::message::ToolCall::new(
            "a",
            "bash",
            r#"{"command":"cat <<'EOF' > fix.py\nv1\nEOF"}"#,
        )]),
        Message::tool("a", "<returncode>0</returncode>"),
        Message::assistant("").with_tool_calls(vec![crate::message::ToolCall::new(
            "b",
            "bash",
            r#"{"command":"cat <<'EOF' > fix.py\nv2\nEOF"}"#,
        )]),
        Message::tool("b", "<returncode>1</returncode>"),
    ];
    let ledger = extract(&messages, &[0, 1, 2, 3], &LedgerRules::default());
    assert_eq!(ledger.commands.len(), 1, "{:?}", ledger.commands);
    assert_eq!((ledger.commands[0].runs, ledger.commands[0].exit), (2, Some(1)));
}

/// The pages a call opened (a client fetch tool's `url`, a browser's `urls`,
/// Anthropic's server `web_fetch`) are identifiers, as URLs in the agent's text are;
/// a search query and a URL inside a command are not read as pages.
#[test]
fn urls_a_call_opens_are_identifiers() {
    let messages = vec![
        Message::assistant("").with_tool_calls(vec![
            crate::message::ToolCall::new("a", "fetch", r#"{"url": "https://docs.rs/tokio/latest/tokio/"}"#),
            crate::message::ToolCall::new("b", "browser", r#"{"urls": ["https://a.example/one", "not a url"]}"#),
            crate::message::ToolCall::new("c", "bash", r#"{"command": "curl -s https://b.example/two"}"#),
        ]),
        Message::tool("a", "tokio docs"),
        Message::tool("b", "page"),
        Message::tool("c", "{}"),
        Message {
            content: Content::Parts(vec![
                Part::Other(serde_json::json!({
                    "type": "server_tool_use", "id": "srv_1", "name": "web_fetch",
                    "input": {"url": "https://c.example/three"}
                })),
                Part::Other(serde_json::json!({
                    "type": "server_tool_use", "id": "srv_2", "name": "web_search",
                    "input": {"query": "tokio cancel https"}
                })),
            ]),
            ..Message::assistant("")
        },
    ];
    let ledger = extract(&messages, &[0, 1, 2, 3, 4], &LedgerRules::default());
    assert_eq!(
        ledger.identifiers,
        [
            "https://docs.rs/tokio/latest/tokio/",
            "https://a.example/one",
            "https://c.example/three"
        ]
    );
}

/// Commands sent as argv arrays (Codex's `shell` tool, the Responses API's local
/// shell action) are commands: a shell's `-lc` script as it is, other argv joined.
#[test]
fn argv_commands_are_recorded() {
    let call = |id: &str, name: &str, arguments: &str| {
        Message::assistant("").with_tool_calls(vec![crate::message::ToolCall::new(id, name, arguments)])
    };
    let messages = vec![
        call(
            "a",
            "shell",
            r#"{"command":["bash","-lc","cargo test -p parser"],"timeout_ms":1000}"#,
        ),
        Message::tool("a", "ok"),
        call(
            "b",
            "local_shell",
            r#"{"type":"exec","command":["/bin/sh","-c","ls src"],"env":{}}"#,
        ),
        Message::tool("b", "main.rs"),
        call("c", "shell", r#"{"command":["git","status","--short"]}"#),
        Message::tool("c", ""),
        call("d", "shell", r#"{"command":["bash",7]}"#),
        Message::tool("d", ""),
    ];
    let ledger = extract(&messages, &[0, 1, 2, 3, 4, 5, 6, 7], &LedgerRules::default());
    let commands: Vec<&str> = ledger.commands.iter().map(|c| c.command.as_str()).collect();
    assert_eq!(commands, ["cargo test -p parser", "ls src", "git status --short"]);
}
