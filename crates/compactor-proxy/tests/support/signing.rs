//! A Messages upstream that enforces Anthropic's preserved-thinking rules (issue 39): it
//! signs every thinking block it returns with a digest of the block's prefix (`system`,
//! `tools` and the messages before it, cache marks aside), checks every thinking block it
//! receives against its prefix in that request, answers the documented 400 when one
//! fails, and, when the request asks for `drop_block`, drops the failing blocks instead
//! (and counts them); a prefix is read as the model reads it, without the blocks the
//! request dropped.
//! Its model runs a tool loop: a thinking block and a `tool_use` every round, with a
//! long result the client sends back.
//! It applies Anthropic's server-side tool-result clearing (`clear_tool_uses_20250919`,
//! triggered by a number of tool uses) after the checks, as the API does: a server-side
//! edit is not an edit of the history a block is bound to. It refuses `context_management`
//! and `thinking.block_binding` without their betas in `anthropic-beta`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use llm_compactor::message::canonical_json;
use llm_compactor::plan::breakpoints::unmarked;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the signing upstream saw.
#[derive(Default)]
pub struct Seen {
    /// Every request body.
    pub bodies: Vec<Value>,
    /// Requests it answered 400 for a signature.
    pub refused: usize,
    /// Thinking blocks it dropped under `drop_block`.
    pub dropped: usize,
    /// Thinking blocks it checked and found valid.
    pub valid: usize,
    /// Tool results it cleared on the server, summed over requests.
    pub cleared: usize,
    /// Requests that asked it to clear tool results.
    pub clearing_requests: usize,
    /// The input tokens of each request as the model read it (after clearing).
    pub input_tokens: Vec<usize>,
}

pub struct Signing {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Seen>>,
}

impl Signing {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// The signature of a block whose prefix is `system`, `tools` and `messages`. Cache
/// marks are request annotations that move every request: not part of the prefix.
pub fn sign(system: &Value, tools: &Value, messages: &[Value]) -> String {
    let prefix = json!({"system": system, "tools": tools, "messages": messages});
    hex::encode(Sha256::digest(canonical_json(&unmarked(&prefix)).as_bytes()))
}

pub async fn signing_upstream() -> Signing {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Signing { addr, seen }
}

/// The placeholder a cleared tool result carries.
pub const CLEARED: &str = "[tool result cleared by the server]";

fn refused(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"type":"error","error":{"type":"invalid_request_error","message":message}})),
    )
        .into_response()
}

async fn messages(
    State(seen): State<Arc<Mutex<Seen>>>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut seen = seen.lock().unwrap();
    seen.bodies.push(body.clone());
    let betas = headers
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(',')
        .map(|b| b.trim().to_owned())
        .collect::<Vec<_>>();
    for (field, beta) in [
        ("/context_management", "context-management-2025-06-27"),
        ("/thinking/block_binding", "thinking-binding-controls-2026-08-01"),
    ] {
        if body.pointer(field).is_some() && !betas.iter().any(|b| b == beta) {
            return refused(format!("{field} requires the {beta} beta"));
        }
    }
    let system = body.get("system").cloned().unwrap_or(Value::Null);
    let tools = body.get("tools").cloned().unwrap_or(Value::Null);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let drop = body.pointer("/thinking/block_binding/prefix_mismatch_behavior") == Some(&json!("drop_block"));
    // Each block is checked against its prefix as the model reads it: with the blocks
    // this request already dropped left out (a block produced under `drop_block` is bound
    // to the prefix without the dropped ones).
    let mut effective = messages.clone();
    for n in 0..messages.len() {
        let Some(blocks) = messages[n]["content"].as_array() else {
            continue;
        };
        let mut kept = Vec::new();
        for (m, block) in blocks.iter().enumerate() {
            if block["type"] != "thinking" {
                kept.push(block.clone());
                continue;
            }
            if block["signature"] == json!(sign(&system, &tools, &effective[..n])) {
                seen.valid += 1;
                kept.push(block.clone());
                continue;
            }
            if drop {
                seen.dropped += 1;
                continue;
            }
            seen.refused += 1;
            return refused(format!(
                "messages.{n}.content.{m}: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\"."
            ));
        }
        effective[n]["content"] = Value::Array(kept);
    }
    let messages = effective;
    let round = messages.len();
    let signature = sign(&system, &tools, &messages);
    let mut read = body.clone();
    read["messages"] = Value::Array(messages.clone());
    let cleared = llm_compactor::format::context_management::cleared_by_provider(&mut read, CLEARED);
    if cleared.is_some() {
        seen.clearing_requests += 1;
    }
    seen.cleared += cleared.unwrap_or(0);
    let input_tokens = input_tokens(&read);
    seen.input_tokens.push(input_tokens);
    let content = json!([
        {"type":"thinking","thinking":format!("round {round}: read the next part"),"signature":signature},
        {"type":"tool_use","id":format!("toolu_{round}"),"name":"Bash","input":{"command":format!("cat part{round}.log")}}
    ]);
    axum::Json(
        json!({"id":format!("msg_{round}"),"type":"message","role":"assistant","model":body["model"],
        "content":content,"stop_reason":"tool_use","stop_sequence":null,
        "usage":{"input_tokens":input_tokens,"output_tokens":20}}),
    )
    .into_response()
}

/// The request's input tokens as the proxy's heuristic counter counts its messages.
fn input_tokens(body: &Value) -> usize {
    use llm_compactor::count::{HeuristicCounter, TokenCounter};
    let document =
        llm_compactor::format::Document::from_value(body.clone(), Some(llm_compactor::format::Format::Anthropic), "r")
            .unwrap();
    HeuristicCounter.count_messages(document.messages())
}
