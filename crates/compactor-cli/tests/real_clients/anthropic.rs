//! The scripted model on Anthropic's Messages API (`POST /v1/messages`), streamed and
//! not, in exactly the event sequence the SDKs parse: `message_start`, then per block
//! `content_block_start` / `_delta` / `_stop`, `message_delta` with the usage, and
//! `message_stop`.
//!
//! A request is judged before it is answered, in Anthropic's order: a field without its
//! beta, more than four
//! breakpoints, a broken tool pairing, thinking bound to another conversation (refused
//! only when the run enforces it; always counted), then the context window. With
//! thinking enabled every answer opens with a `thinking` block signed with its prefix
//! (empty when the client asked for `display: "omitted"`, as the API sends it).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use llm_compactor::format::{Document, Format};
use serde_json::{Value, json};

use super::model::{self, ModelState, Turn};
use super::rules;

/// The placeholder of a tool result the server cleared.
const CLEARED: &str = "[tool result cleared]";

/// `POST /v1/messages`.
pub async fn messages(
    State(state): State<Arc<ModelState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let mut received = model::receive(&method, &uri, &headers, &bytes);
    let body = received.body.clone();
    let thinking = rules::check_thinking(&body);
    // What the model reads: without the blocks it dropped, with the results the server
    // cleared.
    let mut read = body.clone();
    read["messages"] = Value::Array(thinking.read.clone());
    received.cleared = llm_compactor::format::context_management::cleared_by_provider(&mut read, CLEARED).unwrap_or(0);
    let conversation = match Document::from_value(read, Some(Format::Anthropic), "request") {
        Ok(document) => document.into_messages(),
        Err(e) => return refuse(&state, received, format!("invalid request: {e}")),
    };
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    received.tokens = state.billed(&conversation, &tools);
    received.marks = rules::breakpoints(&body);
    received.thinking = thinking.blocks;
    received.invalid_thinking = thinking.invalid.len();
    received.dropped_thinking = thinking.dropped;
    received.unopened_loop = thinking.unopened_loop.is_some();
    let window = state.options.window;
    let betas = headers
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let refused = rules::check_betas(&body, betas)
        .err()
        .or_else(|| rules::check_breakpoints(&body).err())
        .or_else(|| rules::check_anthropic_pairing(&body).err())
        .or_else(|| thinking.error().filter(|_| state.options.enforce_thinking))
        .or_else(|| {
            (received.tokens > window)
                .then(|| format!("prompt is too long: {} tokens > {window} maximum", received.tokens))
        });
    if let Some(message) = refused {
        return refuse(&state, received, message);
    }
    let tool = shell_tool(&tools);
    let newest = newest_result(&body);
    received.newest_cut = newest.as_deref().is_some_and(model::cut);
    let mut turn = model::next_turn(!tools.is_empty(), newest.as_deref(), state.options.rounds);
    if tool.is_none() && matches!(turn, Turn::Call(_)) {
        turn = Turn::Text;
    }
    received.turn = Some(turn);
    let index = state.record(received);
    let content = answer(&body, &thinking.read, turn, tool.as_deref(), index);
    let stop = if matches!(turn, Turn::Call(_)) {
        "tool_use"
    } else {
        "end_turn"
    };
    let tokens = state.received.lock().unwrap()[index].tokens;
    let usage = json!({"input_tokens": tokens, "output_tokens": 24,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    let message = json!({"id": format!("msg_scripted_{index:05}"), "type": "message", "role": "assistant",
        "model": body["model"], "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage});
    if body["stream"] == json!(true) {
        stream(message)
    } else {
        axum::Json(message).into_response()
    }
}

fn refuse(state: &ModelState, mut received: model::Received, message: String) -> Response {
    received.status = 400;
    received.error = Some(message.clone());
    state.record(received);
    model::refusal(true, &message)
}

/// The client's shell tool: `Bash` (Claude Code), else any tool taking a `command`.
fn shell_tool(tools: &[Value]) -> Option<String> {
    let takes_command = |t: &&Value| t["input_schema"]["properties"]["command"].is_object();
    tools
        .iter()
        .find(|t| t["name"] == "Bash")
        .or_else(|| tools.iter().find(takes_command))
        .and_then(|t| t["name"].as_str().map(str::to_owned))
}

/// The text of the newest `tool_result` block of the request.
fn newest_result(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    messages.iter().rev().find_map(|m| {
        let blocks = rules::blocks(&m["content"]);
        let result = blocks.iter().rev().find(|b| b["type"] == "tool_result")?;
        let text = rules::blocks(&result["content"])
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Some(text)
    })
}

/// The content blocks of the answer.
fn answer(body: &Value, read: &[Value], turn: Turn, tool: Option<&str>, index: usize) -> Vec<Value> {
    let mut content = Vec::new();
    if rules::thinking_enabled(body) {
        let text = if body["thinking"]["display"] == "omitted" {
            String::new()
        } else {
            format!("The scripted model plans {turn:?}.")
        };
        content.push(json!({"type": "thinking", "thinking": text, "signature": rules::signature(body, read, &[])}));
    }
    match (turn, tool) {
        (Turn::Call(n), Some(name)) => content.push(json!({
            "type": "tool_use", "id": format!("toolu_scripted_{index:05}"), "name": name,
            "input": {"command": model::command(n), "description": format!("Print round {n}'s output")}
        })),
        _ => content.push(json!({"type": "text", "text": model::text_of(turn)})),
    }
    content
}

/// The SSE rendering of `message`.
fn stream(message: Value) -> Response {
    let event = |data: Value| format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or_default());
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    let mut out = event(json!({"type": "message_start", "message": start}));
    for (index, block) in message["content"].as_array().into_iter().flatten().enumerate() {
        let (opening, deltas) = match block["type"].as_str() {
            Some("thinking") => (
                json!({"type": "thinking", "thinking": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ],
            ),
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                vec![json!({"type": "input_json_delta", "partial_json": block["input"].to_string()})],
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": block["text"]})],
            ),
        };
        out += &event(json!({"type": "content_block_start", "index": index, "content_block": opening}));
        for delta in deltas {
            out += &event(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        }
        out += &event(json!({"type": "content_block_stop", "index": index}));
    }
    out += &event(json!({"type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
        "usage": message["usage"]}));
    out += &event(json!({"type": "message_stop"}));
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(out))
        .unwrap()
}
