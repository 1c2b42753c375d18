//! Prepared compaction in the `ContextManager` (issue 28): the pass of a snapshot runs on
//! a tokio task while requests go out unchanged; it is installed at the trigger only
//! while its snapshot is a prefix of the conversation, written to the transcript with
//! its fate, cancelled by an inline pass and on shutdown. No test waits on a clock: a
//! gated summarizer answers when the test releases it, so "the request did not wait"
//! is shown by `prepare` returning while the summary is still held.

use crate::session_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::compactor::{Compactor, CompactorConfig};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::session::{
    CompactionReason, ContextEvent, ContextManager, PrepareOptions, Prepared, Record, RequestShape, Session,
    TYPE_PREPARED, Transcript,
};
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::json;
use session_support::{bytes_of, fixed_options};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

/// Answers only when the test releases it (or fails when cancelled), and says when a
/// call arrived.
struct Gated {
    text: String,
    calls: AtomicUsize,
    /// Calls that ended: answered, failed, or dropped by a cancelled pass.
    ended: AtomicUsize,
    arrived: Notify,
    release: Semaphore,
    /// Calls from this one on (numbered from 1) answer at once.
    free_from: AtomicUsize,
}

impl Gated {
    fn new(text: &str) -> Arc<Gated> {
        Arc::new(Gated {
            text: text.into(),
            calls: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
            arrived: Notify::new(),
            release: Semaphore::new(0),
            free_from: AtomicUsize::new(usize::MAX),
        })
    }

    /// Returns once `n` calls have arrived.
    async fn calls_reach(&self, n: usize) {
        while self.calls.load(Ordering::SeqCst) < n {
            self.arrived.notified().await;
        }
    }

    fn reply(&self) -> Result<SummaryReply, SummarizerError> {
        Ok(SummaryReply::new(
            self.text.clone(),
            StopReason::Complete,
            Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            },
        ))
    }
}

/// Counts a call as ended when its future is done or dropped.
struct Ended<'a>(&'a AtomicUsize);

impl Drop for Ended<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait]
impl Summarizer for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    async fn summarize(
        &self,
        _request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let _ended = Ended(&self.ended);
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.arrived.notify_one();
        if call >= self.free_from.load(Ordering::SeqCst) {
            return self.reply();
        }
        tokio::select! {
            _ = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "cancelled")),
            permit = self.release.acquire() => {
                permit.unwrap().forget();
                self.reply()
            }
        }
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    manager: ContextManager,
    summarizer: Arc<Gated>,
    events: Arc<Mutex<Vec<ContextEvent>>>,
    rounds: usize,
}

const BUDGET: usize = 6_000;

fn fixture(prose: &str, options: PrepareOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let summarizer = Gated::new(prose);
    let config = CompactorConfig::builder(BUDGET)
        .keep_recent(4)
        .age_observations(false)
        .build()
        .unwrap();
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(summarizer.clone())
        .with_ledger(LedgerPolicy::default());
    let session = Session::create(&path, fixed_options()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut manager = ContextManager::new(Arc::new(compactor), session)
        .with_preparation(options)
        .with_observer(Arc::new(move |event: &ContextEvent| {
            sink.lock().unwrap().push(event.clone())
        }));
    manager
        .push(Message::system("You are a careful agent.").sticky())
        .unwrap();
    manager.push(Message::user("Fix the crash in the parser.")).unwrap();
    Fixture {
        _dir: dir,
        path,
        manager,
        summarizer,
        events,
        rounds: 0,
    }
}

impl Fixture {
    async fn prepare(&mut self) -> Prepared {
        self.manager
            .prepare(RequestShape::default(), CancellationToken::new())
            .await
            .unwrap()
    }

    /// One agent round: a command and its result.
    fn round(&mut self, command: &str, result: &str) {
        self.rounds += 1;
        let id = format!("c{}", self.rounds);
        let call = ToolCall::new(&id, "bash", json!({ "command": command }).to_string());
        self.manager
            .record_response(
                None,
                "m",
                [
                    Message::assistant("Working.").with_tool_calls(vec![call]),
                    Message::tool(&id, result),
                ],
            )
            .unwrap();
    }

    fn read(&mut self) {
        let n = self.rounds % 5;
        self.round(
            &format!("cat src/f{n}.py"),
            &format!("<returncode>0</returncode>\n{}", "x = 1\n".repeat(60)),
        );
    }

    fn tokens(&self) -> usize {
        self.manager.conversation().tokens()
    }

    /// Reads until the conversation is over `ratio` of the budget.
    fn read_past(&mut self, ratio: f64) {
        while (self.tokens() as f64) <= BUDGET as f64 * ratio {
            self.read();
        }
    }

    fn events(&self) -> Vec<ContextEvent> {
        self.events.lock().unwrap().clone()
    }

    fn prepared_lines(&self) -> Vec<serde_json::Value> {
        Transcript::read(&self.path)
            .unwrap()
            .entries()
            .iter()
            .filter_map(|e| match &e.record {
                Record::Unknown { kind, payload } if kind == TYPE_PREPARED => Some(payload.clone()),
                _ => None,
            })
            .collect()
    }

    fn assert_replays(&self) {
        let transcript = Transcript::read(&self.path).unwrap();
        assert_eq!(bytes_of(transcript.messages()), bytes_of(self.manager.messages()));
    }
}

fn options() -> PrepareOptions {
    PrepareOptions {
        max_wait: Duration::from_secs(3600),
        ..PrepareOptions::fixed(0.5)
    }
}

#[tokio::test]
async fn requests_go_out_while_the_summary_is_prepared_and_it_is_installed_at_the_trigger() {
    let mut f = fixture("The agent reads the parser sources.", options());
    f.read_past(0.5);
    let first = f.prepare().await;
    assert!(
        first.pass.is_none(),
        "the request that starts the preparation goes out as it is"
    );
    f.summarizer.calls_reach(1).await;
    // Past the trigger, the summary still held: the request does not wait for it.
    f.read_past(0.72);
    let held = f.prepare().await;
    assert!(held.pass.is_none());
    assert_eq!(held.messages, f.manager.messages());
    assert!(f.manager.preparing());
    // The summary arrives; the next request installs it.
    f.summarizer.release.add_permits(1);
    f.manager.settle_preparation().await;
    f.read();
    let before = f.manager.messages().to_vec();
    let installed = f.prepare().await;
    let pass = installed.pass.expect("the prepared pass was installed");
    assert_eq!(pass.reason, CompactionReason::Prepared);
    assert!(pass.result.tokens_after < pass.result.tokens_before);
    // Every message since the snapshot is kept verbatim after the summary.
    let tail = &before[before.len() - 6..];
    assert_eq!(&installed.messages[installed.messages.len() - 6..], tail);
    assert_eq!(
        f.summarizer.calls.load(Ordering::SeqCst),
        1,
        "one summary, in the background"
    );
    f.assert_replays();
    let lines = f.prepared_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["fate"], "installed");
    assert!(lines[0]["since"].as_u64().unwrap() >= 2);
    let events = f.events();
    assert!(matches!(events[0], ContextEvent::PreparationStarted { .. }));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ContextEvent::PreparedInstalled { .. }))
    );
}

#[tokio::test]
async fn a_resolved_error_the_prose_names_is_discarded_and_prepared_again() {
    let mut f = fixture(
        "pytest shows test_parser.py::test_empty failing with KeyError.",
        options(),
    );
    f.round(
        "pytest tests/test_parser.py",
        "<returncode>1</returncode>\nFAILED tests/test_parser.py::test_empty - KeyError: 'x'",
    );
    f.read_past(0.5);
    f.prepare().await;
    f.summarizer.calls_reach(1).await;
    f.summarizer.release.add_permits(1);
    f.manager.settle_preparation().await;
    f.round("pytest tests/test_parser.py", "<returncode>0</returncode>\n1 passed");
    f.read_past(0.72);
    let out = f.prepare().await;
    assert!(
        out.pass.is_none(),
        "not installed, and under the hard limit: sent as it is"
    );
    let lines = f.prepared_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["fate"], "discarded");
    assert!(
        lines[0]["reasons"][0].as_str().unwrap().contains("prose names"),
        "{}",
        lines[0]
    );
    let events = f.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ContextEvent::PreparedDiscarded { .. }))
    );
    // And prepared again, over the conversation as it is now.
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, ContextEvent::PreparationStarted { .. }))
            .count(),
        2
    );
    f.summarizer.calls_reach(2).await;
    f.summarizer.release.add_permits(1);
    f.manager.settle_preparation().await;
    f.read();
    let pass = f.prepare().await.pass.expect("the new preparation is installed");
    assert_eq!(pass.reason, CompactionReason::Prepared);
    f.assert_replays();
}

#[tokio::test]
async fn over_the_hard_limit_a_request_never_goes_out_uncompacted() {
    // The prepared pass never answers in time: the request waits the bound, then the
    // pass runs inline (and the held call is cancelled).
    let mut f = fixture(
        "The agent reads sources.",
        PrepareOptions {
            max_wait: Duration::ZERO,
            ..PrepareOptions::fixed(0.5)
        },
    );
    f.read_past(0.5);
    f.prepare().await;
    f.summarizer.calls_reach(1).await;
    f.read_past(1.02);
    f.summarizer.free_from.store(2, Ordering::SeqCst); // the inline pass's call answers
    let out = f.prepare().await;
    let pass = out.pass.expect("compacted before it went out");
    assert_ne!(pass.reason, CompactionReason::Prepared);
    assert!(out.request_tokens <= BUDGET);
    assert!(
        f.events()
            .iter()
            .any(|e| matches!(e, ContextEvent::PreparationCancelled { .. })),
        "{:?}",
        f.events()
    );
    f.assert_replays();
}

#[tokio::test]
async fn an_inline_pass_cancels_the_preparation_and_shutdown_stops_it() {
    let mut f = fixture("The agent reads sources.", options());
    f.read_past(0.5);
    f.prepare().await;
    f.summarizer.calls_reach(1).await;
    // The provider rejects a request: the forced pass changes the history inline.
    f.summarizer.release.add_permits(1);
    let forced = f
        .manager
        .on_context_length_exceeded(RequestShape::default(), CancellationToken::new())
        .await
        .unwrap();
    assert!(forced.pass.is_some());
    assert!(!f.manager.preparing());
    assert!(
        f.events()
            .iter()
            .any(|e| matches!(e, ContextEvent::PreparationCancelled { .. }))
    );
    // A new preparation, then shutdown: its held call is cancelled and nothing is written.
    let calls = f.summarizer.calls.load(Ordering::SeqCst);
    f.read_past(0.5);
    f.prepare().await;
    f.summarizer.calls_reach(calls + 1).await;
    let bytes = std::fs::read(&f.path).unwrap();
    f.manager.shutdown().await;
    // Every call has ended: the held one was cancelled or dropped, none hangs on.
    assert_eq!(
        f.summarizer.ended.load(Ordering::SeqCst),
        f.summarizer.calls.load(Ordering::SeqCst)
    );
    assert!(!f.manager.preparing());
    assert_eq!(std::fs::read(&f.path).unwrap(), bytes);
    assert!(f.prepared_lines().is_empty());
}
