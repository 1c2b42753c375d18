//! The local summarizer running the real default model (SmolLM2-135M-Instruct).
#![cfg(feature = "local")]

use crate::local_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use llm_compactor::backend::local::{LocalConfig, LocalError, LocalProgress, LocalSummarizer};
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryRequest};
use tokio_util::sync::CancellationToken;

const SYSTEM: &str = "You summarize a coding agent's conversation. Write a short summary of what was done \
                      and what remains, naming files and errors.";

const TRANSCRIPT: &str = "user: The test test_parse_date fails in utils/dates.py, please fix it.\n\
assistant: I will run the tests first.\n\
tool (bash): FAILED tests/test_dates.py::test_parse_date - ValueError: month must be in 1..12\n\
assistant: The parser swaps day and month. I changed parse_date in utils/dates.py to read DD/MM/YYYY.\n\
tool (bash): 14 passed in 0.31s\n\
assistant: All tests pass now.";

fn request(max_output_tokens: u32) -> SummaryRequest {
    SummaryRequest {
        system: SYSTEM.into(),
        transcript: TRANSCRIPT.into(),
        max_output_tokens,
        prefill: String::new(),
    }
}

async fn open() -> Option<LocalSummarizer> {
    let path = local_support::default_model().await?;
    Some(LocalSummarizer::open(LocalConfig::new(path)).expect("the default model opens"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summarizes_a_short_conversation() {
    let Some(local) = open().await else { return };
    let started = Instant::now();
    let reply = local
        .summarize(request(160), &CancellationToken::new())
        .await
        .expect("a summary");
    eprintln!(
        "summary in {:?}: {:?} {:?}\n{}",
        started.elapsed(),
        reply.stop,
        reply.usage,
        reply.text
    );
    assert!(!reply.text.trim().is_empty());
    let prompt = local.prompt_tokens(SYSTEM, TRANSCRIPT).expect("prompt");
    assert_eq!(reply.usage.input_tokens, prompt.len() as u64);
    assert!(reply.usage.output_tokens > 0 && reply.usage.output_tokens <= 160);
    if reply.stop == StopReason::Truncated {
        assert_eq!(reply.usage.output_tokens, 160);
    }
    assert!(local.is_loaded());
    // Greedy decoding: the same request gives the same summary.
    let again = local
        .summarize(request(160), &CancellationToken::new())
        .await
        .expect("a summary");
    assert_eq!(again, reply);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stops_at_the_output_budget_and_says_so() {
    let Some(local) = open().await else { return };
    let reply = local
        .summarize(request(4), &CancellationToken::new())
        .await
        .expect("a summary");
    assert_eq!(reply.stop, StopReason::Truncated);
    assert_eq!(reply.usage.output_tokens, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_generation_returns_promptly() {
    let Some(path) = local_support::default_model().await else {
        return;
    };
    let generated = Arc::new(tokio::sync::Notify::new());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (g, s) = (Arc::clone(&generated), Arc::clone(&seen));
    let local = LocalSummarizer::open(LocalConfig::new(path))
        .expect("opens")
        .with_progress(Arc::new(move |event| {
            if let LocalProgress::Generating { done: 3, .. } = event {
                g.notify_one();
            }
            if let Ok(mut s) = s.lock() {
                s.push(event);
            }
        }));
    let local = Arc::new(local);
    let cancel = CancellationToken::new();
    let task = {
        let (local, cancel) = (Arc::clone(&local), cancel.clone());
        tokio::spawn(async move { local.summarize(request(4000), &cancel).await })
    };
    generated.notified().await;
    let cancelled_at = Instant::now();
    cancel.cancel();
    let outcome = task.await.expect("joined");
    let latency = cancelled_at.elapsed();
    let err = outcome.expect_err("cancelled");
    assert_eq!(err.kind, FailureKind::Cancelled);
    assert!(latency < Duration::from_millis(250), "cancel took {latency:?}");
    let events = seen.lock().expect("events").clone();
    assert!(events.iter().any(|e| matches!(e, LocalProgress::Loading { .. })));
    assert!(events.iter().any(|e| matches!(e, LocalProgress::Prompt { .. })));
    // The model is still usable after a cancelled request.
    let reply = local
        .summarize(request(8), &CancellationToken::new())
        .await
        .expect("works again");
    assert!(!reply.text.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declares_input_room_below_its_context() {
    let Some(local) = open().await else { return };
    let room = local.input_room().expect("room");
    assert_eq!(local.context_length(), 8192);
    assert!(room > 1000 && room < local.context_length() - 2048, "room {room}");
}

#[test]
fn a_missing_model_says_how_to_get_one() {
    let err = LocalSummarizer::open(LocalConfig::new("/nonexistent/model.gguf")).expect_err("missing");
    assert!(matches!(err, LocalError::ModelMissing { .. }));
    let err = SummarizerError::from(err);
    assert_eq!(err.kind, FailureKind::Unavailable);
    assert!(err.message.contains("compactor model fetch"), "{}", err.message);
}

#[test]
fn a_file_that_is_not_gguf_is_a_format_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("junk.gguf");
    std::fs::write(&path, b"definitely not a gguf file").expect("write");
    let err = LocalSummarizer::open(LocalConfig::new(&path)).expect_err("junk");
    assert!(matches!(err, LocalError::Format(_)), "{err}");
    assert_eq!(SummarizerError::from(err).kind, FailureKind::Unavailable);
}

/// Issue 16 item 2: prompted as a summarizer (the task restated after the transcript,
/// the answer prefilled with the first heading), the model's summary starts with that
/// heading instead of continuing the conversation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefilled_summary_starts_with_the_first_heading() {
    let Some(local) = open().await else { return };
    let prompts = llm_compactor::summarize::Prompts::default();
    let request = SummaryRequest {
        system: prompts.system(None, None),
        transcript: prompts.user_turn(TRANSCRIPT),
        max_output_tokens: 96,
        prefill: prompts.prefill.clone(),
    };
    let reply = local
        .summarize(request.clone(), &CancellationToken::new())
        .await
        .expect("a summary");
    eprintln!("{}", reply.text);
    assert!(reply.text.starts_with("## Goals\n"), "{}", reply.text);
    assert!(!reply.text.starts_with("## Goals\n## Goals"));
    let prompt = local
        .chat_format()
        .encode_prefilled(
            local.tokenizer(),
            &request.system,
            &request.transcript,
            &request.prefill,
            local.header().add_bos,
        )
        .expect("prompt");
    assert_eq!(reply.usage.input_tokens, prompt.len() as u64);
}
