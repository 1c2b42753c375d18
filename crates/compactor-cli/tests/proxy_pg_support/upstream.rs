//! A scripted OpenAI-compatible upstream on 127.0.0.1 for the multi-instance tests: a
//! real axum server that answers every request at once, reports usage (the heuristic
//! count, which the proxies calibrate to), and checks what it receives.
//!
//! Why its own server rather than the proxy crate's test upstream: these sessions run
//! for a hundred rounds with a tool call every few rounds, so call ids must be unique per
//! call (the shared upstream answers every call as `call_1`), and the checks (budget,
//! orphan results, unanswered calls) are made on every request as it arrives, per
//! session.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::{Document, Format};
use serde_json::{Value, json};

/// What the upstream saw.
#[derive(Default)]
pub struct Seen {
    /// Every problem found in a request (over budget, orphan result, unanswered call).
    pub violations: Vec<String>,
    /// Per session (the `x-compactor-session` header): the messages of its last request.
    pub last: BTreeMap<String, Value>,
    /// Per session: how many requests arrived.
    pub requests: BTreeMap<String, usize>,
    /// The largest request, in tokens.
    pub max_tokens: usize,
}

/// The running upstream.
pub struct Upstream {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    seen: Arc<(usize, Mutex<Seen>)>,
}

impl Upstream {
    /// Starts it; requests over `budget` tokens are violations.
    pub async fn start(budget: usize) -> Upstream {
        let seen = Arc::new((budget, Mutex::new(Seen::default())));
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Upstream { url, seen }
    }

    /// Runs `f` on what was seen so far.
    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.seen.1.lock().unwrap())
    }
}

/// Every tool result answers a call made before it and not yet answered, and no call is
/// left unanswered when the next non-tool message comes (or at the end).
fn orphans(messages: &[Value]) -> Option<String> {
    let mut open: HashSet<String> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or_default();
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or_default();
            if !open.remove(id) {
                return Some(format!("message {i} answers unknown call {id:?}"));
            }
            continue;
        }
        if !open.is_empty() {
            return Some(format!("message {i} ({role}) follows unanswered calls {open:?}"));
        }
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            open.insert(call["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    (!open.is_empty()).then(|| format!("the request ends with unanswered calls {open:?}"))
}

async fn chat(
    State(seen): State<Arc<(usize, Mutex<Seen>)>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let budget = seen.0;
    let raw = body["messages"].as_array().cloned().unwrap_or_default();
    // The proxy keeps its session header to itself: the agent's system prompt (always
    // kept) names the session.
    let session = raw
        .first()
        .and_then(|m| m["content"].as_str())
        .and_then(|text| text.strip_prefix("You are agent "))
        .and_then(|rest| rest.split('.').next())
        .or_else(|| headers.get("x-compactor-session").and_then(|v| v.to_str().ok()))
        .unwrap_or("?")
        .to_owned();
    let messages = Document::from_value(body.clone(), Some(Format::OpenAi), "upstream")
        .expect("the proxy forwards a valid conversation")
        .into_messages();
    let tokens = HeuristicCounter.count_messages(&messages);
    {
        let mut seen = seen.1.lock().unwrap();
        if tokens > budget {
            seen.violations.push(format!(
                "{session}: a request of {tokens} tokens, over the budget of {budget}"
            ));
        }
        if let Some(problem) = orphans(&raw) {
            seen.violations.push(format!("{session}: {problem}"));
        }
        seen.max_tokens = seen.max_tokens.max(tokens);
        seen.last.insert(session.clone(), Value::Array(raw.clone()));
        *seen.requests.entry(session).or_default() += 1;
    }
    let last = raw.last().cloned().unwrap_or(Value::Null);
    let text = last["content"].as_str().unwrap_or_default();
    // "S rN ..." names the call uniquely.
    let tag: Vec<&str> = text.split_whitespace().take(2).collect();
    let reply = if last["role"] == "user" && text.contains("use a tool") {
        json!({"role":"assistant","content":null,"tool_calls":[{"id": format!("call_{}", tag.join("_")),
            "type":"function","function":{"name":"lookup","arguments":"{\"q\":\"x\"}"}}]})
    } else {
        json!({"role":"assistant","content": format!("ok {}", tag.join(" "))})
    };
    let finish = if reply.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    axum::Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
        "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5},
    }))
    .into_response()
}
