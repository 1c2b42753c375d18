//! Test support: a scripted upstream on 127.0.0.1 (a real axum server that records what
//! it received: `scripted.rs`, its model `expander`: `expander.rs`), a proxy in front of
//! it, and the Python SDK venv.
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use compactor_proxy::ProxyConfig;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::responses::ResponsesRequest;
use llm_compactor::format::{Document, Format};
use llm_compactor::store::SessionStore;
use llm_compactor::{Compactor, CompactorConfig, Message};
use serde_json::Value;
use tokio::sync::oneshot;

pub mod anthropic_cache;
mod expander;
mod scripted;
pub mod sealing;
pub mod signing;

pub use expander::{EXPAND_TOOL, offers_expand, wanted_handle};
pub use scripted::{Script, Upstream, upstream};

/// One request the upstream received.
#[derive(Clone, Debug)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub api_key: Option<String>,
    pub session_header: Option<String>,
    pub anthropic_beta: Option<String>,
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
        let format = if self.path.ends_with("/messages") || self.path.ends_with("/messages/count_tokens") {
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
