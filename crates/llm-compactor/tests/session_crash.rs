//! Crash safety with real processes: a child appending thousands of lines is killed with
//! SIGKILL at random moments; every line it completed is there afterwards and a torn tail
//! is repaired. And a second process cannot append while the first holds the lock.
//!
//! The child is this very test binary, re-executed to run the ignored `child` test with
//! an environment variable saying what to do: no separate helper binary to build, and
//! the child runs exactly the library code under test.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use llm_compactor::message::Message;
use llm_compactor::session::{Durability, ElisionItem, Record, Session, SessionError, SessionOptions, Transcript};
use rand::Rng;

const CHILD_PATH: &str = "LLM_COMPACTOR_CRASH_CHILD_PATH";
const CHILD_MODE: &str = "LLM_COMPACTOR_CRASH_CHILD_MODE";

/// Operation `k` of the child's deterministic script: every tenth op elides the previous
/// message, every other op appends a message (every thirteenth a large one, so that a
/// kill can land in the middle of a long write).
enum Op {
    Message(Box<Message>),
    Elide(String),
}

fn op(k: usize) -> Op {
    if k % 10 == 9 {
        return Op::Elide(format!("m-{}", k - 1));
    }
    let size = if k % 13 == 0 {
        65_536 + (k * 7919) % 196_608
    } else {
        40 + (k * 131) % 2_000
    };
    let body: String = std::iter::repeat_n(char::from(b'a' + (k % 26) as u8), size).collect();
    Op::Message(Box::new(
        Message::tool(format!("call-{k}"), format!("op {k}: {body}")).with_id(format!("m-{k}")),
    ))
}

fn stub(k: usize) -> String {
    format!("[elided by the harness: op {k}]")
}

/// The conversation after ops `0..n`.
fn model(n: usize) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    for k in 0..n {
        match op(k) {
            Op::Message(m) => messages.push(*m),
            Op::Elide(id) => {
                if let Some(m) = messages.iter_mut().find(|m| m.id.as_deref() == Some(id.as_str())) {
                    m.content = llm_compactor::message::Content::Text(stub(k));
                }
            }
        }
    }
    messages
}

fn ops_in(transcript: &Transcript) -> usize {
    transcript
        .entries()
        .iter()
        .filter(|e| matches!(e.record, Record::Message(_) | Record::Elision(_)))
        .count()
}

#[test]
#[ignore = "helper: run by the other tests of this file as a child process"]
fn child() {
    let (Some(path), Ok(mode)) = (std::env::var_os(CHILD_PATH), std::env::var(CHILD_MODE)) else {
        return;
    };
    let options = SessionOptions::new().durability(Durability::Never);
    let (mut session, _) = Session::open(PathBuf::from(path), options).expect("child opens the session");
    let mut out = std::io::stdout().lock();
    if mode == "hold" {
        writeln!(out, "ack locked").unwrap();
        out.flush().unwrap();
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line); // until the parent closes stdin
        return;
    }
    let transcript = Transcript::read(session.path()).expect("child reads");
    let start = ops_in(&transcript);
    for k in start.. {
        match op(k) {
            Op::Message(m) => {
                session.append_message(*m).expect("append");
            }
            Op::Elide(id) => {
                session
                    .append_elision(vec![ElisionItem::new(id, stub(k))])
                    .expect("elide");
            }
        }
        writeln!(out, "ack {}", k + 1).unwrap();
        out.flush().unwrap();
    }
}

fn spawn_child(path: &Path, mode: &str) -> (Child, BufReader<ChildStdout>) {
    spawn_child_limited(path, mode, None)
}

/// The child, optionally under a file size limit (`ulimit -f`, in 512-byte blocks): the
/// kernel then cuts the write that crosses it short and kills the child with SIGXFSZ on
/// the retry, which is a real partial write.
fn spawn_child_limited(path: &Path, mode: &str, limit_blocks: Option<u64>) -> (Child, BufReader<ChildStdout>) {
    let exe = std::env::current_exe().unwrap();
    let args = [
        "session_crash::child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ];
    let mut command = match limit_blocks {
        None => Command::new(&exe),
        Some(blocks) => {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -f {blocks} && exec \"$0\" \"$@\""))
                .arg(&exe);
            sh
        }
    };
    let mut child = command
        .args(args)
        .env(CHILD_PATH, path)
        .env(CHILD_MODE, mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// The next `ack N` of the child, or `None` at end of output.
fn next_ack(stdout: &mut BufReader<ChildStdout>) -> Option<String> {
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(ack) = line.trim_end().strip_prefix("ack ") {
            return Some(ack.to_owned());
        }
    }
}

#[test]
fn sigkilled_writers_lose_nothing_they_completed_and_torn_tails_are_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.jsonl");
    drop(Session::create(&path, SessionOptions::new()).unwrap());
    let mut rng = rand::rng();
    let mut torn_tails = 0;
    let iterations = 5;
    for _ in 0..iterations {
        let (mut child, mut stdout) = spawn_child(&path, "write");
        let kill_after = rng.random_range(150..700);
        let mut acked = 0usize;
        for _ in 0..kill_after {
            match next_ack(&mut stdout) {
                Some(n) => acked = n.parse().unwrap(),
                None => panic!("the child ended early: {:?}", child.wait()),
            }
        }
        child.kill().unwrap(); // SIGKILL, while it is still writing
        child.wait().unwrap();
        // Acks that were printed before the kill landed.
        while let Some(n) = next_ack(&mut stdout) {
            acked = n.parse().unwrap();
        }

        let transcript = Transcript::read(&path).expect("only the tail may be torn");
        let complete = ops_in(&transcript);
        assert!(
            complete == acked || complete == acked + 1,
            "{complete} complete ops on disk, {acked} acknowledged"
        );
        assert_eq!(transcript.messages(), &model(complete)[..]);
        if transcript.torn_tail().is_some() {
            torn_tails += 1;
        }
    }
    // The next writer repairs whatever the last kill left, and nothing is lost.
    let before = Transcript::read(&path).unwrap();
    let (session, report) = Session::open(&path, SessionOptions::new()).unwrap();
    assert_eq!(report.repaired.as_ref(), before.torn_tail());
    assert_eq!(session.messages(), before.messages());
    drop(session);
    let after = Transcript::read(&path).unwrap();
    assert!(after.torn_tail().is_none());
    assert_eq!(after.entries().len(), before.entries().len());
    assert!(ops_in(&after) > 600, "thousands of lines over the iterations");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temp file left behind"
    );
    eprintln!(
        "crash test: {iterations} kills, {} ops on disk, {torn_tails} kills left a torn tail",
        ops_in(&after)
    );
}

#[test]
fn a_second_process_cannot_append_while_the_first_holds_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.jsonl");
    drop(Session::create(&path, SessionOptions::new()).unwrap());
    let (mut child, mut stdout) = spawn_child(&path, "hold");
    assert_eq!(next_ack(&mut stdout).as_deref(), Some("locked"));
    let before = std::fs::read(&path).unwrap();
    let err = Session::open(&path, SessionOptions::new()).unwrap_err();
    assert!(matches!(err, SessionError::Locked { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    drop(child.stdin.take()); // let the child finish
    assert!(child.wait().unwrap().success());
    let (mut session, _) = Session::open(&path, SessionOptions::new()).unwrap();
    session.append_message(Message::user("mine now")).unwrap();
}

#[test]
fn a_write_cut_short_by_the_kernel_leaves_a_torn_tail_that_open_repairs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("limited.jsonl");
    drop(Session::create(&path, SessionOptions::new()).unwrap());
    let mut torn_tails = 0;
    for round in 1..=3u64 {
        let len = std::fs::metadata(&path).unwrap().len();
        // A limit somewhere ahead; ops average a few KB, so it lands inside a line.
        let limit = len.div_ceil(512) + 600 * round + 7;
        let (mut child, mut stdout) = spawn_child_limited(&path, "write", Some(limit));
        let mut acked = 0usize;
        while let Some(n) = next_ack(&mut stdout) {
            acked = n.parse().unwrap();
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "the child must die at the limit");
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            limit * 512,
            "the kernel wrote up to the limit"
        );

        let transcript = Transcript::read(&path).expect("only the tail may be torn");
        let complete = ops_in(&transcript);
        assert_eq!(complete, acked, "every acknowledged op is complete, and nothing more");
        assert_eq!(transcript.messages(), &model(complete)[..]);
        let ends_whole = std::fs::read(&path).unwrap().ends_with(b"\n");
        assert_eq!(transcript.torn_tail().is_some(), !ends_whole);
        if let Some(torn) = transcript.torn_tail() {
            torn_tails += 1;
            let (session, report) = Session::open(&path, SessionOptions::new()).unwrap();
            assert_eq!(report.repaired.as_ref(), Some(torn));
            assert_eq!(std::fs::metadata(&path).unwrap().len(), torn.offset);
            assert_eq!(session.messages(), transcript.messages());
        }
    }
    assert!(
        torn_tails >= 2,
        "a limit inside a line leaves a torn tail ({torn_tails} of 3)"
    );
}
