//! A pass's context reaches its summarizer explicitly (issue 42): what the caller puts in
//! `CompactOptions::pass`, or in a `RequestShape`'s `pass` for the `ContextManager`, is
//! what every summarizer call of that pass (and its input-room question) sees, inline
//! and in the background task of a prepared pass; a pass without one sees an empty
//! context. No task-local carries it, so nothing has to be scoped around the call.

use crate::session_support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::compactor::{CompactOptions, Compactor, CompactorConfig};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::Message;
use llm_compactor::session::{ContextManager, PrepareOptions, RequestShape, Session};
use llm_compactor::summarize::{PassContext, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use session_support::fixed_options;
use tokio_util::sync::CancellationToken;

/// What a caller tells its summarizer about the request.
#[derive(Clone, Debug, PartialEq)]
struct Caller(&'static str);

/// Records the caller each call and each input-room question saw.
#[derive(Default)]
struct Recording {
    calls: Mutex<Vec<Option<Caller>>>,
    rooms: Mutex<Vec<Option<Caller>>>,
}

#[async_trait]
impl Summarizer for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn input_room_in(&self, pass: &PassContext) -> Option<usize> {
        self.rooms.lock().unwrap().push(pass.get::<Caller>().cloned());
        None
    }

    async fn summarize(
        &self,
        _request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        unreachable!("the compactor calls summarize_in")
    }

    async fn summarize_in(
        &self,
        _request: SummaryRequest,
        pass: &PassContext,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.calls.lock().unwrap().push(pass.get::<Caller>().cloned());
        Ok(SummaryReply::new(
            "The agent asked questions and got answers.",
            StopReason::Complete,
            Usage::default(),
        ))
    }
}

fn send<T: Send>(_: &T) {}

fn compactor(summarizer: Arc<Recording>) -> Compactor {
    let config = CompactorConfig::builder(1_000)
        .keep_recent(2)
        .age_observations(false)
        .build()
        .unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(summarizer)
}

fn conversation(rounds: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("Be terse.")];
    for i in 0..rounds {
        messages.push(Message::user(format!("question {i}: {}", "x".repeat(80))));
        messages.push(Message::assistant(format!("answer {i}")));
    }
    messages
}

#[tokio::test]
async fn the_summarizer_sees_the_context_of_its_pass_and_nothing_without_one() {
    let summarizer = Arc::new(Recording::default());
    let compactor = compactor(summarizer.clone());
    let messages = conversation(40);
    let options = CompactOptions::new().with_pass(PassContext::new().with(Caller("agent-1")));
    let result = compactor.compact(&messages, options).await.unwrap();
    assert!(!result.fallback, "{:?}", result.attempts);
    let result = compactor.compact(&messages, CompactOptions::default()).await.unwrap();
    assert!(!result.fallback);
    let calls = summarizer.calls.lock().unwrap().clone();
    assert_eq!(calls, vec![Some(Caller("agent-1")), None]);
    let rooms = summarizer.rooms.lock().unwrap().clone();
    assert_eq!(rooms, vec![Some(Caller("agent-1")), None]);
}

#[tokio::test]
async fn the_manager_hands_the_requests_context_to_inline_and_background_passes() {
    for prepared in [false, true] {
        let summarizer = Arc::new(Recording::default());
        let dir = tempfile::tempdir().unwrap();
        let session = Session::create(dir.path().join("s.jsonl"), fixed_options()).unwrap();
        let manager = ContextManager::new(Arc::new(compactor(summarizer.clone())), session);
        let mut manager = if prepared {
            manager.with_preparation(PrepareOptions::fixed(0.3))
        } else {
            manager.without_preparation()
        };
        // Under the trigger (a prepared pass starts), or over it (an inline pass runs).
        let rounds = if prepared { 12 } else { 40 };
        for message in conversation(rounds) {
            manager.push(message).unwrap();
        }
        let pass = PassContext::new().with(Caller("agent-2"));
        let request = RequestShape::new().with_pass(&pass);
        let round = manager.prepare(request, CancellationToken::new());
        // A loop may run on a multi-threaded runtime: the round is Send.
        send(&round);
        let out = round.await.unwrap();
        assert_eq!(out.pass.is_some(), !prepared, "prepared: {prepared}");
        manager.settle_preparation().await;
        assert_eq!(manager.preparing(), prepared, "prepared: {prepared}: a pass is ready");
        let calls = summarizer.calls.lock().unwrap().clone();
        assert_eq!(calls, vec![Some(Caller("agent-2"))], "prepared: {prepared}");
    }
}
