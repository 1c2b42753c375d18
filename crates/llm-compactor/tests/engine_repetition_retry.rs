//! A summary the grounding gate rejects as mostly repetition is a failed attempt,
//! retried per the summarizer retry policy (issue 11): a real compactor with a real
//! HTTP backend against a scripted OpenAI-compatible server on 127.0.0.1, answering
//! first with a looping summary, then with a good one. Only when every attempt loops
//! does the pass fall back to the ledger (before the hard trim).
//!
//! Waits between attempts go through a sleeper that records them and returns at once.

#![cfg(feature = "http")]

use crate::http_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use http_support::{Server, backend, success};
use llm_compactor::backend::http::Protocol;
use llm_compactor::compactor::{AttemptKind, AttemptOutcome, Sleeper};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::plan::ledger::{LEDGER_HEADING, LedgerPolicy};
use llm_compactor::summarize::FailureClass;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, Message};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct RecordingSleeper {
    waits: Mutex<Vec<Duration>>,
}

#[async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, duration: Duration, cancel: &CancellationToken) -> bool {
        self.waits.lock().unwrap().push(duration);
        !cancel.is_cancelled()
    }
}

const LOOPING: &str = "The tax class multiplier is calculated using the formula: 10 * (tax_class / unit_price). ";
const GOOD: &str = "## Goals\nFix the red build.\n\n## Progress\nThe build log was read; the failure is still open.";

fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::system("You are a careful coding agent.")];
    for i in 0..30 {
        messages.push(Message::user(format!(
            "step {i}: {}",
            "please look at the build log ".repeat(8)
        )));
        messages.push(Message::assistant(format!(
            "done {i}: {}",
            "the build is still red because ".repeat(8)
        )));
    }
    messages
}

async fn compact(server: &Server, ledger: bool) -> (CompactionResult, Vec<Duration>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let config = CompactorConfig::builder(4_000).keep_recent(4).build().unwrap();
    let mut compactor = Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(Arc::new(backend(Protocol::OpenAi, &server.base_url(Protocol::OpenAi))))
        .with_sleeper(sleeper.clone());
    if ledger {
        compactor = compactor.with_ledger(LedgerPolicy::default());
    }
    let result = compactor
        .compact(&conversation(), CompactOptions::default())
        .await
        .unwrap();
    let waits = sleeper.waits.lock().unwrap().clone();
    (result, waits)
}

#[tokio::test]
async fn a_looping_summary_is_a_failed_attempt_and_the_retry_is_taken() {
    let server = Server::start(|n| {
        success(
            Protocol::OpenAi,
            &if n == 0 { LOOPING.repeat(12) } else { GOOD.to_owned() },
            false,
        )
    })
    .await;
    let (result, waits) = compact(&server, true).await;
    assert_eq!(server.count(), 2, "one retry after the looping reply");
    assert_eq!(waits.len(), 1, "the retry waits its backoff like any failed call");
    assert!(!result.fallback);
    assert!(result.summary.contains("Fix the red build."), "{}", result.summary);
    assert!(!result.summary.contains("tax class"), "{}", result.summary);
    assert!(result.summary.contains(LEDGER_HEADING), "the ledger is appended");
    let first = &result.attempts[0];
    assert_eq!(
        (first.kind, first.outcome, first.class),
        (
            AttemptKind::Summary,
            AttemptOutcome::Failed,
            Some(FailureClass::Response)
        )
    );
    let note = first.note.as_deref().unwrap();
    assert!(note.contains("Degenerate") && note.contains("repetition"), "{note}");
    assert_eq!(first.usage.output_tokens, 80, "the looping call's usage is counted");
    assert_eq!(result.attempts[1].outcome, AttemptOutcome::Accepted);
    assert_eq!(result.attempts.len(), 2);
    assert_eq!(result.usage.output_tokens, 160);
}

#[tokio::test]
async fn only_when_every_attempt_loops_does_the_ledger_stand_in() {
    let server = Server::start(|_| success(Protocol::OpenAi, &LOOPING.repeat(12), false)).await;
    let (result, _) = compact(&server, true).await;
    let max = CompactorConfig::builder(4_000).build().unwrap().max_attempts as usize;
    assert_eq!(server.count(), max, "retried up to max_attempts");
    assert!(!result.fallback, "the ledger comes before the hard trim");
    assert!(!result.summary.contains("tax class"));
    let failed: Vec<_> = result
        .attempts
        .iter()
        .filter(|a| a.outcome == AttemptOutcome::Failed)
        .collect();
    assert_eq!(failed.len(), max);
    assert!(failed.iter().all(|a| a.note.as_deref().unwrap().contains("repetition")));
    let last = result.attempts.last().unwrap();
    assert_eq!(
        (last.kind, last.outcome),
        (AttemptKind::Ledger, AttemptOutcome::Accepted)
    );
}

#[tokio::test]
async fn without_the_gate_the_reply_is_not_judged() {
    // `--ledger-max-tokens 0`: no ledger, no gate; the first reply is taken as it is.
    let server = Server::start(|_| success(Protocol::OpenAi, &LOOPING.repeat(12), false)).await;
    let (result, _) = compact(&server, false).await;
    assert_eq!(server.count(), 1);
    assert!(result.summary.contains("tax class"));
}
