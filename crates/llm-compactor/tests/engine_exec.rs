//! The exec backend against real child processes (`sh -c` scripts).

use crate::engine_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use engine_support::conversation;
use llm_compactor::backend::ExecSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::summarize::{FailureClass, FailureKind, Summarizer, SummaryRequest};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use tokio_util::sync::CancellationToken;

fn request() -> SummaryRequest {
    SummaryRequest {
        system: "be brief".into(),
        transcript: "[user]\nhello\n".into(),
        max_output_tokens: 321,
        prefill: String::new(),
    }
}

#[tokio::test]
async fn stdout_is_the_summary_and_the_request_travels_in_env_and_stdin() {
    let s = ExecSummarizer::new(r#"printf '%s|%s|' "$COMPACTOR_SYSTEM_PROMPT" "$COMPACTOR_MAX_TOKENS"; cat"#);
    let reply = s.summarize(request(), &CancellationToken::new()).await.unwrap();
    assert_eq!(reply.text, "be brief|321|[user]\nhello");
    assert_eq!(s.name(), "exec");
}

#[tokio::test]
async fn missing_command_aborts() {
    let s = ExecSummarizer::new("definitely-not-a-command-xyz");
    let err = s.summarize(request(), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(err.kind, FailureKind::Unavailable);
    assert_eq!(err.class(), FailureClass::Abort);
    let err = ExecSummarizer::new("exit 126")
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.class(), FailureClass::Abort);
}

#[tokio::test]
async fn other_failures_are_retryable() {
    let err = ExecSummarizer::new("echo boom >&2; exit 3")
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.class().is_retryable());
    assert!(err.message.contains("exit status 3") && err.message.contains("boom"));
    let err = ExecSummarizer::new("cat >/dev/null; printf '  \\n'")
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::Empty);
    let err = ExecSummarizer::new("sleep 5")
        .with_timeout(Duration::from_millis(200))
        .summarize(request(), &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::Timeout);
    assert!(err.class().is_retryable());
}

#[tokio::test]
async fn cancel_kills_the_command() {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = ExecSummarizer::new("sleep 10")
        .summarize(request(), &cancel)
        .await
        .unwrap_err();
    assert_eq!(err.kind, FailureKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_compaction_through_a_real_command() {
    let s = Arc::new(ExecSummarizer::new(
        "cat >/dev/null; echo '## Goals'; echo 'fix the bug'",
    ));
    let config = CompactorConfig::builder(2000).keep_recent(3).build().unwrap();
    let c = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(s);
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(!r.fallback);
    assert!(r.summary.ends_with("## Goals\nfix the bug"));
    // An unavailable command: one attempt, then the trim.
    let c = Compactor::new(
        CompactorConfig::builder(2000).keep_recent(3).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_summarizer(Arc::new(ExecSummarizer::new("exit 127")));
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(r.fallback);
    assert_eq!(r.attempts.len(), 1);
}
