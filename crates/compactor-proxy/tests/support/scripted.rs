//! The scripted upstream: a real axum server on 127.0.0.1 that speaks chat completions,
//! Messages and Responses (streamed and not), answers what its model name asks for
//! (`echo`, `replay`, errors, a window, `expander`), and records every request.
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use llm_compactor::Message;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::Received;
use super::expander::expander_reply;

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
    /// Tokens every chat completion's usage reports beyond the messages (tool
    /// declarations, hidden framing: what only the provider's bill shows).
    pub usage_overhead: std::sync::atomic::AtomicUsize,
    /// Paths asked for that the upstream has no route for (answered 404), in order.
    pub unrouted: Mutex<Vec<String>>,
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
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route(
            "/v1/models",
            get(|| async { axum::Json(json!({"object":"list","data":[{"id":"m","object":"model"}]})) }),
        )
        .fallback(unrouted)
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Upstream { addr, script }
}

/// A path the upstream has no route for: recorded, and answered 404 as a server
/// without that endpoint does.
async fn unrouted(State(script): State<Arc<Script>>, uri: axum::http::Uri) -> Response {
    script.unrouted.lock().unwrap().push(uri.path().to_owned());
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no route for {}", uri.path()),
    )
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
        anthropic_beta: header(headers, "anthropic-beta"),
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
    let billed = tokens + script.usage_overhead.load(std::sync::atomic::Ordering::Relaxed);
    let usage = json!({"prompt_tokens": billed, "completion_tokens": 5, "total_tokens": billed + 5});
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

/// Anthropic's token count: recorded, answered with the heuristic count.
async fn count_tokens(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let received = record(&script, "/v1/messages/count_tokens", &headers, &body);
    axum::Json(json!({"input_tokens": received.tokens()})).into_response()
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
    // Codex's remote compaction item, which only OpenAI's API knows.
    if body["input"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["type"] == "compaction_trigger"))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "Invalid value: 'compaction_trigger'.",
        );
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
