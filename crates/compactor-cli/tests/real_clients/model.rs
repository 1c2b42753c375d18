//! The scripted agent model: a real HTTP server on 127.0.0.1 that plays the model for
//! an unmodified agent CLI, and records everything it was sent.
//!
//! It learns the client's shell tool from the request (`tools`) and, each round, asks
//! it to run a deterministic command printing 3–17 KB whose first line is a round marker
//! (`ROUND 17`): the model reads the round from the newest tool result, so it keeps
//! counting however the history before it was compacted. After the last round it
//! answers a final text ([`FINAL`]); a request without tools (a title, a side question)
//! gets a short text. The wire formats live in `anthropic.rs` (Messages) and
//! `responses.rs` (Responses); the rules they enforce in `rules.rs`.
//!
//! Every request is counted as the provider would bill it — the whole request, tool
//! declarations and system prompt included, with the o200k tokenizer — and that count is
//! both the `usage` it reports and the context window it refuses past ("prompt is too
//! long").

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use llm_compactor::count::{BpeCounter, MemoCounter, TokenCounter};
use serde_json::{Value, json};

/// The final answer, after the last round.
pub const FINAL: &str = "ALL ROUNDS DONE";

/// What the scripted model enforces.
#[derive(Clone, Debug)]
pub struct Options {
    /// Tool rounds before the final answer.
    pub rounds: usize,
    /// The context window: a request counted over it is refused.
    pub window: usize,
    /// Refuse a thinking block bound to another conversation (always counted).
    pub enforce_thinking: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rounds: 50,
            window: 200_000,
            enforce_thinking: false,
        }
    }
}

/// One request the model received.
#[derive(Clone, Debug)]
pub struct Received {
    /// Method and path (`POST /v1/messages?beta=true`).
    pub route: String,
    /// Its headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub bytes: Vec<u8>,
    /// The body, parsed (`Null` when it was not JSON).
    pub body: Value,
    /// Input tokens, as billed (the whole request, o200k).
    pub tokens: usize,
    /// `cache_control` marks (Messages).
    pub marks: usize,
    /// Thinking blocks received, and how many were bound to another conversation.
    pub thinking: usize,
    pub invalid_thinking: usize,
    /// Of those, the ones dropped at the request's asking (`drop_block`).
    pub dropped_thinking: usize,
    /// Tool results the server cleared (`clear_tool_uses`).
    pub cleared: usize,
    /// The last assistant turn of a tool loop lacked its thinking block.
    pub unopened_loop: bool,
    /// The newest tool result arrived without the end of its output.
    pub newest_cut: bool,
    /// The status answered, and the error message of a refusal.
    pub status: u16,
    pub error: Option<String>,
    /// What was answered.
    pub turn: Option<Turn>,
    /// When it arrived, and how long the model took to judge and count it.
    pub at: std::time::Instant,
    pub judged_in: std::time::Duration,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// What the model answers a request with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Run round N's command.
    Call(usize),
    /// All rounds done: the final text.
    Final,
    /// A request without tools: a short text.
    Text,
    /// The newest tool result carries no round marker: the model lost count.
    Lost,
}

/// The running model.
pub struct Model {
    pub addr: SocketAddr,
    pub state: Arc<ModelState>,
}

/// What the handlers share.
pub struct ModelState {
    pub options: Options,
    pub received: Mutex<Vec<Received>>,
    meter: Meter,
}

impl Model {
    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().unwrap().clone()
    }
}

/// Starts the model on 127.0.0.1:0.
pub async fn start(options: Options) -> Model {
    let state = Arc::new(ModelState {
        options,
        received: Mutex::new(Vec::new()),
        meter: Meter::default(),
    });
    let app = Router::new()
        .route("/v1/messages", post(super::anthropic::messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(super::responses::responses))
        .fallback(side)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Model { addr, state }
}

/// A request as received, before it is judged.
pub fn receive(method: &Method, uri: &Uri, headers: &HeaderMap, bytes: &Bytes) -> Received {
    let headers = headers
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "authorization" | "x-api-key"))
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    Received {
        route: format!("{method} {uri}"),
        headers,
        bytes: bytes.to_vec(),
        body: serde_json::from_slice(bytes).unwrap_or(Value::Null),
        tokens: 0,
        marks: 0,
        thinking: 0,
        invalid_thinking: 0,
        dropped_thinking: 0,
        cleared: 0,
        unopened_loop: false,
        newest_cut: false,
        status: 200,
        error: None,
        turn: None,
        at: std::time::Instant::now(),
        judged_in: std::time::Duration::ZERO,
    }
}

impl ModelState {
    /// Records `received` and returns its index.
    pub fn record(&self, mut received: Received) -> usize {
        received.judged_in = received.at.elapsed();
        let mut all = self.received.lock().unwrap();
        all.push(received);
        all.len() - 1
    }
}

/// The model's bill: o200k over the whole request. Each message's count and each tool
/// list's are remembered (a run resends its history every round; recounting it would be
/// quadratic), which changes no count: o200k is additive.
struct Meter {
    messages: MemoCounter<BpeCounter>,
    tools: Mutex<HashMap<String, usize>>,
}

impl Default for Meter {
    fn default() -> Self {
        Meter {
            messages: MemoCounter::keeping_all(BpeCounter::o200k()),
            tools: Mutex::default(),
        }
    }
}

impl ModelState {
    /// The whole request in o200k tokens: its conversation (the library's reading of the
    /// body, system prompt included) and its tool declarations.
    pub fn billed(&self, conversation: &[llm_compactor::Message], tools: &[Value]) -> usize {
        let key = serde_json::to_string(tools).unwrap_or_default();
        let overhead = *self
            .meter
            .tools
            .lock()
            .unwrap()
            .entry(key)
            .or_insert_with(|| BpeCounter::o200k().count_request_overhead(tools, ""));
        self.meter.messages.count_messages(conversation) + overhead
    }
}

/// The round marker a tool result starts with (Codex prefixes its own header lines, so
/// the first marker anywhere counts).
pub fn marker(text: &str) -> Option<usize> {
    let at = text.find("ROUND ")?;
    let digits: String = text[at + 6..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The turn that follows a request whose newest tool result is `newest` (`None`: no tool
/// result yet).
pub fn next_turn(has_tools: bool, newest: Option<&str>, rounds: usize) -> Turn {
    if !has_tools {
        return Turn::Text;
    }
    match newest.map(marker) {
        None => Turn::Call(1),
        Some(None) => Turn::Lost,
        Some(Some(done)) if done >= rounds => Turn::Final,
        Some(Some(done)) => Turn::Call(done + 1),
    }
}

/// Round `n`'s output line format and line count: 3–17 KB.
fn output_lines(n: usize) -> (String, usize) {
    let bytes = 3 * 1024 + (n * 7919 % 15) * 1024 - 16;
    let line = format!("round {n:02} line %05g: scripted output filling the context window of the agent");
    // `%05g` prints five digits; each line ends with a newline.
    let lines = bytes / (line.len() + 2);
    (line, lines)
}

/// Round `n`'s command: prints the marker, then 3–17 KB of numbered lines.
pub fn command(n: usize) -> String {
    let (line, lines) = output_lines(n);
    format!("printf 'ROUND {n}\\n'; seq -f '{line}' 1 {lines}")
}

/// True when `result`, the newest tool result, lost the end of its round's output (a
/// cut the model would notice: it has not read what it asked for).
pub fn cut(result: &str) -> bool {
    let Some(n) = marker(result) else { return false };
    let (_, lines) = output_lines(n);
    !result.contains(&format!("round {n:02} line {lines:05}:"))
}

/// The text answer of a turn that calls no tool.
pub fn text_of(turn: Turn) -> String {
    match turn {
        Turn::Final => FINAL.to_owned(),
        Turn::Lost => "I lost count of the rounds: the newest tool result has no round marker.".to_owned(),
        _ => "Scripted answer.".to_owned(),
    }
}

/// A provider-shaped 400 (`anthropic`: Anthropic's error envelope, else OpenAI's).
pub fn refusal(anthropic: bool, message: &str) -> Response {
    let body = if anthropic {
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    } else {
        json!({"error": {"message": message, "type": "invalid_request_error", "param": "input", "code": null}})
    };
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

/// `POST /v1/messages/count_tokens`: the model's count.
async fn count_tokens(
    State(state): State<Arc<ModelState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    let mut received = receive(&method, &uri, &headers, &bytes);
    let conversation = llm_compactor::format::Document::from_value(
        received.body.clone(),
        Some(llm_compactor::format::Format::Anthropic),
        "request",
    )
    .map(llm_compactor::format::Document::into_messages)
    .unwrap_or_default();
    let tools = received.body["tools"].as_array().cloned().unwrap_or_default();
    received.tokens = state.billed(&conversation, &tools);
    let tokens = received.tokens;
    state.record(received);
    axum::Json(json!({"input_tokens": tokens})).into_response()
}

/// Anything else a client probes: recorded and answered minimally.
async fn side(
    State(state): State<Arc<ModelState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    bytes: Bytes,
) -> Response {
    state.record(receive(&method, &uri, &headers, &bytes));
    if method == Method::GET {
        axum::Json(json!({"data": [], "models": []})).into_response()
    } else {
        axum::Json(json!({})).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_is_read_from_the_newest_result() {
        assert_eq!(next_turn(false, None, 50), Turn::Text);
        assert_eq!(next_turn(true, None, 50), Turn::Call(1));
        assert_eq!(next_turn(true, Some("ROUND 7\nline"), 50), Turn::Call(8));
        assert_eq!(
            next_turn(true, Some("Chunk ID: 1\nOutput:\nROUND 50\n"), 50),
            Turn::Final
        );
        assert_eq!(next_turn(true, Some("[elided]"), 50), Turn::Lost);
    }

    #[test]
    fn a_round_prints_3_to_17_kb_led_by_its_marker() {
        for n in 1..=50 {
            let output = std::process::Command::new("bash")
                .args(["-c", &command(n)])
                .output()
                .unwrap();
            let text = String::from_utf8(output.stdout).unwrap();
            assert!(text.starts_with(&format!("ROUND {n}\n")), "{n}");
            assert!(
                (2900..=17 * 1024).contains(&text.len()),
                "round {n}: {} bytes",
                text.len()
            );
        }
    }
}
