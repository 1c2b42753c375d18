//! The exec summarizer's limits against real child processes: the default timeout, the
//! process group killed on timeout and cancel (grandchildren included), a background
//! grandchild holding stdout that must not hang the call, and stdout/stderr caps.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use llm_compactor::backend::ExecSummarizer;
use llm_compactor::backend::exec::{DEFAULT_TIMEOUT, MIN_STDOUT_CAP, STDERR_KEEP_BYTES};
use llm_compactor::summarize::{FailureKind, Summarizer, SummaryRequest};
use tokio_util::sync::CancellationToken;

fn request() -> SummaryRequest {
    SummaryRequest {
        system: "be brief".into(),
        transcript: "[user]\nhello\n".into(),
        max_output_tokens: 100,
        prefill: String::new(),
    }
}

/// True while `pid` is a live process (a zombie, killed and waiting for its reaper, is
/// not alive).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
    }
}

/// Waits (bounded) for `pid` to die: SIGKILL delivery is asynchronous.
fn dies(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn pid_in(path: &Path) -> u32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("ready");
    let status = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(status.success());
    path
}

/// Blocks until the command writes its readiness line into the fifo.
async fn ready(fifo: PathBuf) {
    tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap())
        .await
        .unwrap();
}

#[test]
fn the_default_timeout_is_300_seconds() {
    assert_eq!(DEFAULT_TIMEOUT, Duration::from_secs(300));
    assert_eq!(ExecSummarizer::new("true").timeout(), DEFAULT_TIMEOUT);
    assert_eq!(
        ExecSummarizer::new("true")
            .with_timeout(Duration::from_secs(7))
            .timeout(),
        Duration::from_secs(7)
    );
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_hang_the_call_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild");
    // The background sleep inherits stdout: waiting for EOF would take 10 minutes.
    let command = format!(
        "sleep 600 & echo $! > '{}'; echo '## Goals'; echo 'ship it'",
        pidfile.display()
    );
    let summarizer = ExecSummarizer::new(command);
    let reply = tokio::time::timeout(
        Duration::from_secs(60),
        summarizer.summarize(request(), &CancellationToken::new()),
    )
    .await
    .expect("the call waited for the grandchild")
    .unwrap();
    assert_eq!(reply.text, "## Goals\nship it");
    let grandchild = pid_in(&pidfile);
    assert!(dies(grandchild), "the grandchild {grandchild} outlived the call");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild");
    let command = format!("sleep 600 & echo $! > '{}'; wait", pidfile.display());
    let summarizer = ExecSummarizer::new(command).with_timeout(Duration::from_millis(500));
    let error = summarizer
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Timeout, "{error}");
    let grandchild = pid_in(&pidfile);
    assert!(dies(grandchild), "the grandchild {grandchild} survived the timeout");
}

#[tokio::test]
async fn a_cancel_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild");
    let fifo = fifo(dir.path());
    let command = format!(
        "sleep 600 & echo $! > '{}'; echo ready > '{}'; wait",
        pidfile.display(),
        fifo.display()
    );
    let summarizer = ExecSummarizer::new(command);
    let cancel = CancellationToken::new();
    let call = summarizer.summarize(request(), &cancel);
    let trigger = async {
        ready(fifo).await;
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(call, trigger);
    assert_eq!(outcome.unwrap_err().kind, FailureKind::Cancelled);
    let grandchild = pid_in(&pidfile);
    assert!(dies(grandchild), "the grandchild {grandchild} survived the cancel");
}

#[tokio::test]
async fn endless_stdout_is_capped_and_fails_the_call() {
    // `yes` never stops: without a cap this would fill memory.
    let summarizer = ExecSummarizer::new("yes 'a long line of summary text'");
    let error = summarizer
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Parse, "{error}");
    assert!(error.message.contains(&MIN_STDOUT_CAP.to_string()), "{}", error.message);
}

#[tokio::test]
async fn output_just_under_the_cap_is_a_summary() {
    let command = format!("head -c {} /dev/zero | tr '\\0' x", MIN_STDOUT_CAP);
    let reply = ExecSummarizer::new(command)
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(reply.text.len(), MIN_STDOUT_CAP);
}

#[tokio::test]
async fn endless_stderr_is_drained_and_only_its_tail_kept() {
    let command = format!(
        "head -c {} /dev/zero | tr '\\0' e >&2; echo ' the real reason' >&2; exit 3",
        STDERR_KEEP_BYTES * 40
    );
    let error = ExecSummarizer::new(command)
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(error.kind, FailureKind::Other);
    assert!(error.message.ends_with("the real reason"), "{}", error.message);
    assert!(error.message.len() < 1_000, "{} bytes", error.message.len());
}
