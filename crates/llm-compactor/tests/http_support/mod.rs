//! Real HTTP servers on 127.0.0.1 for the HTTP backend tests: a scripted axum server that
//! records every request, and raw TCP servers for the faults axum cannot produce (accept
//! and never answer, reset mid-body, a body that trickles in).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use llm_compactor::backend::http::{HttpBackend, HttpBackendBuilder, Protocol, Secret};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The key the tests configure.
pub const KEY: &str = "sk-test-SECRET-0123456789";

/// One canned answer.
#[derive(Clone, Debug)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Canned {
    pub fn json(status: u16, body: Value) -> Self {
        Canned {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    pub fn text(status: u16, body: &str) -> Self {
        Canned {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.to_owned(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

type Script = Arc<dyn Fn(usize) -> Canned + Send + Sync>;

#[derive(Clone)]
struct ServerState {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// A scripted server: request n (from 0) gets `script(n)`.
pub struct Server {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    pub async fn start(script: impl Fn(usize) -> Canned + Send + Sync + 'static) -> Server {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let state = ServerState {
            script: Arc::new(script),
            seen: seen.clone(),
        };
        let app = Router::new().fallback(handle).with_state(state);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Server { addr, seen }
    }

    /// The same answer to every request.
    pub async fn always(canned: Canned) -> Server {
        Server::start(move |_| canned.clone()).await
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn base_url(&self, protocol: Protocol) -> String {
        base_url(protocol, self.addr)
    }
}

async fn handle(State(state): State<ServerState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, usize::MAX).await.unwrap_or_default();
    let index = {
        let mut seen = state.seen.lock().unwrap();
        seen.push(Seen {
            path: parts.uri.path().to_owned(),
            headers: parts.headers.clone(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        });
        seen.len() - 1
    };
    let canned = (state.script)(index);
    let mut response = Response::builder().status(StatusCode::from_u16(canned.status).unwrap());
    for (name, value) in &canned.headers {
        response = response.header(name, value);
    }
    response.body(Body::from(canned.body)).unwrap()
}

pub fn base_url(protocol: Protocol, addr: SocketAddr) -> String {
    match protocol {
        Protocol::OpenAi => format!("http://{addr}/v1"),
        Protocol::Anthropic => format!("http://{addr}"),
    }
}

/// The overall timeout of the tests that make a request run out of time.
pub const SHORT_TIMEOUT: Duration = Duration::from_millis(400);

/// A builder for `protocol` aimed at `base`, with the test key and timeouts generous
/// enough for a loaded machine (the timeout tests shorten it with [`short`]).
pub fn builder(protocol: Protocol, base: &str) -> HttpBackendBuilder {
    let builder = match protocol {
        Protocol::OpenAi => HttpBackend::openai("gpt-4o-mini"),
        Protocol::Anthropic => HttpBackend::anthropic("claude-haiku-4-5"),
    };
    builder
        .base_url(base)
        .api_key(Secret::new(KEY))
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(20))
}

/// A backend whose requests time out after [`SHORT_TIMEOUT`].
pub fn short(protocol: Protocol, base: &str) -> HttpBackend {
    builder(protocol, base).timeout(SHORT_TIMEOUT).build().unwrap()
}

pub fn backend(protocol: Protocol, base: &str) -> HttpBackend {
    builder(protocol, base).build().unwrap()
}

pub const PROTOCOLS: [Protocol; 2] = [Protocol::OpenAi, Protocol::Anthropic];

/// A successful answer in `protocol`'s shape.
pub fn success(protocol: Protocol, text: &str, truncated: bool) -> Canned {
    let body = match protocol {
        Protocol::OpenAi => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": if truncated { "length" } else { "stop" }}],
            "usage": {"prompt_tokens": 1200, "completion_tokens": 80,
                      "prompt_tokens_details": {"cached_tokens": 1024}}
        }),
        Protocol::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": text}],
            "stop_reason": if truncated { "max_tokens" } else { "end_turn" },
            "usage": {"input_tokens": 176, "output_tokens": 80,
                      "cache_read_input_tokens": 1024, "cache_creation_input_tokens": 0}
        }),
    };
    Canned::json(200, body)
}

/// An error answer in `protocol`'s shape.
pub fn error(protocol: Protocol, status: u16, kind: &str, message: &str) -> Canned {
    let body = match protocol {
        Protocol::OpenAi => json!({"error": {"message": message, "type": kind, "param": null, "code": kind}}),
        Protocol::Anthropic => json!({"type": "error", "error": {"type": kind, "message": message}}),
    };
    Canned::json(status, body)
}

/// How a raw server misbehaves after reading a request.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// Never answers (keeps the connection open).
    Silent,
    /// Sends the headers and part of the body, then resets the connection.
    ResetMidBody,
    /// Sends the headers, then the body one byte every 50 ms.
    Trickle,
}

/// A raw TCP server that reads each request and then misbehaves.
pub struct RawServer {
    pub addr: SocketAddr,
    count: Arc<AtomicUsize>,
    /// Notified each time a whole request has been read.
    pub received: Arc<Notify>,
}

impl RawServer {
    pub async fn start(fault: Fault) -> RawServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let count = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Notify::new());
        let (task_count, task_received) = (count.clone(), received.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (count, received) = (task_count.clone(), task_received.clone());
                tokio::spawn(async move { serve_fault(stream, fault, count, received).await });
            }
        });
        RawServer { addr, count, received }
    }

    pub fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    pub fn base_url(&self, protocol: Protocol) -> String {
        base_url(protocol, self.addr)
    }
}

async fn read_request(stream: &mut TcpStream) -> bool {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = stream.read(&mut chunk).await else {
            return false;
        };
        if n == 0 {
            return false;
        }
        buffer.extend_from_slice(&chunk[..n]);
        let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        if buffer.len() >= end + 4 + length {
            return true;
        }
    }
}

async fn serve_fault(mut stream: TcpStream, fault: Fault, count: Arc<AtomicUsize>, received: Arc<Notify>) {
    if !read_request(&mut stream).await {
        return;
    }
    count.fetch_add(1, Ordering::SeqCst);
    received.notify_one();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n";
    match fault {
        Fault::Silent => {
            // Hold the connection open until the client goes away.
            let mut sink = [0u8; 64];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        }
        Fault::ResetMidBody => {
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(br#"{"choices":[{"message":{"content":"par"#).await;
            let _ = stream.flush().await;
            // SO_LINGER 0: closing sends a RST instead of a FIN.
            let _ = stream.set_zero_linger();
            drop(stream);
        }
        Fault::Trickle => {
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for byte in std::iter::repeat_n(b' ', 400) {
                if stream.write_all(&[byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// An address with nothing listening on it.
pub async fn dead_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

/// An IMF-fixdate (a Retry-After HTTP-date) `ahead` from now.
pub fn httpdate_in(ahead: Duration) -> String {
    let at = time::OffsetDateTime::now_utc() + ahead;
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    at.format(format).unwrap()
}
