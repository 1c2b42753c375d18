//! An upstream on 127.0.0.1 that bills Anthropic Messages requests the way Anthropic's
//! prompt cache does, so a test can measure cache reads through the proxy.
//!
//! The request is read as Anthropic renders it: tools, then `system` blocks, then every
//! message's content blocks (a string content is one text block; `cache_control` is not
//! part of the content). A breakpoint caches the prefix up to and including its block
//! when that prefix has at least [`MIN_CACHEABLE`] tokens; a request reads the longest
//! cached prefix ending at one of its breakpoints or within the 20 blocks before one; the
//! top-level `cache_control` is a breakpoint on the last cacheable block. More than four
//! breakpoints, or one on a thinking block or an empty text block, is a 400, as upstream.
//! Tokens are a quarter of the block's canonical JSON length, which is all a ratio needs.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The smallest prefix Anthropic caches (Sonnet's 1,024 tokens).
pub const MIN_CACHEABLE: u64 = 1024;
/// How far before a breakpoint a cache hit is looked for.
pub const LOOKBACK: usize = 20;

/// What one request was billed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bill {
    pub input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub breakpoints: usize,
}

impl Bill {
    pub fn total(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

#[derive(Default)]
pub struct CacheState {
    cached: Mutex<HashMap<[u8; 32], u64>>,
    pub bills: Mutex<Vec<Bill>>,
    pub bodies: Mutex<Vec<Value>>,
}

pub struct CacheUpstream {
    pub addr: SocketAddr,
    pub state: Arc<CacheState>,
}

impl CacheUpstream {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn bills(&self) -> Vec<Bill> {
        self.state.bills.lock().unwrap().clone()
    }

    /// The share of input tokens read from the cache over every request after the first.
    pub fn read_share_after_first(&self) -> f64 {
        let bills = self.bills();
        let rest = bills.get(1..).unwrap_or_default();
        let read: u64 = rest.iter().map(|b| b.cache_read).sum();
        let total: u64 = rest.iter().map(Bill::total).sum();
        if total == 0 { 0.0 } else { read as f64 / total as f64 }
    }
}

pub async fn cache_upstream() -> CacheUpstream {
    let state = Arc::new(CacheState::default());
    let app = Router::new()
        .route("/v1/messages", post(messages))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    CacheUpstream { addr, state }
}

fn bad(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(json!({"type":"error","error":{"type":"invalid_request_error","message":message}})),
    )
        .into_response()
}

/// One rendered block: its canonical text without the mark, and whether it is marked.
struct Rendered {
    text: String,
    marked: bool,
    cacheable: bool,
}

fn render_block(prefix: &str, block: &Value) -> Result<Rendered, String> {
    let mut bare = block.clone();
    let marked = bare
        .as_object_mut()
        .and_then(|o| o.shift_remove("cache_control"))
        .is_some_and(|c| !c.is_null());
    let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
    let empty_text = kind == "text" && block.get("text").and_then(Value::as_str).is_none_or(str::is_empty);
    if marked && (matches!(kind, "thinking" | "redacted_thinking") || empty_text) {
        return Err(format!(
            "cache_control cannot be set on a {kind} block{}",
            if empty_text { " that is empty" } else { "" }
        ));
    }
    let nested = block["content"].as_array().map_or(0, |inner| {
        inner
            .iter()
            .filter(|b| b.get("cache_control").is_some_and(|c| !c.is_null()))
            .count()
    });
    if nested > 0 {
        return Err("nested cache_control is not modelled by this upstream".to_owned());
    }
    Ok(Rendered {
        text: format!("{prefix}{}", llm_compactor::message::canonical_json(&bare)),
        marked,
        cacheable: !matches!(kind, "thinking" | "redacted_thinking") && !empty_text,
    })
}

fn content_blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(s) => vec![json!({"type":"text","text":s})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

fn render(body: &Value) -> Result<Vec<Rendered>, String> {
    let mut out = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        out.push(render_block("tool:", tool)?);
    }
    for block in content_blocks(&body["system"]) {
        out.push(render_block("system:", &block)?);
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or_default();
        for block in content_blocks(&message["content"]) {
            out.push(render_block(&format!("{role}:"), &block)?);
        }
    }
    if body.get("cache_control").is_some_and(|c| !c.is_null())
        && let Some(last) = out.iter_mut().rev().find(|r| r.cacheable)
    {
        last.marked = true;
    }
    Ok(out)
}

async fn messages(State(state): State<Arc<CacheState>>, axum::Json(body): axum::Json<Value>) -> Response {
    state.bodies.lock().unwrap().push(body.clone());
    let blocks = match render(&body) {
        Ok(blocks) => blocks,
        Err(e) => return bad(e),
    };
    let top = usize::from(body.get("cache_control").is_some_and(|c| !c.is_null()));
    let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].marked).collect();
    // The top-level field marks an existing block but is counted on its own.
    let explicit = marks.len() - usize::from(top == 1 && !marks.is_empty()) + top;
    let count = llm_compactor::plan::breakpoints::count_breakpoints(&body);
    if count > 4 || explicit > 4 {
        return bad(format!(
            "A maximum of 4 blocks with cache_control may be provided. Found {count}."
        ));
    }
    let mut hashes = Vec::with_capacity(blocks.len());
    let mut tokens = Vec::with_capacity(blocks.len());
    let (mut hasher, mut sum) = (Sha256::new(), 0u64);
    for block in &blocks {
        hasher.update(block.text.len().to_le_bytes());
        hasher.update(block.text.as_bytes());
        hashes.push(<[u8; 32]>::from(hasher.clone().finalize()));
        sum += (block.text.len() as u64).div_ceil(4);
        tokens.push(sum);
    }
    let mut cached = state.cached.lock().unwrap();
    let hit = marks
        .iter()
        .flat_map(|&b| (b.saturating_sub(LOOKBACK)..=b).rev())
        .filter(|i| cached.contains_key(&hashes[*i]))
        .max();
    let read = hit.map_or(0, |i| tokens[i]);
    let mut written_to = read;
    for &b in &marks {
        if tokens[b] >= MIN_CACHEABLE {
            cached.insert(hashes[b], tokens[b]);
            written_to = written_to.max(tokens[b]);
        }
    }
    drop(cached);
    let bill = Bill {
        input: sum - written_to,
        cache_read: read,
        cache_write: written_to - read,
        breakpoints: count,
    };
    state.bills.lock().unwrap().push(bill);
    axum::Json(json!({
        "id": "msg_cache", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": bill.input, "output_tokens": 1,
                  "cache_read_input_tokens": bill.cache_read, "cache_creation_input_tokens": bill.cache_write}
    }))
    .into_response()
}
