//! SIGTERM and SIGINT during a pass, sent to the real binary while its exec summarizer
//! is blocked (no sleeps: the summarizer command signals readiness through a fifo the
//! test reads): `compact` writes the hard-trimmed result and exits 128 + the signal;
//! `session compact` appends it (`--on-cancel trim`, the default) or nothing
//! (`--on-cancel abort`); the summarizer command is killed either way.
#![cfg(unix)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use support::{bin, conversation, write_json};

const BASE: &[&str] = &["--counter", "heuristic", "--budget", "2000", "--keep-recent", "3"];

fn mkfifo(dir: &Path) -> PathBuf {
    let path = dir.join("ready");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success()
    );
    path
}

/// A summarizer command that records its pid, says it is ready, then blocks.
fn blocking_command(dir: &Path, fifo: &Path) -> String {
    format!(
        "echo $$ > '{}'; echo ready > '{}'; exec sleep 600",
        dir.join("summarizer.pid").display(),
        fifo.display()
    )
}

fn spawn(args: &[&str]) -> Child {
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits until the summarizer is running (it opens the fifo), then signals the binary.
fn signal_when_ready(child: &Child, fifo: &Path, signal: &str) {
    let ready = std::fs::read_to_string(fifo).unwrap();
    assert_eq!(ready.trim(), "ready");
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => !matches!(
            stat.rsplit(')').next().and_then(|r| r.split_whitespace().next()),
            Some("Z" | "X")
        ),
    }
}

/// The summarizer command is gone (bounded wait: SIGKILL delivery is asynchronous).
fn summarizer_killed(dir: &Path) -> bool {
    let pid: u32 = std::fs::read_to_string(dir.join("summarizer.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn compact_interrupted(signal: &str) -> (Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let fifo = mkfifo(dir.path());
    let command = blocking_command(dir.path(), &fifo);
    let mut args = vec![
        "compact",
        input.to_str().unwrap(),
        "--json",
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        &command,
    ];
    args.extend(BASE);
    let child = spawn(&args);
    signal_when_ready(&child, &fifo, signal);
    let out = child.wait_with_output().unwrap();
    (out, dir)
}

#[test]
fn sigterm_writes_the_trimmed_result_and_exits_143() {
    let (out, dir) = compact_interrupted("TERM");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON result on stdout");
    assert_eq!(result["fallback"], true);
    assert!(result["messages"].as_array().unwrap().len() < 24);
    assert!(stderr.contains("SIGTERM"), "{stderr}");
    assert!(
        summarizer_killed(dir.path()),
        "the summarizer command outlived the pass"
    );
}

#[test]
fn sigint_writes_the_trimmed_result_and_exits_130() {
    let (out, dir) = compact_interrupted("INT");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON result on stdout");
    assert_eq!(result["fallback"], true);
    assert!(summarizer_killed(dir.path()));
}

fn session_interrupted(on_cancel: Option<&str>) -> (Output, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let session = dir.path().join("run.jsonl");
    let imported = bin()
        .args([
            "session",
            "import",
            input.to_str().unwrap(),
            "-o",
            session.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(imported.status.success());
    let before = std::fs::read(&session).unwrap();
    let fifo = mkfifo(dir.path());
    let command = blocking_command(dir.path(), &fifo);
    let mut args = vec![
        "session",
        "compact",
        session.to_str().unwrap(),
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        &command,
    ];
    if let Some(mode) = on_cancel {
        args.extend(["--on-cancel", mode]);
    }
    args.extend(BASE);
    let child = spawn(&args);
    signal_when_ready(&child, &fifo, "TERM");
    let out = child.wait_with_output().unwrap();
    assert!(summarizer_killed(dir.path()));
    let after = std::fs::read(&session).unwrap();
    (out, before, after)
}

#[test]
fn session_compact_appends_the_trimmed_result_by_default() {
    let (out, before, after) = session_interrupted(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(after.len() > before.len() && after.starts_with(&before), "{stderr}");
    let appended = String::from_utf8_lossy(&after[before.len()..]);
    assert!(appended.contains("\"fallback\":true"), "{appended}");
    assert!(stderr.contains("appended"), "{stderr}");
}

#[test]
fn session_compact_on_cancel_abort_appends_nothing() {
    let (out, before, after) = session_interrupted(Some("abort"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert_eq!(after, before, "the transcript changed");
    assert!(stderr.contains("nothing appended"), "{stderr}");
}
