//! `ContextManager` against the real engine with scripted summarizers: it compacts when
//! it should, writes every pass before reporting anything, forces passes on a
//! context-length rejection a bounded number of times, and its transcript always replays
//! to the conversation it hands out.

use crate::session_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::compactor::{Compactor, CompactorConfig};
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::session::{
    BackendRoom, CompactionReason, ContextEvent, ContextManager, ManagerError, Prepared, Record, RequestShape, Session,
    Transcript, UsageRecorder,
};
use llm_compactor::summarize::{StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::json;
use session_support::{bytes_of, fixed_options};
use tokio_util::sync::CancellationToken;

/// Answers every request with a short summary and counts the calls.
#[derive(Default)]
struct Scripted {
    calls: AtomicUsize,
}

#[async_trait]
impl Summarizer for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    async fn summarize(
        &self,
        _request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(SummaryReply::new(
            "The user asked for a build fix; files a.rs and b.rs were read.",
            StopReason::Complete,
            Usage {
                input_tokens: 100,
                output_tokens: 20,
                ..Usage::default()
            },
        ))
    }
}

#[derive(Default)]
struct Recorder(Mutex<Vec<(usize, Option<Usage>, String)>>);

impl UsageRecorder for Recorder {
    fn record_usage(&self, sent: &[Message], usage: Option<&Usage>, model: &str) {
        self.0
            .lock()
            .unwrap()
            .push((sent.len(), usage.copied(), model.to_owned()));
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    manager: ContextManager,
    summarizer: Arc<Scripted>,
    events: Arc<Mutex<Vec<ContextEvent>>>,
}

impl Fixture {
    /// Prepares a plain request (no tools, no extra context), never cancelled.
    async fn prepare(&mut self) -> Result<Prepared, ManagerError> {
        self.manager
            .prepare(RequestShape::default(), CancellationToken::new())
            .await
    }
}

fn fixture(config: CompactorConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let summarizer = Arc::new(Scripted::default());
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    let compactor = Compactor::new(config, counter).with_summarizer(summarizer.clone());
    let session = Session::create(&path, fixed_options()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let manager =
        ContextManager::new(Arc::new(compactor), session).with_observer(Arc::new(move |event: &ContextEvent| {
            sink.lock().unwrap().push(event.clone())
        }));
    Fixture {
        _dir: dir,
        path,
        manager,
        summarizer,
        events,
    }
}

/// A system prompt, a task, then `rounds` rounds of a read_file call and a
/// `result_chars`-char result.
fn fill(manager: &mut ContextManager, rounds: usize, result_chars: usize) {
    manager.push(Message::system("You are a careful agent.")).unwrap();
    manager.push(Message::user("Fix the build.")).unwrap();
    for i in 0..rounds {
        let call = ToolCall::new(
            format!("c{i}"),
            "read_file",
            json!({"path": format!("f{i}.rs")}).to_string(),
        );
        manager
            .record_response(
                None,
                "m",
                [Message::assistant(format!("Reading f{i}.rs.")).with_tool_calls(vec![call])],
            )
            .unwrap();
        manager
            .push(Message::tool(format!("c{i}"), format!("{i}").repeat(result_chars)))
            .unwrap();
    }
}

fn assert_replays(fixture: &Fixture) {
    let transcript = Transcript::read(&fixture.path).unwrap();
    assert_eq!(bytes_of(transcript.messages()), bytes_of(fixture.manager.messages()));
    // The manager's conversation mirrors the transcript, and what it cached of each
    // message is what a recount gives.
    let conversation = fixture.manager.conversation();
    assert_eq!(conversation.messages(), fixture.manager.session().messages());
    let recount: Vec<usize> = conversation
        .messages()
        .iter()
        .map(|m| conversation.counter().count_message(m))
        .collect();
    assert_eq!(conversation.counts(), recount.as_slice());
    assert_eq!(
        conversation.digest(),
        llm_compactor::message::conversation_digest(conversation.messages())
    );
}

fn kinds(path: &std::path::Path) -> Vec<String> {
    Transcript::read(path)
        .unwrap()
        .entries()
        .iter()
        .map(|e| e.record.kind().to_owned())
        .collect()
}

fn config(budget: usize) -> llm_compactor::compactor::CompactorConfigBuilder {
    CompactorConfig::builder(budget).keep_recent(2)
}

#[tokio::test]
async fn below_the_trigger_nothing_happens() {
    let mut f = fixture(config(100_000).build().unwrap());
    fill(&mut f.manager, 3, 500);
    let before = std::fs::read(&f.path).unwrap();
    let prepared = f.prepare().await.unwrap();
    assert!(prepared.pass.is_none());
    assert_eq!(prepared.messages, f.manager.messages());
    assert_eq!(
        prepared.request_tokens,
        HeuristicCounter.count_messages(&prepared.messages)
    );
    assert_eq!(std::fs::read(&f.path).unwrap(), before, "nothing written");
    assert!(f.events.lock().unwrap().is_empty());
}

#[tokio::test]
async fn over_the_trigger_a_pass_is_written_and_replays() {
    let mut f = fixture(config(4_000).build().unwrap());
    fill(&mut f.manager, 8, 2_000);
    let prepared = f.prepare().await.unwrap();
    let pass = prepared.pass.expect("a pass ran");
    assert_eq!(pass.reason, CompactionReason::Threshold);
    assert!(pass.result.dropped > 0 && !pass.result.fallback);
    let id = pass.recorded.compaction_id.expect("a compaction line");
    assert!(
        prepared.messages.iter().any(|m| m.id.as_deref() == Some(id.as_str())),
        "the summary carries its id"
    );
    assert!(prepared.request_tokens <= 4_000 * 4 / 10 + 1);
    assert_eq!(f.summarizer.calls.load(Ordering::SeqCst), 1);
    assert_replays(&f);
    let events = f.events.lock().unwrap();
    assert!(matches!(
        events[0],
        ContextEvent::CompactionStarted {
            reason: CompactionReason::Threshold,
            ..
        }
    ));
    assert!(matches!(
        events[1],
        ContextEvent::CompactionDone {
            fallback: false,
            exhausted: false,
            ..
        }
    ));
}

#[tokio::test]
async fn an_elision_epoch_writes_only_an_elision_line() {
    let cfg = config(200_000)
        .age_observations(true)
        .age_min_chars(1_000)
        .age_reclaim_min(6_000)
        .build()
        .unwrap();
    let mut f = fixture(cfg);
    fill(&mut f.manager, 8, 2_000);
    let prepared = f.prepare().await.unwrap();
    let pass = prepared.pass.expect("an epoch ran");
    assert!(pass.result.is_elision_only(), "{:?}", pass.result);
    assert!(pass.recorded.elision_id.is_some() && pass.recorded.compaction_id.is_none());
    assert_eq!(
        f.summarizer.calls.load(Ordering::SeqCst),
        0,
        "an epoch never calls the summarizer"
    );
    assert_eq!(kinds(&f.path).last().map(String::as_str), Some("elision"));
    assert_replays(&f);
    // The pool is spent: the next request needs nothing.
    let again = f.prepare().await.unwrap();
    assert!(again.pass.is_none());
}

#[tokio::test]
async fn context_length_rejections_force_passes_up_to_the_allowance() {
    let mut f = fixture(config(100_000).build().unwrap());
    fill(&mut f.manager, 10, 1_500);
    let shape = RequestShape::default();
    let first = f
        .manager
        .on_context_length_exceeded(shape, CancellationToken::new())
        .await
        .unwrap();
    let pass = first.pass.unwrap();
    assert_eq!(pass.reason, CompactionReason::ContextLengthExceeded);
    assert!(
        pass.result.tokens_after * 4 <= pass.result.tokens_before * 3 + 4,
        "aimed below what was sent"
    );
    fill_more(&mut f.manager);
    f.manager
        .on_context_length_exceeded(shape, CancellationToken::new())
        .await
        .unwrap();
    let lines = kinds(&f.path).len();
    let err = f
        .manager
        .on_context_length_exceeded(shape, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, ManagerError::ContextExhausted { .. }), "{err}");
    assert!(err.to_string().contains("2 forced compaction(s)"), "{err}");
    assert_eq!(kinds(&f.path).len(), lines, "the refused third pass wrote nothing");
    assert_replays(&f);
    // A new run renews the allowance.
    f.manager.begin_run();
    fill_more(&mut f.manager);
    if let Err(err) = f
        .manager
        .on_context_length_exceeded(shape, CancellationToken::new())
        .await
    {
        panic!("a new run renews the allowance, but: {err}");
    }
}

fn fill_more(manager: &mut ContextManager) {
    for i in 100..106 {
        let call = ToolCall::new(
            format!("c{i}"),
            "read_file",
            json!({"path": format!("g{i}.rs")}).to_string(),
        );
        manager
            .record_response(None, "m", [Message::assistant("More.").with_tool_calls(vec![call])])
            .unwrap();
        manager.push(Message::tool(format!("c{i}"), "z".repeat(1_500))).unwrap();
    }
}

#[tokio::test]
async fn exhausted_is_an_error_only_after_the_transcript_is_written() {
    let mut f = fixture(config(2_000).build().unwrap());
    fill(&mut f.manager, 4, 400);
    // One enormous read in the recent window: no pass can make it fit.
    let call = ToolCall::new("huge", "read_file", r#"{"path":"big.log"}"#);
    f.manager
        .record_response(
            None,
            "m",
            [Message::assistant("Reading the log.").with_tool_calls(vec![call])],
        )
        .unwrap();
    f.manager.push(Message::tool("huge", "L".repeat(40_000))).unwrap();
    // Since issue 10 item 22 a huge recent tool result is cut to fit; the newest user
    // message is never touched, so one that alone is over the budget cannot fit.
    f.manager.push(Message::user("Q".repeat(40_000))).unwrap();
    let err = f.prepare().await.unwrap_err();
    assert!(matches!(err, ManagerError::ContextExhausted { .. }), "{err}");
    // The pass is in the transcript, and replay gives the conversation the manager holds.
    assert!(kinds(&f.path).iter().any(|k| k == "compaction"));
    assert_replays(&f);
    let events = f.events.lock().unwrap();
    assert!(matches!(
        events.last(),
        Some(ContextEvent::CompactionDone { exhausted: true, .. })
    ));
}

#[tokio::test]
async fn the_calibrated_counter_records_what_was_billed() {
    let counter = Arc::new(llm_compactor::count::CalibratedCounter::new());
    let dir = tempfile::tempdir().unwrap();
    let compactor = Compactor::new(config(100_000).build().unwrap(), counter.clone());
    let session = Session::create(dir.path().join("s.jsonl"), fixed_options()).unwrap();
    let mut manager = ContextManager::new(Arc::new(compactor), session).with_usage_recorder(counter.clone());
    manager.push(Message::user("hello there")).unwrap();
    let usage = Usage {
        input_tokens: 1_234,
        ..Usage::default()
    };
    manager
        .record_response(Some(usage), "gpt-x", [Message::assistant("hi")])
        .unwrap();
    let record = counter.calibration().expect("calibrated");
    assert_eq!((record.messages, record.billed_prompt_tokens), (1, 1_234));
    // The next request is counted from the bill: P + the heuristic of what came after.
    let prepared = manager
        .prepare(RequestShape::default(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        prepared.request_tokens,
        1_234 + HeuristicCounter.count_messages(&manager.messages()[1..])
    );
}

#[tokio::test]
async fn billed_usage_is_recorded_against_the_conversation_that_was_sent() {
    let recorder = Arc::new(Recorder::default());
    let mut f = fixture(config(100_000).build().unwrap());
    f.manager = f.manager.with_usage_recorder(recorder.clone());
    f.manager.push(Message::user("hi")).unwrap();
    let usage = Usage {
        input_tokens: 42,
        output_tokens: 3,
        ..Usage::default()
    };
    f.manager
        .record_response(Some(usage), "gpt-x", [Message::assistant("hello")])
        .unwrap();
    f.manager
        .record_response(None, "gpt-x", [Message::assistant("no usage")])
        .unwrap();
    assert_eq!(
        recorder.0.lock().unwrap().as_slice(),
        &[(1, Some(usage), "gpt-x".to_owned()), (2, None, "gpt-x".to_owned())]
    );
    assert_eq!(f.manager.messages().len(), 3);
    assert_replays(&f);
}

#[tokio::test]
async fn a_request_over_the_backend_room_is_compacted_to_it() {
    let mut f = fixture(config(100_000).build().unwrap());
    let room = BackendRoom {
        window: 8_000,
        completion_reserve: 1_000,
        safety_margin: 200,
    };
    f.manager = f.manager.with_room(room);
    fill(&mut f.manager, 20, 1_600);
    let tools = vec![json!({"type": "function", "function": {"name": "read_file", "description": "x".repeat(2_000)}})];
    let shape = RequestShape::new().with_tools(&tools).with_context("runtime context");
    let prepared = f.manager.prepare(shape, CancellationToken::new()).await.unwrap();
    let pass = prepared.pass.expect("over the room");
    assert_eq!(pass.reason, CompactionReason::Room);
    // The pass counts whole requests (tools and context attached) and aims at the room.
    let target = room.usable(0);
    assert!(matches!(
        f.events.lock().unwrap()[0],
        ContextEvent::CompactionStarted { target: Some(t), .. } if t == target
    ));
    assert!(
        prepared.request_tokens <= room.usable(0),
        "{} > {}",
        prepared.request_tokens,
        room.usable(0)
    );
    assert_replays(&f);
    let transcript = Transcript::read(&f.path).unwrap();
    assert!(
        transcript
            .entries()
            .iter()
            .any(|e| matches!(e.record, Record::Compaction(_)))
    );
}
