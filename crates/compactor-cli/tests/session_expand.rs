//! `compactor session expand` and `compactor proxy expand` (issue 31): the real binary
//! turns a handle the summary names back into the original messages, in its own session
//! only.

use crate::support;

use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{handle_of, handles_in};
use llm_compactor::session::{Session, SessionOptions, Transcript};
use serde_json::Value;
use support::{run, stdout};

/// A session of 30 turns, each reading a file whose content is unique.
fn session(path: &std::path::Path, tag: &str) -> Vec<Message> {
    let mut session = Session::create(path, SessionOptions::new()).unwrap();
    let mut stored = vec![
        session
            .append_message(Message::user("Fix the parser."))
            .unwrap()
            .clone(),
    ];
    for k in 0..30 {
        let call = Message::assistant(format!("Reading {k}.")).with_tool_calls(vec![ToolCall::new(
            format!("c{k}"),
            "bash",
            format!(r#"{{"command":"cat src/mod_{k}.py"}}"#),
        )]);
        let result = Message::tool(format!("c{k}"), format!("{tag}-CONTENT-{k}\n{}", "x = 1\n".repeat(300)));
        stored.extend(session.append_messages(vec![call, result]).unwrap().to_vec());
    }
    stored
}

#[test]
fn a_handle_in_the_summary_expands_to_the_original_in_its_own_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let stored = session(&a, "A");
    session(&b, "B");
    let out = run(
        &[
            "session",
            "compact",
            a.to_str().unwrap(),
            "--budget",
            "6000",
            // Room for the whole ledger: at the default target (40%) the ledger, sized to
            // it, cuts the oldest files, which is not what this test is about.
            "--target-ratio",
            "0.6",
            "--summarizer",
            "ledger",
            "--expand",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let transcript = Transcript::read(&a).unwrap();
    let summary = transcript
        .messages()
        .iter()
        .map(Message::text)
        .find(|t| t.contains("mod_3.py"))
        .expect("the summary names mod_3.py");
    let line = summary.lines().find(|l| l.contains("`cat src/mod_3.py`")).unwrap();
    let handle = handles_in(line).remove(0);
    assert_eq!(handle, handle_of(7, &stored[7]));
    let out = run(&["session", "expand", a.to_str().unwrap(), &handle, "--json"], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let messages = &json["expansions"][0]["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 2, "{json}");
    let original: Message = serde_json::from_value(messages[1].clone()).unwrap();
    assert_eq!(original, stored[8]);
    assert!(original.text().starts_with("A-CONTENT-3\n"));
    // The same handle in the other session, and a guessed one: not found, exit 1.
    for (file, handle) in [(&b, handle.as_str()), (&a, "#0000000000")] {
        let out = run(&["session", "expand", file.to_str().unwrap(), handle], None);
        assert!(!out.status.success());
        assert!(stdout(&out).contains("not found in this session"), "{}", stdout(&out));
        assert!(!stdout(&out).contains("A-CONTENT"));
    }
}
