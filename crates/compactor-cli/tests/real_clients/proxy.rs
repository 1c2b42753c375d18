//! The real proxy, as a user starts it: the built `compactor proxy` child process in
//! front of the scripted model, with a SQLite store in the run's directory; what it
//! logged, its `/metrics`, and its sessions read back with `compactor proxy sessions`,
//! `proxy export` and `session replay`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support::{bin, run, stderr, stdout};

/// A running `compactor proxy`.
pub struct Proxy {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// `sqlite:PATH`.
    pub store: String,
    log: Arc<Mutex<Vec<String>>>,
}

/// The binary serving the proxy: `$COMPACTOR_PROXY_BIN` (an optimized build, whose
/// added latency means something), else the one this test was built with.
fn proxy_bin() -> std::process::Command {
    match std::env::var_os("COMPACTOR_PROXY_BIN") {
        Some(path) => {
            let mut command = std::process::Command::new(path);
            command
                .env_remove("OPENAI_API_KEY")
                .env_remove("ANTHROPIC_API_KEY")
                .env("LLM_COMPACTOR_MODEL_DIR", "/nonexistent/llm-compactor-models");
            command
        }
        None => bin(),
    }
}

/// True when the proxy runs optimized: `$COMPACTOR_PROXY_BIN`, or this test built in
/// release. An unoptimized proxy's latency is reported, not judged.
pub fn optimized() -> bool {
    std::env::var_os("COMPACTOR_PROXY_BIN").is_some() || !cfg!(debug_assertions)
}

/// Starts `compactor proxy --upstream UPSTREAM --budget BUDGET --summarizer ledger
/// --store sqlite:DIR/sessions.db` with `extra` flags.
pub fn start(upstream: &str, dir: &Path, budget: usize, extra: &[&str]) -> Proxy {
    let store = format!("sqlite:{}", dir.join("sessions.db").display());
    let mut child = proxy_bin()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream,
            "--store",
            &store,
        ])
        .args(["--budget", &budget.to_string(), "--summarizer", "ledger"])
        .args(extra)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let log = Arc::new(Mutex::new(Vec::new()));
    let url = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the proxy exited before listening: {:?}", log.lock().unwrap()))
            .unwrap();
        let address = line
            .split("listening on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .map(str::to_owned);
        log.lock().unwrap().push(line);
        if let Some(address) = address {
            break address;
        }
    };
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    Proxy { child, url, store, log }
}

/// What `/metrics` said at the end of a run.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub compactions: u64,
    pub elisions: u64,
    pub latency_mean_ms: f64,
    pub latency_count: u64,
    pub prepared: Vec<(String, u64)>,
    /// Compaction requests the proxy answered itself (`/v1/responses/compact`, Codex's
    /// `compaction_trigger`).
    pub native_served: u64,
    /// The proxy's compaction items opened in later requests.
    pub native_resolved: u64,
    /// The whole exposition text.
    pub text: String,
}

fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

impl Proxy {
    /// `/metrics`, read.
    pub async fn metrics(&self) -> Metrics {
        let text = crate::support::metrics_text(&reqwest::Client::new(), &self.url).await;
        let latency = "compactor_proxy_added_latency_seconds";
        let count = series(&text, &format!("{latency}_count"));
        let prepared = text
            .lines()
            .filter_map(|l| l.strip_prefix("compactor_proxy_prepared_total{fate=\""))
            .filter_map(|rest| rest.split_once("\"} "))
            .map(|(fate, value)| (fate.to_owned(), value.trim().parse().unwrap_or(0)))
            .collect();
        Metrics {
            compactions: series(&text, "compactor_proxy_compactions_total") as u64,
            elisions: series(&text, "compactor_proxy_elisions_total") as u64,
            latency_mean_ms: if count > 0.0 {
                series(&text, &format!("{latency}_sum")) * 1000.0 / count
            } else {
                0.0
            },
            latency_count: count as u64,
            prepared,
            native_served: series(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}") as u64,
            native_resolved: series(&text, "compactor_proxy_native_compaction_items_resolved_total") as u64,
            text,
        }
    }

    /// Stops the proxy (SIGTERM, a clean exit) and returns what it logged.
    pub fn stop(mut self) -> Vec<String> {
        let killed = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the proxy stops cleanly: {status:?}");
        self.log.lock().unwrap().clone()
    }
}

/// `compactor proxy sessions`: each session's key.
pub fn sessions(store: &str) -> Vec<String> {
    let output = run(&["proxy", "sessions", "--store", store], None);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
        .lines()
        .filter_map(|l| l.split('\t').next())
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `compactor proxy export SESSION -o DIR/<n>.jsonl`: the file.
pub fn export(store: &str, session: &str, dir: &Path, n: usize) -> PathBuf {
    let file = dir.join(format!("session-{n}.jsonl"));
    let output = run(
        &[
            "proxy",
            "export",
            session,
            "--store",
            store,
            "-o",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    file
}

/// `compactor session replay FILE --json --to FORMAT`.
pub fn replay(file: &Path, format: &str) -> Value {
    let output = run(
        &["session", "replay", file.to_str().unwrap(), "--json", "--to", format],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

/// The passes recorded in an exported transcript: `(summaries, hard trims, elision
/// epochs)`.
pub fn passes(file: &Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut counts = (0, 0, 0);
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match value["type"].as_str() {
            Some("compaction") if value["payload"]["fallback"] == Value::Bool(true) => counts.1 += 1,
            Some("compaction") => counts.0 += 1,
            Some("elision") => counts.2 += 1,
            _ => {}
        }
    }
    counts
}

/// The sessions an exported transcript says it continued in (`proxy-continued` lines),
/// oldest first.
pub fn continued(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "proxy-continued")
        .filter_map(|line| line["payload"]["store_key"].as_str().map(str::to_owned))
        .collect()
}
