//! The scripted model on OpenAI's Responses API (`POST /v1/responses`), as Codex CLI
//! speaks it: streamed `response.created`, `response.output_item.added` / `.done` per
//! output item, and `response.completed` carrying the whole response and its usage.
//!
//! A request is judged before it is answered: a call without its output or an output
//! without its call, then the context window. The shell tool is learned from the
//! request: Codex's `exec_command` (`{"cmd": …}`), a `shell` taking an argv, or any
//! function taking a `command` string.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use llm_compactor::format::responses::ResponsesRequest;
use serde_json::{Value, json};

use super::model::{self, ModelState, Turn};
use super::rules;

/// `POST /v1/responses`.
pub async fn responses(
    State(state): State<Arc<ModelState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let mut received = model::receive(&method, &uri, &headers, &bytes);
    let body = received.body.clone();
    let conversation = match ResponsesRequest::from_value(body.clone(), "request") {
        Ok(request) => request.into_messages(),
        Err(e) => return refuse(&state, received, format!("invalid request: {e}")),
    };
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    received.tokens = state.billed(&conversation, &tools);
    let window = state.options.window;
    let refused = rules::check_responses_pairing(&body).err().or_else(|| {
        (received.tokens > window).then(|| {
            format!(
                "Your input exceeds the context window of this model: {} tokens > {window}.",
                received.tokens
            )
        })
    });
    if let Some(message) = refused {
        return refuse(&state, received, message);
    }
    let tool = shell_call(&tools);
    let newest = newest_output(&body);
    received.newest_cut = newest.as_deref().is_some_and(model::cut);
    let mut turn = model::next_turn(!tools.is_empty(), newest.as_deref(), state.options.rounds);
    if tool.is_none() && matches!(turn, Turn::Call(_)) {
        turn = Turn::Text;
    }
    received.turn = Some(turn);
    let tokens = received.tokens;
    let index = state.record(received);
    let item = match (turn, tool) {
        (Turn::Call(n), Some((name, arguments))) => json!({
            "type": "function_call", "id": format!("fc_scripted_{index:05}"), "call_id": format!("call_scripted_{index:05}"),
            "name": name, "arguments": arguments(&model::command(n)).to_string(), "status": "completed"}),
        _ => json!({
            "type": "message", "id": format!("msg_scripted_{index:05}"), "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": model::text_of(turn), "annotations": []}]}),
    };
    let usage = json!({"input_tokens": tokens, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 24, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens + 24});
    let response = json!({"id": format!("resp_scripted_{index:05}"), "object": "response", "created_at": 1,
        "status": "completed", "model": body["model"], "output": [item], "usage": usage});
    if body["stream"] == json!(true) {
        stream(response)
    } else {
        axum::Json(response).into_response()
    }
}

fn refuse(state: &ModelState, mut received: model::Received, message: String) -> Response {
    received.status = 400;
    received.error = Some(message.clone());
    state.record(received);
    model::refusal(false, &message)
}

/// How a command becomes the arguments of a function.
type Arguments = fn(&str) -> Value;

/// The client's shell function and how it takes a command.
fn shell_call(tools: &[Value]) -> Option<(String, Arguments)> {
    let function = |name: &str| tools.iter().find(|t| t["type"] == "function" && t["name"] == name);
    if function("exec_command").is_some() {
        return Some(("exec_command".to_owned(), |c| json!({"cmd": c})));
    }
    if function("shell").is_some() {
        return Some(("shell".to_owned(), |c| json!({"command": ["bash", "-lc", c]})));
    }
    tools
        .iter()
        .find(|t| t["type"] == "function" && t["parameters"]["properties"]["command"]["type"] == "string")
        .and_then(|t| t["name"].as_str())
        .map(|name| {
            (
                name.to_owned(),
                (|c| json!({"command": c, "description": "Print the round's output"})) as Arguments,
            )
        })
}

/// The text of the newest tool output of the request.
fn newest_output(body: &Value) -> Option<String> {
    let item = body["input"]
        .as_array()?
        .iter()
        .rev()
        .find(|i| i["type"].as_str().is_some_and(|t| t.ends_with("_call_output")))?;
    Some(match &item["output"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    })
}

/// The SSE rendering of `response`.
fn stream(response: Value) -> Response {
    let mut sequence = 0;
    let mut event = |mut data: Value| {
        data["sequence_number"] = json!(sequence);
        sequence += 1;
        format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap_or_default())
    };
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    created.as_object_mut().unwrap().remove("usage");
    let mut out = event(json!({"type": "response.created", "response": created}));
    for (index, item) in response["output"].as_array().into_iter().flatten().enumerate() {
        out += &event(json!({"type": "response.output_item.added", "output_index": index, "item": item}));
        if let Some(text) = item["content"][0]["text"].as_str() {
            out += &event(json!({"type": "response.output_text.delta", "output_index": index,
                "item_id": item["id"], "content_index": 0, "delta": text}));
        }
        out += &event(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    out += &event(json!({"type": "response.completed", "response": response}));
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from(out))
        .unwrap()
}
