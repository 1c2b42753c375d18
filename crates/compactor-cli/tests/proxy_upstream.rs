//! `compactor proxy --summarizer upstream` and the proxy's `auto` (issue 40), through the
//! real binary: with only `--upstream` and that one flag the proxy summarizes with the
//! request's own model, through the upstream, with the client's key; and `auto` never
//! picks the local model for a server, even when one is in the model directory.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use llm_compactor::backend::model_store::ModelSpec;
use serde_json::{Value, json};
use support::bin;

/// What the upstream saw: each request's authorization and body.
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

async fn chat(State(seen): State<Seen>, headers: HeaderMap, axum::Json(body): axum::Json<Value>) -> axum::Json<Value> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    seen.lock().unwrap().push((auth, body.clone()));
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let text = format!("echo: {}", last["content"].as_str().unwrap_or_default());
    // The bill of a tokenizer of about four characters a token (the proxy calibrates its
    // count from it).
    let tokens = body["messages"].to_string().len() / 4;
    axum::Json(
        json!({"id":"c","object":"chat.completion","created":1,"model":body["model"],
        "choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":tokens,"completion_tokens":1,"total_tokens":tokens + 1}}),
    )
}

async fn start_upstream() -> (String, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// The proxy's address and what it printed before listening; `None` (with what it
/// printed) when it exited instead.
fn wait_listening(child: &mut Child) -> Result<(String, String), String> {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut printed = String::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            return Err(printed);
        }
        printed.push_str(&line);
        if let Some(rest) = line.split("listening on ").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().to_owned();
            std::thread::spawn(move || {
                for line in stderr.lines().map_while(Result::ok) {
                    eprintln!("proxy: {line}");
                }
            });
            return Ok((addr, printed));
        }
    }
}

/// Ends the child this test started.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_summarizes_with_the_requests_model_through_the_upstream() {
    let (upstream, seen) = start_upstream().await;
    let mut child = bin()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory:",
            "--upstream",
            &upstream,
        ])
        .args(["--summarizer", "upstream", "--budget", "2000"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = wait_listening(&mut child);
    let _child = Kill(child);
    let (proxy, printed) = started.unwrap_or_else(|printed| panic!("the proxy did not start:\n{printed}"));
    assert!(printed.contains("billed to the client's key"), "{printed}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut messages = vec![json!({"role":"system","content":"Be brief."})];
    for i in 0..14 {
        // Words, not one repeated letter: the CLI counts with a BPE tokenizer.
        let words: Vec<String> = (0..60).map(|k| format!("word{k}x{i}")).collect();
        messages.push(json!({"role":"user","content": format!("question {i}: {}", words.join(" "))}));
        let response = client
            .post(format!("{proxy}/v1/chat/completions"))
            .header("x-compactor-session", "cli-upstream")
            .bearer_auth("sk-cli-client")
            .json(&json!({"model": "agent-model", "messages": messages}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        messages.push(answer["choices"][0]["message"].clone());
    }
    let seen = seen.lock().unwrap().clone();
    let summaries: Vec<&(Option<String>, Value)> = seen
        .iter()
        .filter(|(_, body)| {
            body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .is_some_and(|t| t.contains("The conversation to summarize is everything above this message"))
        })
        .collect();
    assert!(!summaries.is_empty(), "no summary request reached the upstream");
    for (auth, body) in summaries {
        assert_eq!(body["model"], "agent-model", "the request's own model");
        assert_eq!(auth.as_deref(), Some("Bearer sk-cli-client"), "the client's key");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_never_picks_the_local_model_for_the_proxy() {
    // A model directory where the CLI finds the local model: the file at its pinned
    // size, its verification remembered (a sparse file: nothing is loaded here).
    let dir = tempfile::tempdir().unwrap();
    let spec = ModelSpec::default_model();
    let model = dir.path().join(&spec.file_name);
    std::fs::File::create(&model).unwrap().set_len(spec.size).unwrap();
    let mtime_ns = std::fs::metadata(&model)
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let sidecar = dir.path().join(format!(".{}.verified", spec.file_name));
    std::fs::write(
        &sidecar,
        json!({"sha256": spec.sha256, "size": spec.size, "mtime_ns": mtime_ns}).to_string(),
    )
    .unwrap();
    // `compact`'s auto picks it: the setup is a fetched model as the CLI sees one.
    let conversation = dir.path().join("c.json");
    std::fs::write(
        &conversation,
        json!({"messages":[{"role":"user","content":"hi"}]}).to_string(),
    )
    .unwrap();
    let plan = bin()
        .args(["plan"])
        .arg(&conversation)
        .args(["--budget", "1000"])
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert!(stderr.contains("summarizer auto: local"), "{stderr}");
    // The proxy's does not.
    let (upstream, _seen) = start_upstream().await;
    let mut child = bin()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "memory:",
            "--upstream",
            &upstream,
        ])
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = wait_listening(&mut child);
    let _child = Kill(child);
    let (_, printed) = started.unwrap_or_else(|printed| panic!("the proxy did not start:\n{printed}"));
    assert!(printed.contains("summarizer auto: ledger"), "{printed}");
    assert!(!printed.contains("summarizer auto: local"), "{printed}");
}
