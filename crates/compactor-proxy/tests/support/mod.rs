//! Test support: a scripted upstream on 127.0.0.1 (a real axum server that records what
//! it received), a proxy in front of it, and the Python SDK venv.
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use compactor_proxy::ProxyConfig;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::responses::ResponsesRequest;
use llm_compactor::format::{Document, Format};
use llm_compactor::store::SessionStore;
use llm_compactor::{Compactor, CompactorConfig, Message};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub mod anthropic_cache;

/// One request the upstream received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub api_key: Option<String>,
    pub session_header: Option<String>,
    pub body: Value,
}

impl Received {
    /// The conversation it carried, in the library's model.
    pub fn messages(&self) -> Vec<Message> {
        if self.path.ends_with("/responses") {
            // A request the proxy forwards unmodelled (`previous_response_id`) has none.
            return ResponsesRequest::from_value(self.body.clone(), "upstream")
                .map(|r| r.messages().to_vec())
                .unwrap_or_default();
        }
        let format = if self.path.ends_with("/messages") {
            Format::Anthropic
        } else {
            Format::OpenAi
        };
        Document::from_value(self.body.clone(), Some(format), "upstream")
            .unwrap()
            .into_messages()
    }

    /// Its heuristic token count.
    pub fn tokens(&self) -> usize {
        HeuristicCounter.count_messages(&self.messages())
    }

    /// The conversation as it went on the wire: the Responses API's `input` items, or
    /// the `messages`.
    pub fn wire_conversation(&self) -> &[Value] {
        let field = if self.path.ends_with("/responses") {
            "input"
        } else {
            "messages"
        };
        self.body[field].as_array().map(Vec::as_slice).unwrap_or_default()
    }
}

/// Checks that the proxy compacted at least twice, and that a request's wire
/// conversation failed to extend the previous one's (a broken cache prefix) exactly at
/// the rounds where it compacted.
pub async fn assert_the_prefix_breaks_only_at_compactions(proxy: &str, received: &[Received]) {
    let breaks = received
        .windows(2)
        .filter(|pair| {
            let (prev, next) = (pair[0].wire_conversation(), pair[1].wire_conversation());
            next.len() < prev.len() || next[..prev.len()] != prev[..]
        })
        .count();
    let metrics = metrics(proxy).await;
    let compactions = metric(&metrics, "compactor_proxy_compactions_total") as usize;
    assert!(compactions >= 2, "the run should compact: {metrics}");
    assert_eq!(breaks, compactions, "the prefix breaks only at compaction rounds");
}

/// What the scripted upstream does and what it saw.
#[derive(Default)]
pub struct Script {
    pub received: Mutex<Vec<Received>>,
    /// Assistant messages (OpenAI shape) served in order to model `replay`.
    pub replies: Mutex<VecDeque<Value>>,
    /// A gate the streaming answer of model `gated` waits on between its two halves.
    pub gate: Mutex<Option<oneshot::Receiver<()>>>,
    /// Model `replay` reads back once through `compactor_expand` when offered it.
    pub replay_expands: std::sync::atomic::AtomicBool,
    /// A request that carries an expansion's result is answered 503 (the follow-up fails).
    pub fail_follow_ups: std::sync::atomic::AtomicBool,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub script: Arc<Script>,
}

impl Upstream {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn received(&self) -> Vec<Received> {
        self.script.received.lock().unwrap().clone()
    }
}

/// Starts the scripted upstream.
pub async fn upstream() -> Upstream {
    let script = Arc::new(Script::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/messages", post(messages))
        .route("/v1/responses", post(responses))
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({"object":"list","data":[{"id":"m","object":"model"}]})) }),
        )
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Upstream { addr, script }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
}

fn record(script: &Script, path: &str, headers: &HeaderMap, body: &Value) -> Received {
    let received = Received {
        path: path.to_owned(),
        authorization: header(headers, "authorization"),
        api_key: header(headers, "x-api-key"),
        session_header: header(headers, "x-compactor-session"),
        body: body.clone(),
    };
    script.received.lock().unwrap().push(received.clone());
    received
}

fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"type": kind, "code": kind, "message": message}})),
    )
        .into_response()
}

/// Errors every model name can ask for, shared by both APIs.
fn scripted_error(model: &str, tokens: usize) -> Option<Response> {
    if model == "err-401" {
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "Incorrect API key provided",
        ));
    }
    if model == "err-429" {
        let mut response = error(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            "Rate limit reached",
        );
        response.headers_mut().insert("retry-after", "7".parse().unwrap());
        return Some(response);
    }
    if let Some(limit) = model.strip_prefix("window-") {
        let limit: usize = limit.parse().unwrap();
        if tokens > limit {
            return Some(error(
                StatusCode::BAD_REQUEST,
                "context_length_exceeded",
                &format!(
                    "This model's maximum context length is {limit} tokens. However, your messages resulted in {tokens} tokens."
                ),
            ));
        }
    }
    None
}

/// What a scripted upstream answers `received` with: its model, its tokens and the
/// reply, or the error its model asks for.
fn scripted(script: &Script, received: &Received) -> Result<(String, usize, Value), Box<Response>> {
    let model = received.body["model"].as_str().unwrap_or_default().to_owned();
    let tokens = received.tokens();
    if let Some(response) = scripted_error(&model, tokens) {
        return Err(Box::new(response));
    }
    let messages = received.messages();
    if script.fail_follow_ups.load(std::sync::atomic::Ordering::Relaxed)
        && messages
            .last()
            .is_some_and(|m| m.role == llm_compactor::Role::Tool && m.content.text().starts_with("=== #"))
    {
        return Err(Box::new(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "Try again later",
        )));
    }
    if model.starts_with("expander")
        && let Some(reply) = expander_reply(&model, &received.body, &messages)
    {
        return Ok((model, tokens, reply));
    }
    // A replayed trajectory whose model reads back once: the call, then the trajectory
    // goes on as it was.
    if model == "replay"
        && script.replay_expands.load(std::sync::atomic::Ordering::Relaxed)
        && let Some(reply) =
            expander_reply("expander", &received.body, &messages).filter(|r| r.get("tool_calls").is_some())
    {
        return Ok((model, tokens, reply));
    }
    let reply = next_reply(script, &model, messages.last().unwrap());
    Ok((model, tokens, reply))
}

/// The tool the proxy offers with `--expand-tool`.
pub const EXPAND_TOOL: &str = "compactor_expand";

/// True when a request declares `compactor_expand`, in any route's shape.
pub fn offers_expand(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|tool| tool["name"] == EXPAND_TOOL || tool["function"]["name"] == EXPAND_TOOL)
}

/// The handle model `expander` asks for: the one the last user message names after
/// "expand ", else the first elision stub's, else the first the ledger names.
pub fn wanted_handle(messages: &[Message]) -> Option<String> {
    let handle_at = |text: &str, at: usize| -> Option<String> {
        let candidate = text.get(at..at + 11)?;
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (candidate.starts_with('#') && candidate[1..].bytes().all(hex)).then(|| candidate.to_owned())
    };
    let find_after = |texts: Vec<String>, marker: &str| {
        texts.into_iter().find_map(|text| {
            text.match_indices(marker)
                .find_map(|(at, _)| handle_at(&text, at + marker.len() - 1))
        })
    };
    let last_user = messages.iter().rev().find(|m| m.role == llm_compactor::Role::User);
    let texts = || messages.iter().map(|m| m.content.text()).collect::<Vec<_>>();
    find_after(last_user.map(|m| m.content.text()).into_iter().collect(), "expand #")
        .or_else(|| find_after(texts(), "with \"#"))
        .or_else(|| find_after(texts(), "[#"))
}

/// Model `expander`: once offered `compactor_expand`, it asks for [`wanted_handle`]; once
/// answered, it says what it read; told `tool_choice` none, it answers in text. `None`:
/// it answers as model `echo` does. Its variants: `expander-chatty` says a sentence
/// before its call, `expander-mixed` also calls `bash` in the same turn,
/// `expander-greedy` asks again after every answer.
fn expander_reply(model: &str, body: &Value, messages: &[Message]) -> Option<Value> {
    let greedy = model == "expander-greedy";
    let last = messages.last()?;
    if !greedy && last.role == llm_compactor::Role::Tool && last.content.text().starts_with("=== #") {
        let text = last.content.text();
        let read: String = text.chars().take(400).collect();
        return Some(json!({"role": "assistant", "content": format!("read back: {read}")}));
    }
    if !offers_expand(body) {
        return None;
    }
    if body["tool_choice"] == "none" || body["tool_choice"]["type"] == "none" {
        return Some(json!({"role": "assistant", "content": "answered without reading more"}));
    }
    let read_before = messages
        .iter()
        .any(|m| m.role == llm_compactor::Role::Tool && m.content.text().starts_with("=== #"));
    let asked = last.role == llm_compactor::Role::User && last.content.text().contains("expand #");
    if read_before && !asked && !greedy {
        return None;
    }
    let handle = wanted_handle(messages)?;
    let arguments = json!({"handles": [handle]}).to_string();
    let mut calls = vec![json!({"id": "call_expand_1", "type": "function",
                                "function": {"name": EXPAND_TOOL, "arguments": arguments}})];
    if model == "expander-mixed" {
        calls.insert(
            0,
            json!({"id": "call_bash_1", "type": "function",
                               "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}),
        );
    }
    let content = if model == "expander-chatty" {
        json!("Let me check the earlier output. ")
    } else {
        Value::Null
    };
    Some(json!({"role": "assistant", "content": content, "tool_calls": calls}))
}

fn next_reply(script: &Script, model: &str, last: &Message) -> Value {
    if model == "replay" {
        return script.replies.lock().unwrap().pop_front().expect("a scripted reply");
    }
    if last.content.text().contains("use a tool") {
        return json!({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]});
    }
    json!({"role":"assistant","content": format!("echo: {}", last.content.text())})
}

async fn chat(State(script): State<Arc<Script>>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> Response {
    let received = record(&script, "/v1/chat/completions", &headers, &body);
    let (model, tokens, reply) = match scripted(&script, &received) {
        Ok(scripted) => scripted,
        Err(response) => return *response,
    };
    let finish = if reply.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let usage = json!({"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5});
    if body["stream"].as_bool() != Some(true) {
        return axum::Json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
            "usage": usage,
        }))
        .into_response();
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":model,
                   "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
        )
    };
    let mut first = vec![chunk(json!({"role":"assistant","content":""}), Value::Null)];
    let mut second = Vec::new();
    if let Some(calls) = reply.get("tool_calls").and_then(Value::as_array) {
        if let Some(text) = reply["content"].as_str() {
            first.push(chunk(json!({"content": text}), Value::Null));
        }
        for (i, call) in calls.iter().enumerate() {
            let mut call = call.clone();
            call["index"] = json!(i);
            second.push(chunk(json!({"tool_calls":[call]}), Value::Null));
        }
    } else {
        let text = reply["content"].as_str().unwrap_or_default().to_owned();
        let (a, b) = text.split_at(text.len() / 2);
        first.push(chunk(json!({"content": a}), Value::Null));
        second.push(chunk(json!({"content": b}), Value::Null));
    }
    second.push(chunk(json!({}), json!(finish)));
    if body["stream_options"]["include_usage"].as_bool() == Some(true) {
        second.push(format!(
            "data: {}\n\n",
            json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":model,"choices":[],"usage":usage})
        ));
    }
    second.push("data: [DONE]\n\n".to_owned());
    let gate = if model == "gated" {
        script.gate.lock().unwrap().take()
    } else {
        None
    };
    sse(first, second, gate)
}

fn sse(first: Vec<String>, second: Vec<String>, gate: Option<oneshot::Receiver<()>>) -> Response {
    let stream = async_stream(first, second, gate);
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// The first half at once; the second after the gate opens (at once without one).
fn async_stream(
    first: Vec<String>,
    second: Vec<String>,
    gate: Option<oneshot::Receiver<()>>,
) -> impl futures_util::Stream<Item = Result<String, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(64);
    tokio::spawn(async move {
        let first = first.concat();
        let _ = tx.send(Ok(first)).await;
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        for part in second {
            let _ = tx.send(Ok(part)).await;
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) })
}

async fn messages(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let received = record(&script, "/v1/messages", &headers, &body);
    let (model, tokens, reply) = match scripted(&script, &received) {
        Ok(scripted) => scripted,
        Err(response) => return *response,
    };
    let mut content = Vec::new();
    if let Some(text) = reply["content"].as_str() {
        content.push(json!({"type":"text","text":text}));
    }
    for call in reply.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
        let input: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        content.push(json!({"type":"tool_use","id":call["id"],"name":call["function"]["name"],"input":input}));
    }
    let stop = if reply.get("tool_calls").is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    if body["stream"].as_bool() != Some(true) {
        return axum::Json(json!({
            "id":"msg_1","type":"message","role":"assistant","model":model,"content":content,
            "stop_reason":stop,"stop_sequence":null,
            "usage":{"input_tokens":tokens,"output_tokens":5}
        }))
        .into_response();
    }
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut first = vec![event(
        "message_start",
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":model,
               "content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":tokens,"output_tokens":1}}}),
    )];
    let mut second = Vec::new();
    for (i, block) in content.iter().enumerate() {
        if block["type"] == "text" {
            first.push(event(
                "content_block_start",
                json!({"type":"content_block_start","index":i,"content_block":{"type":"text","text":""}}),
            ));
            first.push(event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":i,"delta":{"type":"text_delta","text":block["text"]}}),
            ));
        } else {
            second.push(event("content_block_start", json!({"type":"content_block_start","index":i,"content_block":{"type":"tool_use","id":block["id"],"name":block["name"],"input":{}}})));
            second.push(event("content_block_delta", json!({"type":"content_block_delta","index":i,"delta":{"type":"input_json_delta","partial_json":block["input"].to_string()}})));
        }
        second.push(event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":i}),
        ));
    }
    second.push(event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},"usage":{"output_tokens":5}}),
    ));
    second.push(event("message_stop", json!({"type":"message_stop"})));
    sse(first, second, None)
}

/// The Responses API: the same scripted replies as an output item, usage as
/// `input_tokens`; streamed as `response.*` events, the usage in `response.completed`.
/// A request with `echo_body: true` in its metadata gets its own body back.
async fn responses(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let received = record(&script, "/v1/responses", &headers, &body);
    if body["metadata"]["echo_body"] == "true" {
        return axum::Json(body).into_response();
    }
    let (model, tokens, reply) = match scripted(&script, &received) {
        Ok(scripted) => scripted,
        Err(response) => return *response,
    };
    // The reply's text as a message item, then each call as a function_call item; ids
    // unique per response, as the API's are.
    let n = script.received.lock().unwrap().len();
    let mut output = Vec::new();
    if let Some(text) = reply["content"].as_str() {
        output.push(
            json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    for (i, call) in reply
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        output.push(json!({"type": "function_call", "id": format!("fc_{n}_{}", i + 1), "call_id": call["id"],
                           "name": call["function"]["name"], "arguments": call["function"]["arguments"], "status": "completed"}));
    }
    let response = |status: &str, output: Vec<Value>, usage: Value| {
        json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1, "status": status, "model": model,
               "output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
               "usage": usage})
    };
    let usage = json!({"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": tokens + 5});
    if body["stream"].as_bool() != Some(true) {
        return axum::Json(response("completed", output, usage)).into_response();
    }
    // The events the API sends, in its order: each output item added, its parts
    // streamed, done; the usage in `response.completed`.
    let mut sequence = 0;
    let mut event = |mut data: Value| {
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
    };
    let first = vec![event(
        json!({"type": "response.created", "response": response("in_progress", vec![], Value::Null)}),
    )];
    let mut second = Vec::new();
    for (index, item) in output.iter().enumerate() {
        let id = item["id"].clone();
        if item["type"] == "message" {
            let text = item["content"][0]["text"].as_str().unwrap_or_default().to_owned();
            let mut empty = item.clone();
            empty["content"] = json!([]);
            empty["status"] = json!("in_progress");
            second.push(event(
                json!({"type": "response.output_item.added", "output_index": index, "item": empty}),
            ));
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            second.push(event(json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0, "part": part})));
            let (a, b) = text.split_at(text.len() / 2);
            for delta in [a, b] {
                second.push(event(
                    json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                                          "content_index": 0, "delta": delta, "logprobs": []}),
                ));
            }
            second.push(event(
                json!({"type": "response.output_text.done", "item_id": id, "output_index": index,
                                      "content_index": 0, "text": text, "logprobs": []}),
            ));
            let part = json!({"type": "output_text", "text": text, "annotations": []});
            second.push(event(json!({"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0, "part": part})));
        } else {
            let mut empty = item.clone();
            empty["arguments"] = json!("");
            empty["status"] = json!("in_progress");
            second.push(event(
                json!({"type": "response.output_item.added", "output_index": index, "item": empty}),
            ));
            second.push(event(
                json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index,
                                      "delta": item["arguments"]}),
            ));
            second.push(event(
                json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index,
                                      "arguments": item["arguments"]}),
            ));
        }
        second.push(event(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        ));
    }
    second.push(event(
        json!({"type": "response.completed", "response": response("completed", output, usage)}),
    ));
    sse(first, second, None)
}

/// A running proxy.
pub struct Proxy {
    pub addr: SocketAddr,
    pub store: Arc<dyn SessionStore>,
    pub shutdown: Option<oneshot::Sender<()>>,
    pub handle: tokio::task::JoinHandle<Result<(), compactor_proxy::ProxyError>>,
}

impl Proxy {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A compactor with this budget: heuristic counter, keep 4 recent, no summarizer (the
/// pass hard-trims, which is deterministic).
pub fn compactor(budget: usize) -> Arc<Compactor> {
    let config = CompactorConfig::builder(budget).keep_recent(4).build().unwrap();
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)))
}

/// Starts a proxy in front of `upstream` with `store`.
pub async fn proxy(upstream: &str, budget: usize, store: Arc<dyn SessionStore>) -> Proxy {
    proxy_with(ProxyConfig::builder(upstream, compactor(budget), store.clone()), store).await
}

pub async fn proxy_with(builder: compactor_proxy::ProxyConfigBuilder, store: Arc<dyn SessionStore>) -> Proxy {
    let config = builder.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(compactor_proxy::serve(config, listener, async move {
        let _ = rx.await;
    }));
    Proxy {
        addr,
        store,
        shutdown: Some(tx),
        handle,
    }
}

/// The Python with the official SDKs (`scripts/python-sdks.sh` makes it), or `None`
/// after printing a notice. Under `CI=true` its absence fails the test.
pub fn python() -> Option<PathBuf> {
    let venv = std::env::var_os("COMPACTOR_PY_SDKS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py-sdks"));
    let python = venv.join("bin/python");
    if python.exists() {
        return Some(python);
    }
    let notice = format!(
        "the Python SDK venv is missing at {} (run scripts/python-sdks.sh)",
        venv.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{notice}");
    }
    eprintln!("SKIPPED: {notice}");
    None
}

/// The directory of the Python test clients.
pub fn py_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py")
}

/// Runs a Python client; panics with its output when it fails.
pub async fn run_python(python: &PathBuf, script: &str, args: &[&str], env: &[(&str, String)]) -> String {
    let mut command = tokio::process::Command::new(python);
    command.arg(py_dir().join(script)).args(args);
    for (k, v) in env {
        command.env(k, v);
    }
    command.env_remove("OPENAI_BASE_URL").env_remove("ANTHROPIC_BASE_URL");
    let output = command.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{script} failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

/// The HTTP client the tests talk to a proxy with (a 30 s timeout: a hung proxy fails the
/// test instead of hanging it).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap()
}

/// The proxy's `/metrics` text.
pub async fn metrics(proxy: &str) -> String {
    client()
        .get(format!("{proxy}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// POSTs `body` to the proxy's chat completions in `session`, with the client's key when
/// one is given.
pub async fn post_chat(proxy: &str, session: &str, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = client()
        .post(format!("{proxy}/v1/chat/completions"))
        .header("x-compactor-session", session)
        .json(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap()
}

/// [`post_chat`] without a key, the answer's JSON.
pub async fn chat_in_session(proxy: &str, session: &str, body: &Value) -> Value {
    post_chat(proxy, session, None, body).await.json().await.unwrap()
}

/// The value of the metric line `name` (with its labels) in a `/metrics` text.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The transcript of `session` as the store holds it: exported, and read back.
pub async fn stored_transcript(store: &dyn SessionStore, session: &str) -> llm_compactor::session::Transcript {
    let exported = llm_compactor::store::export_jsonl(store, session).await.unwrap();
    llm_compactor::session::Transcript::parse(std::path::Path::new("s.jsonl"), exported.as_bytes()).unwrap()
}

/// What replaying `session`'s transcript rebuilds, without ids (as the wire carries it).
pub async fn replayed(store: &dyn SessionStore, session: &str) -> Vec<Message> {
    stored_transcript(store, session)
        .await
        .messages()
        .iter()
        .map(|m| Message { id: None, ..m.clone() })
        .collect()
}
