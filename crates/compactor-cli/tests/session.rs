//! `compactor session`: the real binary over real transcripts.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;

use llm_compactor::message::{Message, ToolCall};
use llm_compactor::session::{CompactionRecord, ElisionItem, Session, SessionOptions};
use serde_json::Value;
use support::{run, stdout};

/// `compactor session import INPUT -o SESSION`.
fn import(input: &Path, session: &Path) -> Output {
    run(
        &[
            "session",
            "import",
            input.to_str().unwrap(),
            "-o",
            session.to_str().unwrap(),
        ],
        None,
    )
}

/// `compactor session replay SESSION EXTRA...`.
fn replay(session: &Path, extra: &[&str]) -> Output {
    run(
        &[&["session", "replay", session.to_str().unwrap()], extra].concat(),
        None,
    )
}

/// A transcript with messages, an elision epoch and a hard-trim compaction.
fn sample(dir: &Path) -> (PathBuf, Vec<Message>) {
    let path = dir.join("run.jsonl");
    let mut session = Session::create(&path, SessionOptions::new()).unwrap();
    session.append_message(Message::system("You are careful.")).unwrap();
    session.append_message(Message::user("Fix the build.")).unwrap();
    session
        .append_message(Message::assistant("Reading.").with_tool_calls(vec![ToolCall::new(
            "c1",
            "read_file",
            r#"{"path":"a"}"#,
        )]))
        .unwrap();
    let read = session
        .append_message(Message::tool("c1", "x".repeat(4000)))
        .unwrap()
        .id
        .clone()
        .unwrap();
    session.append_message(Message::assistant("Found it.")).unwrap();
    session
        .append_elision(vec![ElisionItem::new(
            read,
            "[elided by the harness: 4000-char read_file result; re-run the call if you need it again]",
        )])
        .unwrap();
    let through = session.messages()[3].id.clone().unwrap();
    session
        .append_compaction({
            let mut record = CompactionRecord::new(through, "[3 messages were dropped unsummarized]");
            record.dropped = 3;
            record.fallback = true;
            record.tokens_after = 40;
            record.tokens_before = 1060;
            record
        })
        .unwrap();
    session.append_message(Message::user("Now the tests.")).unwrap();
    let messages = session.messages().to_vec();
    (path, messages)
}

#[test]
fn replay_prints_the_rebuilt_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let (path, messages) = sample(dir.path());
    let out = replay(&path, &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.starts_with("[system]\nYou are careful.\n"), "{text}");
    assert!(
        text.contains("[user]\n[3 messages were dropped unsummarized]\n"),
        "{text}"
    );
    assert!(!text.contains("Fix the build."), "the compaction replaced it");

    let out = replay(&path, &["--json"]);
    assert!(out.status.success());
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let replayed = value["messages"].as_array().unwrap();
    assert_eq!(replayed.len(), messages.len());
    let roles: Vec<&str> = replayed.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert_eq!(replayed[3]["content"], "Now the tests.");
}

#[test]
fn inspect_shows_the_timeline_with_the_hard_trim() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = sample(dir.path());
    let out = run(&["session", "inspect", path.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(text.contains("9 lines"), "{text}");
    assert!(text.contains("elision     1 tool result(s) stubbed"), "{text}");
    assert!(text.contains("1060 -> 40 tokens"), "{text}");
    assert!(text.contains("HARD TRIM"), "{text}");
    assert!(
        text.contains("totals: 6 message(s), 1 elision epoch(s), 1 compaction(s) (1 hard trim(s))"),
        "{text}"
    );
}

#[test]
fn a_malformed_transcript_fails_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = sample(dir.path());
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{not json";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for command in ["replay", "inspect"] {
        let out = run(&["session", command, path.to_str().unwrap()], None);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{}:3: not valid JSON", path.display())), "{err}");
    }
}

#[test]
fn a_torn_tail_is_reported_and_ignored_by_readers() {
    let dir = tempfile::tempdir().unwrap();
    let (path, messages) = sample(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(br#"{"id":"x","payl"#);
    std::fs::write(&path, &bytes).unwrap();
    let out = replay(&path, &["--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("torn final line"));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["messages"].as_array().unwrap().len(), messages.len());
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "readers do not modify the file");
}

#[test]
fn help_and_usage_errors() {
    for sub in ["replay", "inspect"] {
        let out = run(&["session", sub, "--help"], None);
        assert!(out.status.success());
        assert!(stdout(&out).contains("Example"));
    }
    assert_eq!(run(&["session", "replay"], None).status.code(), Some(2));
    assert_eq!(run(&["session", "nope"], None).status.code(), Some(2));
}

#[test]
fn import_then_replay_gives_back_the_openai_conversation() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let conversation = serde_json::json!([
        {"role": "system", "content": "You are careful."},
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.rs\nb.rs"},
        {"role": "assistant", "content": "Two files.", "refusal": null}
    ]);
    let input = dir.path().join("conv.json");
    std::fs::write(&input, serde_json::to_string(&conversation).unwrap()).unwrap();
    let session = dir.path().join("s.jsonl");
    let out = import(&input, &session);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(&session).unwrap().permissions().mode() & 0o777, 0o600);

    let out = replay(&session, &["--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value, serde_json::json!({ "messages": conversation }));

    let out = replay(&session, &["--json", "--to", "anthropic"]);
    assert!(out.status.success());
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["system"], "You are careful.");
    assert_eq!(value["messages"][0]["role"], "user");

    // Importing over an existing session is refused.
    let out = import(&input, &session);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
}

#[test]
fn import_an_anthropic_conversation_and_replay_it_in_kind() {
    let dir = tempfile::tempdir().unwrap();
    let conversation = serde_json::json!({
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "Read a.rs"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "a.rs"}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "fn main() {}"}]}
        ]
    });
    let input = dir.path().join("conv.json");
    std::fs::write(&input, serde_json::to_string(&conversation).unwrap()).unwrap();
    let session = dir.path().join("s.jsonl");
    let out = import(&input, &session);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = replay(&session, &["--json", "--to", "anthropic"]);
    assert!(out.status.success());
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        value, conversation,
        "imported from Anthropic, replayed in kind: the same document"
    );
}

#[test]
fn import_a_real_mini_swe_agent_trajectory() {
    let Some(file) = support::mini_swe_agent_files().into_iter().next() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let session = tmp.path().join("s.jsonl");
    let out = import(&file, &session);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let original: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let out = replay(&session, &["--json"]);
    assert!(out.status.success());
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    // Every message replays, the `exit` record as a labelled user message (never dropped).
    let wanted = original["messages"].as_array().unwrap().len();
    assert_eq!(value["messages"].as_array().unwrap().len(), wanted);
    let out = run(&["session", "inspect", session.to_str().unwrap()], None);
    assert!(out.status.success());
}

/// A long OpenAI conversation of tool rounds, imported as a session.
fn long_session(dir: &Path) -> PathBuf {
    let mut messages = vec![
        serde_json::json!({"role": "system", "content": "You are careful."}),
        serde_json::json!({"role": "user", "content": "Read all the files."}),
    ];
    for i in 0..8 {
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{i}"), "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"f{i}\"}}")}}
        ]}));
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": format!("{i}").repeat(3_000)}));
    }
    let input = dir.join("conv.json");
    std::fs::write(&input, serde_json::to_string(&messages).unwrap()).unwrap();
    let session = dir.join("s.jsonl");
    let out = import(&input, &session);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    session
}

#[test]
fn compact_appends_a_pass_that_replay_reproduces() {
    let dir = tempfile::tempdir().unwrap();
    let session = long_session(dir.path());
    let s = session.to_str().unwrap();
    let out = run(
        &[
            "session",
            "compact",
            s,
            "--json",
            "--budget",
            "4000",
            "--keep-recent",
            "2",
            "--counter",
            "heuristic",
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            "echo 'Summary: eight files were read.'",
            // A summarizing pass: aging (the default since issue 12) would stub instead.
            "--age-observations=false",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(result["dropped"].as_u64().unwrap() > 0);
    assert_eq!(result["fallback"], false);
    assert!(String::from_utf8_lossy(&out.stderr).contains("appended to"));

    let out = run(&["session", "replay", s, "--json"], None);
    assert!(out.status.success());
    let replayed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        replayed["messages"], result["messages"],
        "replay gives the compacted conversation"
    );
    let summary = replayed["messages"].as_array().unwrap().iter().find(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.contains("eight files were read"))
    });
    assert!(summary.is_some());

    let out = run(&["session", "inspect", s], None);
    let text = stdout(&out);
    assert!(text.contains("compaction  replaces through"), "{text}");
    assert!(!text.contains("HARD TRIM"), "{text}");
}

#[test]
fn compact_with_aging_appends_an_elision_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let session = long_session(dir.path());
    let s = session.to_str().unwrap();
    let out = run(
        &[
            "session",
            "compact",
            s,
            "--json",
            "--budget",
            "100000",
            "--keep-recent",
            "2",
            "--counter",
            "heuristic",
            "--age-observations",
            "--age-min-chars",
            "1000",
            "--age-reclaim-min",
            "6000",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["dropped"], 0);
    assert!(!result["elisions"].as_array().unwrap().is_empty());
    let out = run(&["session", "replay", s, "--json"], None);
    let replayed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(replayed["messages"], result["messages"]);
    let text = stdout(&run(&["session", "inspect", s], None));
    assert!(text.contains("elision "), "{text}");
}

#[test]
fn compact_on_a_locked_session_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let session = long_session(dir.path());
    let (held, _) = Session::open(&session, SessionOptions::new()).unwrap();
    let before = std::fs::read(&session).unwrap();
    let out = run(
        &[
            "session",
            "compact",
            session.to_str().unwrap(),
            "--budget",
            "4000",
            "--counter",
            "heuristic",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("locked"));
    assert_eq!(std::fs::read(&session).unwrap(), before);
    drop(held);
    assert_eq!(run(&["session", "compact", "--help"], None).status.code(), Some(0));
    let out = run(
        &["session", "compact", session.to_str().unwrap(), "--budget", "0"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "an invalid configuration is a usage error");
}
