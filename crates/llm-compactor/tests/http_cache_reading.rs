//! A summary request that reads the agent's own prompt cache (issue 28), against a real
//! server on 127.0.0.1 that bills cache reads by the longest prefix a request shares
//! with any earlier one (the way OpenAI and Anthropic bill a cached prefix): with the
//! agent's last request in the pass's context, the summary request is that request plus one trailing
//! instruction, and at least 85% of its input is billed as cache reads; without it, the
//! ordinary summary request reads nothing from the cache. The receipt reports the
//! summarizer's cached and uncached input separately.

#![cfg(feature = "http")]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use llm_compactor::backend::http::{AgentRequest, HttpBackend, Protocol, Secret};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::format::{Document, Format};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::session::{ContextEvent, ContextManager, PrepareOptions, RequestShape, Session, SessionOptions};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// One request the server saw, and what it billed.
#[derive(Clone, Debug)]
struct Billed {
    body: Value,
    prompt: u64,
    cached: u64,
}

/// Bills every request: prompt tokens are its rendered prefix's chars / 4, cached tokens
/// the longest prefix it shares with any earlier request (OpenAI's 1,024-token minimum
/// applied).
#[derive(Clone, Default)]
struct Billing {
    seen: Arc<Mutex<Vec<(String, Billed)>>>,
}

/// What a provider renders into the prompt, in order: tools, system, each message.
fn render(body: &Value) -> String {
    let mut out = String::new();
    for key in ["model", "tools", "system"] {
        if let Some(value) = body.get(key) {
            out.push_str(&value.to_string());
            out.push('\u{1}');
        }
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push_str(&message.to_string());
        out.push('\u{1}');
    }
    out
}

async fn bill_openai(State(billing): State<Billing>, axum::Json(body): axum::Json<Value>) -> axum::Json<Value> {
    axum::Json(bill(&billing, body, Protocol::OpenAi))
}

async fn bill_anthropic(State(billing): State<Billing>, axum::Json(body): axum::Json<Value>) -> axum::Json<Value> {
    axum::Json(bill(&billing, body, Protocol::Anthropic))
}

fn bill(billing: &Billing, body: Value, protocol: Protocol) -> Value {
    let prompt = render(&body);
    let mut seen = billing.seen.lock().unwrap();
    let shared = seen
        .iter()
        .map(|(earlier, _)| earlier.bytes().zip(prompt.bytes()).take_while(|(a, b)| a == b).count())
        .max()
        .unwrap_or(0);
    let tokens = (prompt.len() / 4) as u64;
    let cached = if shared / 4 >= 1024 { (shared / 4) as u64 } else { 0 };
    seen.push((
        prompt,
        Billed {
            body: body.clone(),
            prompt: tokens,
            cached,
        },
    ));
    let text = "The agent read the sources and is fixing the parser.";
    match protocol {
        Protocol::Anthropic => json!({
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": tokens - cached, "cache_read_input_tokens": cached, "output_tokens": 20}
        }),
        Protocol::OpenAi => json!({
            "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": cached}}
        }),
    }
}

async fn start() -> (SocketAddr, Billing) {
    let billing = Billing::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(bill_openai))
        .route("/v1/messages", post(bill_anthropic))
        .with_state(billing.clone());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, billing)
}

/// An agent history: a task, then rounds of a command and a 3,000-char result.
fn history(rounds: usize) -> Vec<Message> {
    let mut messages = vec![Message::user("Fix the crash in the parser.")];
    for i in 0..rounds {
        let id = format!("call_{i}");
        let call = ToolCall::new(&id, "bash", json!({"command": format!("cat src/f{i}.py")}).to_string());
        messages.push(Message::assistant(format!("Reading f{i}.")).with_tool_calls(vec![call]));
        messages.push(Message::tool(&id, format!("line {i}\n").repeat(400)));
    }
    messages.push(Message::user("Go on."));
    messages
}

/// The agent's request body for `messages`, as its harness sends it.
fn agent_body(protocol: Protocol, messages: &[Message]) -> Value {
    let tools = json!([{"name": "bash", "description": "Run a command.", "input_schema": {"type": "object"}}]);
    match protocol {
        Protocol::OpenAi => {
            let wire = Document::from_messages(Format::OpenAi, messages.to_vec()).to_value();
            let mut wire = wire.get("messages").cloned().unwrap_or(wire);
            wire.as_array_mut().unwrap().insert(
                0,
                json!({"role": "system", "content": "You are a coding agent. ".repeat(40)}),
            );
            json!({"model": "gpt-agent", "messages": wire, "stream": true, "prompt_cache_key": "session-1",
                   "max_completion_tokens": 16000,
                   "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]})
        }
        Protocol::Anthropic => {
            let wire = Document::from_messages(Format::Anthropic, messages.to_vec()).to_value();
            let mut wire = wire.get("messages").cloned().unwrap_or(wire);
            // The agent's breakpoint on its last block.
            let last = wire.as_array_mut().unwrap().last_mut().unwrap();
            if let Some(text) = last["content"].as_str().map(str::to_owned) {
                last["content"] = json!([{"type": "text", "text": text}]);
            }
            let blocks = last["content"].as_array_mut().unwrap();
            blocks.last_mut().unwrap()["cache_control"] = json!({"type": "ephemeral"});
            json!({"model": "claude-agent", "system": "You are a coding agent. ".repeat(40), "messages": wire,
                   "tools": tools, "max_tokens": 16000, "stream": true})
        }
    }
}

fn backend(protocol: Protocol, addr: SocketAddr) -> HttpBackend {
    let builder = match protocol {
        Protocol::OpenAi => HttpBackend::openai("summarizer-model").base_url(format!("http://{addr}/v1")),
        Protocol::Anthropic => HttpBackend::anthropic("summarizer-model").base_url(format!("http://{addr}")),
    };
    builder
        .api_key(Secret::new("sk-test"))
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn compactor(backend: HttpBackend) -> Compactor {
    let config = CompactorConfig::builder(60_000)
        .keep_recent(4)
        .age_observations(false)
        .build()
        .unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(backend))
}

/// The agent's own request goes out first (its provider caches its prefix).
async fn send_agent_request(protocol: Protocol, addr: SocketAddr, body: &Value) {
    let url = match protocol {
        Protocol::OpenAi => format!("http://{addr}/v1/chat/completions"),
        Protocol::Anthropic => format!("http://{addr}/v1/messages"),
    };
    reqwest::Client::new()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
}

#[tokio::test]
async fn the_summary_request_reads_the_agents_cache_for_both_protocols() {
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let (addr, billing) = start().await;
        let messages = history(24);
        let body = agent_body(protocol, &messages);
        send_agent_request(protocol, addr, &body).await;
        let compactor = compactor(backend(protocol, addr));
        let agent = AgentRequest {
            protocol,
            body: body.clone(),
        };
        let options = CompactOptions::new().with_pass(agent.pass_context());
        let result = compactor.compact(&messages, options).await.unwrap();
        assert!(
            !result.fallback && result.dropped > 0,
            "{protocol:?}: {:?}",
            result.attempts
        );
        let seen = billing.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{protocol:?}: one summary request");
        let summary = &seen[1].1;
        // The agent's request unchanged, plus one trailing instruction.
        let sent = summary.body["messages"].as_array().unwrap();
        let agent_messages = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), agent_messages.len() + 1);
        assert_eq!(&sent[..agent_messages.len()], &agent_messages[..]);
        for key in ["model", "tools", "system", "prompt_cache_key"] {
            assert_eq!(summary.body.get(key), body.get(key), "{protocol:?}: {key}");
        }
        assert_eq!(summary.body["stream"], json!(false));
        let share = summary.cached as f64 / summary.prompt as f64;
        println!(
            "{protocol:?}: the summary request billed {:.1}% of {} input tokens as cache reads",
            share * 100.0,
            summary.prompt
        );
        assert!(share >= 0.85, "{protocol:?}: {share}");
        // The receipt reports the summarizer's cached and uncached input apart.
        assert_eq!(result.usage.cache_read_tokens, summary.cached);
        let receipt = result.receipt.unwrap();
        assert_eq!(receipt.summarizer_cache_read_tokens, summary.cached);
        assert_eq!(
            receipt.summarizer_uncached_input_tokens(),
            summary.prompt - summary.cached
        );
    }
}

#[tokio::test]
async fn without_the_agents_request_the_ordinary_summary_request_reads_nothing() {
    let (addr, billing) = start().await;
    let messages = history(24);
    let body = agent_body(Protocol::OpenAi, &messages);
    send_agent_request(Protocol::OpenAi, addr, &body).await;
    let result = compactor(backend(Protocol::OpenAi, addr))
        .compact(&messages, CompactOptions::default())
        .await
        .unwrap();
    assert!(!result.fallback);
    let seen = billing.seen.lock().unwrap().clone();
    let summary = &seen[1].1;
    assert_eq!(summary.cached, 0, "a new prompt shares no prefix with the agent's");
    assert_eq!(summary.body["model"], "summarizer-model");
    assert_eq!(result.receipt.unwrap().summarizer_cache_read_tokens, 0);
}

#[tokio::test]
async fn a_prepared_pass_carries_the_agents_request_into_its_task() {
    let (addr, billing) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let session = Session::create(dir.path().join("s.jsonl"), SessionOptions::new()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let mut manager = ContextManager::new(Arc::new(compactor(backend(Protocol::OpenAi, addr))), session)
        .with_preparation(PrepareOptions::fixed(0.3))
        .with_observer(Arc::new(move |e: &ContextEvent| sink.lock().unwrap().push(e.clone())));
    for message in history(24) {
        manager.push(message).unwrap();
    }
    let body = agent_body(Protocol::OpenAi, manager.messages());
    send_agent_request(Protocol::OpenAi, addr, &body).await;
    let agent = AgentRequest {
        protocol: Protocol::OpenAi,
        body,
    }
    .pass_context();
    let request = RequestShape::new().with_pass(&agent);
    let out = manager.prepare(request, CancellationToken::new()).await.unwrap();
    assert!(out.pass.is_none(), "the request went out as it was");
    manager.settle_preparation().await;
    let seen = billing.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].1.cached as f64 >= 0.85 * seen[1].1.prompt as f64);
    assert!(
        events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, ContextEvent::PreparationStarted { .. }))
    );
}
