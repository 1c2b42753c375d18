//! The example agent (`examples/agent_loop.rs`, compiled here as a module so the test runs
//! the very same loop) against a scripted OpenAI-compatible server on 127.0.0.1: tool
//! calls that read large files drive an elision epoch and a compaction, one request is
//! rejected as too long (a forced pass), and the session replays to the conversation the
//! agent ended with, byte for byte.

use crate::agent_loop;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agent_loop::{AgentConfig, run_agent};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use llm_compactor::compactor::CompactorConfig;
use llm_compactor::session::{CompactionReason, Record, Transcript};
use serde_json::{Value, json};

const FILES: usize = 10;
const REJECT_AT_ROUND: usize = 8;

#[derive(Default)]
struct Script {
    rounds: AtomicUsize,
    summaries: AtomicUsize,
    rejected: AtomicUsize,
    requests: Mutex<Vec<Value>>,
}

fn reply(message: Value, prompt_chars: usize) -> Response {
    Json(json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_chars / 4, "completion_tokens": 20, "total_tokens": prompt_chars / 4 + 20}
    }))
    .into_response()
}

async fn chat(State(script): State<Arc<Script>>, Json(body): Json<Value>) -> Response {
    script.requests.lock().unwrap().push(body.clone());
    let prompt_chars = body["messages"].to_string().chars().count();
    if body.get("tools").is_none() {
        script.summaries.fetch_add(1, Ordering::SeqCst);
        return reply(
            json!({"role": "assistant", "content": "Goals: inspect the data files. Decisions: read them in order. Files: data_*.txt. Unresolved: none."}),
            prompt_chars,
        );
    }
    let round = script.rounds.fetch_add(1, Ordering::SeqCst);
    if round == REJECT_AT_ROUND && script.rejected.fetch_add(1, Ordering::SeqCst) == 0 {
        script.rounds.fetch_sub(1, Ordering::SeqCst);
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 16000 tokens."}})),
        )
            .into_response();
    }
    if round < FILES {
        let call = json!({
            "id": format!("call_{round}"),
            "type": "function",
            "function": {"name": "read_file", "arguments": json!({"path": format!("data_{round}.txt")}).to_string()}
        });
        // Each turn also thinks aloud: text that aging cannot stub, so the conversation
        // eventually needs a summary, not only elision epochs.
        let notes = format!("Round {round} notes: {}", "the data looks regular so far; ".repeat(100));
        let mut message = json!({"role": "assistant", "content": notes, "tool_calls": [call]});
        if round == 3 {
            // One round also runs a shell command.
            message["tool_calls"].as_array_mut().unwrap().push(json!({
                "id": "call_sh", "type": "function",
                "function": {"name": "shell", "arguments": json!({"command": "ls data_0.txt"}).to_string()}
            }));
        }
        return reply(message, prompt_chars);
    }
    reply(
        json!({"role": "assistant", "content": "All ten files read; nothing is wrong."}),
        prompt_chars,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_agent_compacts_and_its_session_replays_to_its_conversation() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..FILES {
        let body: String = (0..150)
            .map(|line| format!("file {i} line {line}: some data\n"))
            .collect();
        std::fs::write(dir.path().join(format!("data_{i}.txt")), body).unwrap();
    }
    let script = Arc::new(Script::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let session = dir.path().join("agent.jsonl");
    let config = AgentConfig {
        base_url: format!("http://{addr}/v1"),
        model: "scripted".into(),
        api_key: Some("test-key".into()),
        session: session.clone(),
        workdir: dir.path().to_owned(),
        task: "Read every data file and report anything odd.".into(),
        window: 16_000,
        completion_reserve: 1_000,
        compactor: CompactorConfig::builder(8_000)
            .keep_recent(3)
            .age_observations(true)
            .age_min_chars(2_048)
            .age_reclaim_min(12_000)
            // This test needs an elision epoch: the seed's ungated rules.
            .cost_policy(llm_compactor::plan::CostPolicy {
                epoch_ratio: None,
                ..llm_compactor::plan::CostPolicy::seed()
            })
            .build()
            .unwrap(),
        max_rounds: 30,
    };
    let outcome = run_agent(&config).await.expect("the agent finishes");
    server.abort();

    assert_eq!(outcome.answer, "All ten files read; nothing is wrong.");
    let reasons: Vec<CompactionReason> = outcome.passes.iter().map(|p| p.0).collect();
    eprintln!("passes: {:?}, rounds: {}", outcome.passes, outcome.rounds);
    assert!(
        reasons.contains(&CompactionReason::ContextLengthExceeded),
        "{reasons:?}"
    );

    let transcript = Transcript::read(&session).unwrap();
    let kinds: Vec<&str> = transcript.entries().iter().map(|e| e.record.kind()).collect();
    assert!(kinds.contains(&"elision"), "an elision epoch ran: {kinds:?}");
    assert!(kinds.contains(&"compaction"), "a compaction ran: {kinds:?}");
    assert!(
        transcript
            .entries()
            .iter()
            .any(|e| matches!(&e.record, Record::Compaction(c) if !c.fallback))
    );
    assert!(script.summaries.load(Ordering::SeqCst) >= 1);
    assert_eq!(
        serde_json::to_string(transcript.messages()).unwrap(),
        serde_json::to_string(&outcome.messages).unwrap(),
        "the session replays to the conversation the agent ended with"
    );
    // What was sent last is what the transcript holds, minus the final answer.
    let last = script.requests.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last["messages"].as_array().unwrap().len() + 1, outcome.messages.len());
    assert!(last["tools"].as_array().unwrap().len() == 2);
}
