//! A Responses upstream that seals its reasoning as OpenAI does (issue 39): every
//! `reasoning` item it returns carries `encrypted_content` bound to the key that asked
//! (a digest of the key and the item's id), and every sealed item it receives must have
//! been sealed under the request's key, else the documented 400
//! (`invalid_encrypted_content`, "The encrypted content gAAA...5bw= could not be
//! verified."), as after a change of key, organization or model. An output item that
//! names (by `id`) a response whose reasoning item is not sent is refused too, as the API
//! does. Its model runs a tool loop: a reasoning item and a `function_call` every round.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the sealing upstream saw.
#[derive(Default)]
pub struct Seen {
    /// Every request body.
    pub bodies: Vec<Value>,
    /// Requests refused for a sealed item another key sealed.
    pub refused: usize,
    /// Requests refused for an item naming a response whose reasoning is not sent.
    pub orphaned_ids: usize,
    /// Sealed items received that verified.
    pub valid: usize,
}

pub struct Sealing {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Seen>>,
}

impl Sealing {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// The seal of reasoning item `id` under `key`.
pub fn seal(key: &str, id: &str) -> String {
    format!("gAAA{}", hex::encode(Sha256::digest(format!("{key}\n{id}").as_bytes())))
}

pub async fn sealing_upstream() -> Sealing {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let app = Router::new()
        .route("/v1/responses", post(responses))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Sealing { addr, seen }
}

fn refusal(message: String, code: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}}),
        ),
    )
        .into_response()
}

async fn responses(
    State(seen): State<Arc<Mutex<Seen>>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut seen = seen.lock().unwrap();
    seen.bodies.push(body.clone());
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim_start_matches("Bearer ")
        .to_owned();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let mut reasoning_sent = Vec::new();
    for item in &input {
        if item["type"] != "reasoning" {
            continue;
        }
        let id = item["id"].as_str().unwrap_or_default();
        let sealed = item["encrypted_content"].as_str().unwrap_or_default();
        if sealed != seal(&key, id) {
            seen.refused += 1;
            let shown = format!(
                "{}...{}",
                &sealed[..sealed.len().min(4)],
                &sealed[sealed.len().saturating_sub(4)..]
            );
            return refusal(
                format!("The encrypted content {shown} could not be verified."),
                "invalid_encrypted_content",
            );
        }
        seen.valid += 1;
        reasoning_sent.push(id.trim_start_matches("rs_").to_owned());
    }
    // An item with the id of a response (`fc_N`) whose reasoning (`rs_N`) is not sent.
    for item in &input {
        if let Some(id) = item["id"].as_str().and_then(|id| id.strip_prefix("fc_"))
            && !reasoning_sent.iter().any(|r| r == id)
        {
            seen.orphaned_ids += 1;
            return refusal(
                format!(
                    "Item 'fc_{id}' of type 'function_call' was provided without its required 'reasoning' item: 'rs_{id}'."
                ),
                "invalid_request_error",
            );
        }
    }
    let round = seen.bodies.len();
    let output = json!([
        {"type": "reasoning", "id": format!("rs_{round}"), "summary": [], "encrypted_content": seal(&key, &format!("rs_{round}"))},
        {"type": "function_call", "id": format!("fc_{round}"), "call_id": format!("call_{round}"), "name": "shell",
         "arguments": format!("{{\"cmd\":\"cat part{round}.log\"}}"), "status": "completed"}
    ]);
    axum::Json(
        json!({"id": format!("resp_{round}"), "object": "response", "status": "completed", "model": body["model"],
        "output": output, "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}),
    )
    .into_response()
}
