//! The transcript's format, replay, strict loading, torn-tail repair, lock and mode.

use crate::session_support;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use llm_compactor::Usage;
use llm_compactor::message::{Content, Message, ToolCall};
use llm_compactor::session::{CompactionRecord, ElisionItem, Record, Session, SessionError, Transcript, repair};
use serde_json::json;
use session_support::{bytes_of, file_bytes, fixed_options, synthetic_result};

fn id(n: u64) -> String {
    format!("00000000-0000-4000-8000-{n:012x}")
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are a careful agent."),
        Message::user("Fix the build."),
        Message::assistant("Reading.").with_tool_calls(vec![ToolCall::new("c1", "read_file", r#"{"path":"a.rs"}"#)]),
        Message::tool("c1", "x".repeat(5000)),
        Message::assistant("Now the other.").with_tool_calls(vec![ToolCall::new(
            "c2",
            "read_file",
            r#"{"path":"b.rs"}"#,
        )]),
        Message::tool("c2", "y".repeat(3000)),
        Message::assistant("Done."),
    ]
}

fn new_session(dir: &tempfile::TempDir) -> (std::path::PathBuf, Session) {
    let path = dir.path().join("s.jsonl");
    let session = Session::create(&path, fixed_options()).expect("create");
    (path, session)
}

#[test]
fn lines_are_sorted_envelopes_with_fixed_clock_and_ids() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    let mut message = Message::user("hi");
    message.extras.insert("zeta".into(), json!(1));
    message.extras.insert("alpha".into(), json!({"b": 2, "a": 1}));
    session.append_message(message).unwrap();
    let text = String::from_utf8(file_bytes(&path)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            r#"{{"id":"{}","payload":{{"created_by":"llm-compactor {}"}},"ts":"2025-01-01T00:00:00.000000Z","type":"session-meta","v":1}}"#,
            id(1),
            env!("CARGO_PKG_VERSION")
        )
    );
    // The envelope's keys are sorted; the message payload keeps its native order
    // (extras included, unsorted), which is what makes replay byte-identical.
    assert_eq!(
        lines[1],
        format!(
            r#"{{"id":"{0}","payload":{{"id":"{0}","role":"user","content":"hi","extras":{{"zeta":1,"alpha":{{"b":2,"a":1}}}}}},"ts":"2025-01-01T00:00:00.000000Z","type":"message","v":1}}"#,
            id(2)
        )
    );
    assert!(text.ends_with('\n'));
}

#[test]
fn new_session_files_have_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _session) = new_session(&dir);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn create_refuses_an_existing_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, session) = new_session(&dir);
    drop(session);
    let err = Session::create(&path, fixed_options()).unwrap_err();
    assert!(matches!(err, SessionError::AlreadyExists { .. }), "{err}");
}

#[test]
fn record_result_writes_elision_then_compaction_and_replays_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    for message in conversation() {
        session.append_message(message).unwrap();
    }
    // An elision-only epoch first.
    let elision_only = synthetic_result(
        session.messages(),
        -1,
        "",
        &[(3, "[elided: 5000-char read_file result]".into())],
    );
    let pass = session.record_result(&elision_only).unwrap();
    assert!(pass.elision_id.is_some() && pass.compaction_id.is_none());
    let mut live = elision_only.messages.clone();
    assert_eq!(bytes_of(session.messages()), bytes_of(&live));

    // Then a summarizing pass that also stubs.
    session.append_message(Message::user("And the tests?")).unwrap();
    live.push(session.messages().last().unwrap().clone());
    let result = synthetic_result(
        session.messages(),
        4,
        "Summary: read a.rs and b.rs.",
        &[(5, "[elided: y]".into())],
    );
    let pass = session.record_result(&result).unwrap();
    let compaction_id = pass.compaction_id.clone().unwrap();
    live = result.messages.clone();
    let summary_at = live.iter().position(|m| m.id.is_none()).unwrap();
    live[summary_at].id = Some(compaction_id.clone());
    assert_eq!(bytes_of(session.messages()), bytes_of(&live));
    assert!(live[0].is_sticky(), "the system prompt stays");
    assert_eq!(live[1].content, Content::Text("Summary: read a.rs and b.rs.".into()));

    let transcript = Transcript::read(&path).unwrap();
    assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
    let kinds: Vec<&str> = transcript.entries().iter().map(|e| e.record.kind()).collect();
    assert_eq!(
        &kinds[kinds.len() - 2..],
        &["elision", "compaction"],
        "elision before compaction"
    );
    let Record::Compaction(compaction) = &transcript.entries().last().unwrap().record else {
        unreachable!()
    };
    assert_eq!(
        compaction.replaces_through_id,
        live_id_of(&conversation_ids(&transcript), 4)
    );
    assert_eq!(
        compaction.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        }
    );
    assert_eq!(transcript.entries().last().unwrap().id, compaction_id);

    // Reopening replays to the same conversation and appends after it.
    drop(session);
    let (mut reopened, report) = Session::open(&path, fixed_options()).unwrap();
    assert!(report.repaired.is_none());
    assert_eq!(bytes_of(reopened.messages()), bytes_of(&live));
    reopened
        .append_message(Message::assistant("Tests pass.").with_id("custom-id"))
        .unwrap();
    assert_eq!(Transcript::read(&path).unwrap().messages().len(), live.len() + 1);
}

fn conversation_ids(transcript: &Transcript) -> Vec<String> {
    transcript
        .entries()
        .iter()
        .filter(|e| matches!(e.record, Record::Message(_)))
        .map(|e| e.id.clone())
        .collect()
}

fn live_id_of(ids: &[String], index: usize) -> String {
    ids[index].clone()
}

#[test]
fn a_result_that_replay_would_not_rebuild_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    for message in conversation() {
        session.append_message(message).unwrap();
    }
    let before = file_bytes(&path);
    let mut bad = synthetic_result(session.messages(), 4, "S", &[]);
    bad.messages.remove(0); // dropped the sticky system prompt: not the contract
    let err = session.record_result(&bad).unwrap_err();
    assert!(matches!(err, SessionError::ResultMismatch { .. }), "{err}");
    let mut out_of_range = synthetic_result(session.messages(), -1, "", &[]);
    out_of_range
        .elisions
        .push(llm_compactor::compactor::Elision::new(99, "s"));
    assert!(matches!(
        session.record_result(&out_of_range),
        Err(SessionError::ResultMismatch { .. })
    ));
    assert_eq!(file_bytes(&path), before);
    assert_eq!(session.messages().len(), 7);
}

#[test]
fn unknown_ids_and_reused_ids_are_refused_at_append_time() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    session.append_message(Message::user("a").with_id("m1")).unwrap();
    let before = file_bytes(&path);
    let err = session.append_elision(vec![ElisionItem::new("nope", "s")]).unwrap_err();
    assert!(matches!(err, SessionError::Rejected { .. }), "{err}");
    let err = session
        .append_compaction({
            let mut record = CompactionRecord::new("nope", "s");
            record.dropped = 1;
            record.tokens_after = 1;
            record.tokens_before = 2;
            record
        })
        .unwrap_err();
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let err = session.append_message(Message::user("b").with_id("m1")).unwrap_err();
    assert!(err.to_string().contains("already used"), "{err}");
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn a_round_of_messages_is_one_append_the_same_bytes_as_one_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    let round = conversation();
    let stored = session.append_messages(round.clone()).unwrap().to_vec();
    assert_eq!(stored.len(), round.len());
    assert_eq!(stored[0].id.as_deref(), Some(id(2).as_str()));
    assert_eq!(bytes_of(&stored), bytes_of(session.messages()));

    let one_path = dir.path().join("one.jsonl");
    let mut one = Session::create(&one_path, fixed_options()).unwrap();
    for message in round {
        one.append_message(message).unwrap();
    }
    assert_eq!(file_bytes(&path), file_bytes(&one_path));
    assert_eq!(
        bytes_of(Transcript::read(&path).unwrap().messages()),
        bytes_of(session.messages())
    );
}

#[test]
fn a_round_with_a_reused_id_writes_none_of_its_messages() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    session.append_message(Message::user("a").with_id("m1")).unwrap();
    let before = file_bytes(&path);
    // Reused within the round, and reused from the transcript after a good message.
    for round in [
        vec![Message::user("b").with_id("x"), Message::user("c").with_id("x")],
        vec![Message::user("d"), Message::user("e").with_id("m1")],
    ] {
        let err = session.append_messages(round).unwrap_err();
        assert!(matches!(err, SessionError::Rejected { .. }), "{err}");
        assert!(err.to_string().contains("already used"), "{err}");
        assert_eq!(file_bytes(&path), before);
        assert_eq!(session.messages().len(), 1);
    }
    // A fresh id skips the ids the round gives its other messages.
    let next = id(3);
    let stored = session
        .append_messages(vec![Message::user("f").with_id(next.clone()), Message::user("g")])
        .unwrap();
    assert_eq!(stored[0].id.as_deref(), Some(next.as_str()));
    assert_eq!(stored[1].id.as_deref(), Some(id(4).as_str()));
    assert_eq!(Transcript::read(&path).unwrap().messages().len(), 3);
}

/// Writes a transcript, then replaces line `line` (1-based) with `replacement`.
fn corrupted(dir: &tempfile::TempDir, line: usize, replacement: &str) -> std::path::PathBuf {
    let (path, mut session) = new_session(dir);
    session.append_message(Message::user("a").with_id("m1")).unwrap();
    session.append_message(Message::tool("c", "big").with_id("m2")).unwrap();
    session.append_message(Message::assistant("b").with_id("m3")).unwrap();
    drop(session);
    let text = String::from_utf8(file_bytes(&path)).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[line - 1] = replacement.to_owned();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn assert_malformed_untouched(path: &std::path::Path, line: usize, needle: &str) {
    let before = file_bytes(path);
    for err in [
        Transcript::read(path).unwrap_err(),
        Session::open(path, fixed_options()).unwrap_err(),
        repair(path).unwrap_err(),
    ] {
        match &err {
            SessionError::Malformed {
                path: p,
                line: l,
                problem,
            } => {
                assert_eq!((p.as_path(), *l), (path, line), "{err}");
                assert!(problem.contains(needle), "{problem:?} lacks {needle:?}");
                assert!(err.to_string().starts_with(&format!("{}:{line}: ", path.display())));
            }
            other => panic!("expected Malformed, got {other}"),
        }
        assert_eq!(
            file_bytes(path),
            before,
            "the file must be left byte-for-byte untouched"
        );
    }
}

#[test]
fn bad_json_in_the_middle_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(&dir, 3, r#"{"id":"m2","payload":{"role":"tool""#);
    assert_malformed_untouched(&path, 3, "not valid JSON");
}

#[test]
fn an_unknown_id_in_a_compaction_or_elision_is_an_error_at_load() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"id":"c9","payload":{"fallback":false,"replaces_through_id":"ghost","summary":"s","tokens_after":1,"tokens_before":2,"usage":{}},"ts":"t","type":"compaction","v":1}"#;
    let path = corrupted(&dir, 4, line);
    assert_malformed_untouched(&path, 4, "\"ghost\"");

    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"id":"e9","payload":{"items":[{"id":"m1","stub":"ok"},{"id":"ghost","stub":"s"}]},"ts":"t","type":"elision","v":1}"#;
    let path = corrupted(&dir, 4, line);
    assert_malformed_untouched(&path, 4, "\"ghost\"");
}

#[test]
fn a_wrong_version_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(
        &dir,
        2,
        r#"{"id":"m1","payload":{"role":"user","content":"a"},"ts":"t","type":"message","v":2}"#,
    );
    assert_malformed_untouched(&path, 2, "version 2");
}

#[test]
fn a_missing_session_meta_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(
        &dir,
        1,
        r#"{"id":"m0","payload":{"role":"user","content":"a"},"ts":"t","type":"message","v":1}"#,
    );
    assert_malformed_untouched(&path, 1, "session-meta");

    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, b"").unwrap();
    assert_malformed_untouched(&empty, 1, "session-meta");
}

#[test]
fn a_torn_line_that_is_not_last_is_not_repaired() {
    // A line without its newline followed by more lines is a malformed middle line.
    let dir = tempfile::tempdir().unwrap();
    let path = corrupted(&dir, 3, r#"{"id":"m2","payload":{"role":"tool""#);
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"id":"m4","pay"#).unwrap();
    drop(file);
    assert_malformed_untouched(&path, 3, "not valid JSON");
}

#[test]
fn unknown_line_types_are_kept_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    session.append_message(Message::user("a")).unwrap();
    session.append_custom("x-note", json!({"text": "checkpoint"})).unwrap();
    session.append_message(Message::assistant("b")).unwrap();
    assert!(session.append_custom("message", json!({})).is_err());
    let transcript = Transcript::read(&path).unwrap();
    assert_eq!(transcript.messages().len(), 2);
    assert!(transcript.entries().iter().any(|e| matches!(
        &e.record,
        Record::Unknown { kind, payload } if kind == "x-note" && payload["text"] == "checkpoint"
    )));
}

#[test]
fn a_torn_final_line_is_reported_by_read_and_repaired_by_open() {
    let dir = tempfile::tempdir().unwrap();
    let (path, mut session) = new_session(&dir);
    for message in conversation() {
        session.append_message(message).unwrap();
    }
    let live = session.messages().to_vec();
    drop(session);
    let good = file_bytes(&path);
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(br#"{"id":"00000000-0000-4000-8000-0000000000ff","payload":{"role":"user","con"#)
        .unwrap();
    drop(file);

    // Reading tolerates and reports it, without touching the file.
    let torn_bytes = file_bytes(&path);
    let transcript = Transcript::read(&path).unwrap();
    let torn = transcript.torn_tail().unwrap().clone();
    assert_eq!((torn.line, torn.offset), (9, good.len() as u64));
    assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
    assert_eq!(file_bytes(&path), torn_bytes);

    // Opening repairs it atomically: the good prefix, same mode, and appending works.
    let (mut session, report) = Session::open(&path, fixed_options()).unwrap();
    assert_eq!(report.repaired, Some(torn));
    assert_eq!(file_bytes(&path), good);
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    session.append_message(Message::user("after").with_id("after")).unwrap();
    let again = Transcript::read(&path).unwrap();
    assert!(again.torn_tail().is_none());
    assert_eq!(again.messages().len(), live.len() + 1);
    // No temp file is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn repair_leaves_a_whole_file_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (path, session) = new_session(&dir);
    drop(session);
    let before = file_bytes(&path);
    assert_eq!(repair(&path).unwrap(), None);
    assert_eq!(file_bytes(&path), before);
}

#[test]
fn a_second_writer_gets_a_clear_lock_error() {
    let dir = tempfile::tempdir().unwrap();
    let (path, session) = new_session(&dir);
    let err = Session::open(&path, fixed_options()).unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    assert!(err.to_string().contains("locked by another writer"), "{err}");
    assert!(matches!(repair(&path), Err(SessionError::Locked { .. })));
    drop(session);
    let (_session, _) = Session::open(&path, fixed_options()).unwrap();
}

#[test]
fn compaction_keeps_sticky_messages_wherever_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let (_path, mut session) = new_session(&dir);
    let messages = vec![
        Message::system("sys"),
        Message::user("u1"),
        Message::user("pinned").sticky(),
        Message::assistant("a1"),
        Message::user("injected").at_depth(2),
        Message::assistant("a2"),
        Message::user("u3"),
    ];
    for message in messages {
        session.append_message(message).unwrap();
    }
    let result = synthetic_result(session.messages(), 4, "S", &[]);
    session.record_result(&result).unwrap();
    let texts: Vec<String> = session.messages().iter().map(Message::text).collect();
    assert_eq!(texts, ["sys", "pinned", "injected", "S", "a2", "u3"]);
}
