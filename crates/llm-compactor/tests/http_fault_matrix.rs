//! The engine-level fault matrix: a real [`Compactor`] with a real HTTP backend against a
//! server on 127.0.0.1, for both protocols. Each case asserts how many requests the
//! server saw, the classes recorded in `result.attempts`, and how the pass ended (an
//! accepted summary, or the hard trim with `fallback: true`).
//!
//! Waits between attempts go through a recording [`Sleeper`] that returns at once, so the
//! suite is fast and the backoff (Retry-After floors included) is asserted exactly; the
//! cancel-during-backoff case uses the real tokio timer.

#![cfg(feature = "http")]

use crate::http_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use http_support::{
    Canned, Fault, PROTOCOLS, RawServer, Server, backend, dead_addr, error, httpdate_in, short, success,
};
use llm_compactor::backend::http::{HttpBackend, Protocol};
use llm_compactor::compactor::{AttemptKind, AttemptOutcome, Sleeper, TokioSleeper};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::summarize::FailureClass;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, Message};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Records every wait and returns at once (or false when already cancelled).
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

/// The real timer, announcing each wait as it begins.
#[derive(Default)]
struct AnnouncingSleeper {
    started: Notify,
}

#[async_trait]
impl Sleeper for AnnouncingSleeper {
    async fn sleep(&self, duration: Duration, cancel: &CancellationToken) -> bool {
        self.started.notify_one();
        TokioSleeper.sleep(duration, cancel).await
    }
}

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

fn compactor(backend: HttpBackend, sleeper: Arc<dyn Sleeper>) -> Compactor {
    let config = CompactorConfig::builder(4_000).keep_recent(4).build().unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(Arc::new(backend))
        .with_sleeper(sleeper)
}

/// Compacts [`conversation`], cancelling the pass once `signal` completes; gives the
/// result and how long the pass ran on after the cancel.
async fn compact_cancelled_when(
    compactor: &Compactor,
    signal: impl Future<Output = ()> + Send + 'static,
) -> (CompactionResult, Duration) {
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let cancelled_at = tokio::spawn(async move {
        signal.await;
        trigger.cancel();
        Instant::now()
    });
    let options = CompactOptions::new().with_cancel(cancel);
    let result = compactor.compact(&conversation(), options).await.unwrap();
    (result, cancelled_at.await.unwrap().elapsed())
}

async fn run(protocol: Protocol, base: &str) -> (CompactionResult, Vec<Duration>) {
    run_with(backend(protocol, base)).await
}

async fn run_with(backend: HttpBackend) -> (CompactionResult, Vec<Duration>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let compactor = compactor(backend, sleeper.clone());
    let messages = conversation();
    assert!(compactor.needs_compaction(&messages));
    let result = compactor.compact(&messages, CompactOptions::default()).await.unwrap();
    let waits = sleeper.waits.lock().unwrap().clone();
    (result, waits)
}

fn classes(result: &CompactionResult) -> Vec<Option<FailureClass>> {
    result.attempts.iter().map(|attempt| attempt.class).collect()
}

fn assert_trimmed(result: &CompactionResult) {
    assert!(result.fallback, "expected the hard trim: {:?}", result.attempts);
    assert!(result.tokens_after < result.tokens_before);
    assert_eq!(result.messages[0], conversation()[0], "the system prompt survives");
}

#[tokio::test]
async fn success_is_one_request_and_an_accepted_summary() {
    for protocol in PROTOCOLS {
        let server = Server::always(success(protocol, "The user is fixing a red build.", false)).await;
        let (result, waits) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 1);
        assert!(!result.fallback);
        assert!(
            result.summary.contains("The user is fixing a red build."),
            "{}",
            result.summary
        );
        assert_eq!(result.attempts.len(), 1);
        assert_eq!(result.attempts[0].outcome, AttemptOutcome::Accepted);
        assert_eq!(result.usage.output_tokens, 80);
        assert!(waits.is_empty());
    }
}

#[tokio::test]
async fn a_truncated_summary_is_retried_with_a_doubled_budget() {
    for protocol in PROTOCOLS {
        let server = Server::start(move |n| success(protocol, "The user is fixing a red build.", n == 0)).await;
        let (result, _) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 2);
        let budgets: Vec<u64> = server.requests().iter().map(|r| max_tokens(&r.body)).collect();
        assert_eq!(budgets[1], budgets[0] * 2, "{budgets:?}");
        let kinds: Vec<AttemptKind> = result.attempts.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, [AttemptKind::Summary, AttemptKind::Expand]);
        assert_eq!(result.attempts[1].outcome, AttemptOutcome::Accepted);
        assert!(!result.fallback);
        assert_eq!(result.usage.output_tokens, 160, "both calls are billed");
    }
}

fn max_tokens(body: &serde_json::Value) -> u64 {
    body.get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"))
        .and_then(|v| v.as_u64())
        .unwrap()
}

#[tokio::test]
async fn client_errors_go_straight_to_the_hard_trim() {
    for protocol in PROTOCOLS {
        for status in [400, 401, 402, 403, 404] {
            let server = Server::always(error(protocol, status, "invalid_request_error", "no")).await;
            let (result, waits) = run(protocol, &server.base_url(protocol)).await;
            assert_eq!(server.count(), 1, "{protocol:?} {status}");
            assert_eq!(classes(&result), [Some(FailureClass::Abort)]);
            assert_eq!(result.attempts[0].status, Some(status));
            assert!(waits.is_empty());
            assert_trimmed(&result);
        }
    }
}

#[tokio::test]
async fn a_context_length_error_goes_straight_to_the_hard_trim() {
    for protocol in PROTOCOLS {
        let body = error(
            protocol,
            400,
            "invalid_request_error",
            "prompt is too long: 9000 tokens > 8192 maximum",
        );
        let server = Server::always(body).await;
        let (result, _) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 1);
        assert_eq!(classes(&result), [Some(FailureClass::Abort)]);
        assert_trimmed(&result);
    }
}

#[tokio::test]
async fn rate_limits_wait_then_retry_until_max_attempts() {
    for protocol in PROTOCOLS {
        let server = Server::always(error(protocol, 429, "rate_limit_error", "slow down")).await;
        let (result, waits) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 3);
        assert_eq!(classes(&result), [Some(FailureClass::Advance); 3]);
        assert_eq!(waits.len(), 2);
        assert!(
            waits[0] >= Duration::from_secs(1) && waits[0] < Duration::from_millis(1500),
            "{waits:?}"
        );
        assert!(
            waits[1] >= Duration::from_secs(2) && waits[1] < Duration::from_millis(2500),
            "{waits:?}"
        );
        assert_trimmed(&result);
    }
}

#[tokio::test]
async fn retry_after_is_a_floor_for_the_next_wait() {
    for protocol in PROTOCOLS {
        // Seconds, then an HTTP-date, then success.
        let date = httpdate_in(Duration::from_secs(12));
        let server = Server::start(move |n| match n {
            0 => error(protocol, 429, "rate_limit_error", "slow").header("retry-after", "7"),
            1 => error(protocol, 429, "rate_limit_error", "slow").header("retry-after", &date),
            _ => success(protocol, "The user is fixing a red build.", false),
        })
        .await;
        let (result, waits) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 3);
        assert_eq!(
            classes(&result),
            [Some(FailureClass::Advance), Some(FailureClass::Advance), None]
        );
        assert_eq!(waits[0], Duration::from_secs(7));
        assert!(
            waits[1] > Duration::from_secs(8) && waits[1] <= Duration::from_secs(12),
            "{waits:?}"
        );
        assert_eq!(result.attempts[1].wait_ms, 7_000);
        assert!(!result.fallback);
    }
}

#[tokio::test]
async fn server_errors_retry_the_same_until_max_attempts() {
    for protocol in PROTOCOLS {
        for status in [500, 503] {
            let server = Server::always(error(protocol, status, "overloaded_error", "busy")).await;
            let (result, waits) = run(protocol, &server.base_url(protocol)).await;
            assert_eq!(server.count(), 3);
            assert_eq!(classes(&result), [Some(FailureClass::RetrySame); 3]);
            assert_eq!(waits.len(), 2);
            assert_trimmed(&result);
        }
        // A transient 503 heals.
        let server = Server::start(move |n| {
            if n == 0 {
                error(protocol, 503, "overloaded_error", "busy")
            } else {
                success(protocol, "Fixed.", false)
            }
        })
        .await;
        let (result, _) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 2);
        assert_eq!(classes(&result), [Some(FailureClass::RetrySame), None]);
        assert!(!result.fallback);
    }
}

#[tokio::test]
async fn timeouts_advance_until_max_attempts() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::Silent).await;
        let (result, _) = run_with(short(protocol, &server.base_url(protocol))).await;
        assert_eq!(server.count(), 3);
        assert_eq!(classes(&result), [Some(FailureClass::Advance); 3]);
        assert_trimmed(&result);
    }
}

#[tokio::test]
async fn refused_connections_retry_the_same_until_max_attempts() {
    for protocol in PROTOCOLS {
        let addr = dead_addr().await;
        let (result, waits) = run(protocol, &http_support::base_url(protocol, addr)).await;
        assert_eq!(classes(&result), [Some(FailureClass::RetrySame); 3]);
        assert_eq!(waits.len(), 2);
        assert_trimmed(&result);
    }
}

#[tokio::test]
async fn unusable_answers_are_retried() {
    for protocol in PROTOCOLS {
        let server = Server::start(move |n| match n {
            0 => Canned::text(200, "not json"),
            1 => success(protocol, "   ", false),
            _ => success(protocol, "Fixed.", false),
        })
        .await;
        let (result, _) = run(protocol, &server.base_url(protocol)).await;
        assert_eq!(server.count(), 3);
        assert_eq!(
            classes(&result),
            [Some(FailureClass::Advance), Some(FailureClass::Response), None]
        );
        assert!(!result.fallback);
    }
}

#[tokio::test]
async fn a_cancel_during_a_request_ends_the_pass_promptly() {
    for protocol in PROTOCOLS {
        let server = RawServer::start(Fault::Silent).await;
        let backend = http_support::builder(protocol, &server.base_url(protocol))
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let compactor = compactor(backend, Arc::new(RecordingSleeper::default()));
        let received = server.received.clone();
        let (result, elapsed) = compact_cancelled_when(&compactor, async move { received.notified().await }).await;
        assert!(
            elapsed < Duration::from_millis(250),
            "took {elapsed:?} after the cancel"
        );
        assert_eq!(server.count(), 1);
        assert_eq!(result.attempts.len(), 1);
        assert_eq!(result.attempts[0].outcome, AttemptOutcome::Failed);
        assert_trimmed(&result);
    }
}

#[tokio::test]
async fn a_cancel_during_a_backoff_ends_the_pass_promptly() {
    for protocol in PROTOCOLS {
        let server = Server::always(error(protocol, 503, "overloaded_error", "busy")).await;
        let sleeper = Arc::new(AnnouncingSleeper::default());
        let compactor = compactor(backend(protocol, &server.base_url(protocol)), sleeper.clone());
        let (result, elapsed) =
            compact_cancelled_when(&compactor, async move { sleeper.started.notified().await }).await;
        assert!(
            elapsed < Duration::from_millis(250),
            "took {elapsed:?} after the cancel"
        );
        assert_eq!(server.count(), 1, "no request after the cancelled wait");
        assert_eq!(classes(&result), [Some(FailureClass::RetrySame)]);
        assert_trimmed(&result);
    }
}
