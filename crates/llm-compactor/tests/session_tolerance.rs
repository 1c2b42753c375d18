//! The transcript's tolerance rules (issue 10, items 1, 2, 5, 21): a complete final line
//! without a newline is kept, an unparseable final line is torn (with or without a
//! newline) and cut off, blank lines are ignored, anything else malformed is fatal; a
//! repair through a symbolic link repairs the real file; stale repair copies are swept;
//! empty elisions and blank line types are refused.

use crate::session_support;

use std::io::Write;
use std::path::{Path, PathBuf};

use llm_compactor::message::Message;
use llm_compactor::session::{ElisionItem, Session, SessionError, Transcript, repair};
use serde_json::json;
use session_support::{file_bytes, fixed_options};

/// A closed session with three messages; returns its path and bytes.
fn written(dir: &tempfile::TempDir) -> (PathBuf, Vec<u8>) {
    let path = dir.path().join("s.jsonl");
    let mut session = Session::create(&path, fixed_options()).unwrap();
    session.append_message(Message::user("one")).unwrap();
    session.append_message(Message::assistant("two")).unwrap();
    session.append_message(Message::user("three")).unwrap();
    drop(session);
    let bytes = file_bytes(&path);
    (path, bytes)
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::text).collect()
}

fn without_final_newline(bytes: &[u8]) -> Vec<u8> {
    assert_eq!(bytes.last(), Some(&b'\n'));
    bytes[..bytes.len() - 1].to_vec()
}

fn crlf(bytes: &[u8]) -> Vec<u8> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .replace('\n', "\r\n")
        .into_bytes()
}

#[test]
fn a_complete_final_line_without_a_newline_is_kept_and_appending_adds_the_newline() {
    for style in ["lf", "crlf"] {
        let dir = tempfile::tempdir().unwrap();
        let (path, good) = written(&dir);
        let good = if style == "crlf" { crlf(&good) } else { good };
        let bytes = without_final_newline(&good);
        std::fs::write(&path, &bytes).unwrap();

        let transcript = Transcript::read(&path).unwrap();
        assert!(transcript.torn_tail().is_none(), "{style}");
        assert_eq!(texts(transcript.messages()), ["one", "two", "three"], "{style}");
        assert!(transcript.needs_newline(), "{style}");
        assert_eq!(repair(&path).unwrap(), None, "{style}");
        assert_eq!(file_bytes(&path), bytes, "{style}: repair leaves a whole file alone");

        let (mut session, report) = Session::open(&path, fixed_options()).unwrap();
        assert_eq!(report.repaired, None, "{style}");
        assert_eq!(file_bytes(&path), bytes, "{style}: open changes nothing by itself");
        session
            .append_message(Message::assistant("four").with_id("four"))
            .unwrap();
        drop(session);
        let after = file_bytes(&path);
        assert!(after.starts_with(&bytes), "{style}");
        assert_eq!(after[bytes.len()], b'\n', "{style}: the newline comes first");
        let again = Transcript::read(&path).unwrap();
        assert_eq!(texts(again.messages()), ["one", "two", "three", "four"], "{style}");
        assert!(!again.needs_newline(), "{style}");
    }
}

#[test]
fn an_unparseable_final_line_is_torn_with_or_without_a_newline_and_cut_off() {
    for (style, tail) in [
        ("no newline", &b"{\"id\":\"x\",\"payload\":{\"role\":\"us"[..]),
        ("newline", &b"{\"id\":\"x\",\"payload\":{\"role\":\"us\n"[..]),
        ("newline and blanks", &b"{\"id\":\"x\",\"pay\n\n  \n"[..]),
        ("cut inside UTF-8", &b"{\"id\":\"x\",\"payload\":\"\xc3"[..]),
    ] {
        for crlf_file in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let (path, good) = written(&dir);
            let good = if crlf_file { crlf(&good) } else { good };
            let mut bytes = good.clone();
            bytes.extend_from_slice(tail);
            std::fs::write(&path, &bytes).unwrap();

            let transcript = Transcript::read(&path).unwrap();
            let torn = transcript
                .torn_tail()
                .unwrap_or_else(|| panic!("{style}: torn"))
                .clone();
            assert_eq!(torn.offset, good.len() as u64, "{style}");
            assert_eq!(torn.bytes, tail.len() as u64, "{style}");
            assert_eq!(texts(transcript.messages()), ["one", "two", "three"], "{style}");

            let (mut session, report) = Session::open(&path, fixed_options()).unwrap();
            assert_eq!(report.repaired, Some(torn), "{style}");
            assert_eq!(file_bytes(&path), good, "{style}: the torn line is cut off the file");
            session.append_message(Message::user("four").with_id("four")).unwrap();
            drop(session);
            assert_eq!(texts(Transcript::read(&path).unwrap().messages()).len(), 4, "{style}");
        }
    }
}

#[test]
fn blank_lines_are_ignored_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = written(&dir);
    let text = String::from_utf8(good).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let spaced = format!("\n{}\n\n  \n{}\n\t\n{}\n{}\n\n", lines[0], lines[1], lines[2], lines[3]);
    std::fs::write(&path, &spaced).unwrap();
    let transcript = Transcript::read(&path).unwrap();
    assert!(transcript.torn_tail().is_none());
    assert_eq!(texts(transcript.messages()), ["one", "two", "three"]);
    // Line numbers stay physical.
    assert_eq!(transcript.entries()[1].line, 5);
}

#[test]
fn a_malformed_line_before_the_final_one_is_fatal_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = written(&dir);
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[2] = "{\"id\":\"broken".to_owned();
    let bytes = format!("{}\n", lines.join("\n"));
    std::fs::write(&path, &bytes).unwrap();
    let err = Transcript::read(&path).unwrap_err();
    assert!(matches!(err, SessionError::Malformed { line: 3, .. }), "{err}");
    assert!(err.to_string().contains("only a torn final line is tolerated"), "{err}");
    assert!(Session::open(&path, fixed_options()).is_err());
    assert!(repair(&path).is_err());
    assert_eq!(file_bytes(&path), bytes.as_bytes(), "left untouched");
}

#[test]
fn a_complete_final_line_that_is_not_an_envelope_is_an_error_not_cut() {
    // Complete JSON is never a partial write: cutting it would lose data.
    let dir = tempfile::tempdir().unwrap();
    let (path, mut bytes) = written(&dir);
    bytes.extend_from_slice(br#"{"id":"m9","payload":{},"ts":"t","type":"message","v":2}"#);
    std::fs::write(&path, &bytes).unwrap();
    let err = Session::open(&path, fixed_options()).unwrap_err();
    assert!(matches!(err, SessionError::Malformed { line: 5, .. }), "{err}");
    assert_eq!(file_bytes(&path), bytes);
}

fn symlinked(dir: &tempfile::TempDir) -> (PathBuf, PathBuf, Vec<u8>) {
    let (real, good) = written(dir);
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&real).unwrap();
    file.write_all(b"{\"id\":\"torn").unwrap();
    (real, link, good)
}

fn assert_still_one_session(real: &Path, link: &Path, good: &[u8]) {
    assert!(
        std::fs::symlink_metadata(link).unwrap().file_type().is_symlink(),
        "the link is kept"
    );
    assert_eq!(std::fs::read_link(link).unwrap(), real);
    assert_eq!(file_bytes(real), good, "the real file is repaired");
}

#[test]
fn repair_through_a_symlink_repairs_the_real_file_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let (real, link, good) = symlinked(&dir);
    assert!(repair(&link).unwrap().is_some());
    assert_still_one_session(&real, &link, &good);

    let dir = tempfile::tempdir().unwrap();
    let (real, link, good) = symlinked(&dir);
    let (mut session, report) = Session::open(&link, fixed_options()).unwrap();
    assert!(report.repaired.is_some());
    assert_still_one_session(&real, &link, &good);
    session.append_message(Message::user("four").with_id("four")).unwrap();
    drop(session);
    // The append went to the one session, seen the same through both names.
    assert_eq!(Transcript::read(&real).unwrap().messages().len(), 4);
    assert_eq!(file_bytes(&real), file_bytes(&link));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temp file left");
}

#[test]
fn stale_repair_copies_are_swept_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = written(&dir);
    // A repair copy of a process that is gone (PID beyond pid_max), and one of a live
    // process (our parent), with content that must not be trusted.
    let dead = dir.path().join(".s.jsonl.repair-4294967");
    let live = dir
        .path()
        .join(format!(".s.jsonl.repair-{}", std::os::unix::process::parent_id()));
    std::fs::write(&dead, b"garbage").unwrap();
    std::fs::write(&live, b"garbage").unwrap();
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(b"{\"torn").unwrap();
    drop(file);
    assert!(repair(&path).unwrap().is_some());
    assert_eq!(file_bytes(&path), good);
    assert!(!dead.exists(), "the stale copy is swept");
    assert!(live.exists(), "a live process's copy is kept");
}

#[test]
fn an_elision_that_stubs_nothing_and_a_blank_custom_type_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = written(&dir);
    let (mut session, _) = Session::open(&path, fixed_options()).unwrap();
    let before = file_bytes(&path);
    let err = session.append_elision(Vec::new()).unwrap_err();
    assert!(err.to_string().contains("at least one"), "{err}");
    for kind in ["", "  "] {
        let err = session.append_custom(kind, json!({})).unwrap_err();
        assert!(err.to_string().contains("blank"), "{err}");
    }
    assert_eq!(file_bytes(&path), before, "nothing written");
    let id = session.messages()[1].id.clone().unwrap();
    session.append_elision(vec![ElisionItem::new(id, "[stub]")]).unwrap();
    drop(session);

    // And at load.
    for line in [
        r#"{"id":"e1","payload":{"items":[]},"ts":"t","type":"elision","v":1}"#,
        r#"{"id":"e2","payload":{},"ts":"t","type":" ","v":1}"#,
    ] {
        let mut bytes = before.clone();
        bytes.extend_from_slice(line.as_bytes());
        bytes.extend_from_slice(b"\n");
        std::fs::write(&path, &bytes).unwrap();
        let err = Transcript::read(&path).unwrap_err();
        assert!(matches!(err, SessionError::Malformed { line: 5, .. }), "{err}");
    }
}
