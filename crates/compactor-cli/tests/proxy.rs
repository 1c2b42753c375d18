//! `compactor proxy` as a real child process: serve in front of a scripted upstream on
//! 127.0.0.1, finish an in-flight streamed answer on SIGTERM, then `proxy sessions`,
//! `proxy export` and `session replay` rebuild what the upstream last saw.

use crate::support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use support::{bin, run, stdout};

#[derive(Default)]
pub(crate) struct Upstream {
    seen: Mutex<Vec<Value>>,
    gate: Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

async fn chat(State(up): State<Arc<Upstream>>, axum::Json(body): axum::Json<Value>) -> Response {
    up.seen.lock().unwrap().push(body.clone());
    let last = body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let text = format!("echo: {}", last.as_str().unwrap_or_default());
    if body["stream"] != json!(true) {
        return axum::Json(json!({"id":"c","object":"chat.completion","created":1,"model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":text},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}))
        .into_response();
    }
    let gate = up.gate.lock().unwrap().take();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx
            .send(Ok(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n".into(),
            ))
            .await;
        if let Some(gate) = gate {
            let _ = gate.await;
        }
        let _ = tx.send(Ok("data: [DONE]\n\n".into())).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

pub(crate) async fn start_upstream() -> (String, Arc<Upstream>) {
    let up = Arc::new(Upstream::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, up)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_drain_on_sigterm_then_export_and_replay_what_the_upstream_saw() {
    let (upstream, up) = start_upstream().await;
    let (open_gate, gate) = tokio::sync::oneshot::channel();
    *up.gate.lock().unwrap() = Some(gate);
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("sessions.db").display());
    let mut child = bin()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &upstream,
            "--store",
            &store,
        ])
        .args(["--budget", "2000", "--keep-recent", "4", "--summarizer", "none"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let proxy = line
        .split("listening on ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    // Drain the rest of stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    let mut messages = vec![json!({"role":"system","content":"Be brief."})];
    for i in 0..30 {
        messages.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(300))}));
        let answer: Value = client
            .post(format!("{proxy}/v1/chat/completions"))
            .header("x-compactor-session", "cli")
            .json(&json!({"model":"m","messages":messages}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        messages.push(answer["choices"][0]["message"].clone());
    }

    // A streamed answer is in flight when SIGTERM arrives: it must still complete.
    messages.push(json!({"role":"user","content":"stream the last one"}));
    let mut streaming = client
        .post(format!("{proxy}/v1/chat/completions"))
        .header("x-compactor-session", "cli")
        .json(&json!({"model":"m","messages":messages,"stream":true}))
        .send()
        .await
        .unwrap();
    let first = streaming.chunk().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("half"));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    open_gate.send(()).unwrap();
    let mut rest = Vec::new();
    while let Some(chunk) = streaming.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert!(
        String::from_utf8_lossy(&rest).contains("[DONE]"),
        "the in-flight answer completed"
    );
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "graceful exit: {status:?}");

    let sessions = stdout(&run(&["proxy", "sessions", "--store", &store], None));
    assert!(sessions.starts_with("cli\t"), "{sessions}");
    assert!(
        sessions.contains("\texplicit\theader:x-compactor-session\n"),
        "the tier that named it: {sessions}"
    );
    let file = dir.path().join("cli.jsonl");
    let export = run(
        &[
            "proxy",
            "export",
            "cli",
            "--store",
            &store,
            "-o",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert!(export.status.success(), "{}", support::stderr(&export));
    // A transcript is private, like every session file (0600), whatever the umask.
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "exported transcript mode {mode:o}");
    let replay = run(&["session", "replay", file.to_str().unwrap(), "--json"], None);
    assert!(replay.status.success(), "{}", support::stderr(&replay));
    let replayed: Value = serde_json::from_str(&stdout(&replay)).unwrap();
    let seen = up.seen.lock().unwrap().last().unwrap()["messages"].clone();
    assert_eq!(
        replayed["messages"], seen,
        "export + replay is what the upstream last saw"
    );
    let seen_all = up.seen.lock().unwrap().clone();
    assert!(
        seen_all.iter().any(|b| b["messages"].as_array().unwrap().len() < 20),
        "the run compacted"
    );
}

/// Starts `compactor proxy` with `args`; returns the child and its address.
fn spawn_proxy(args: &[&str]) -> (std::process::Child, String) {
    spawn_proxy_with(args, &[])
}

/// [`spawn_proxy`] with these environment variables set (on 127.0.0.1 unless `args`
/// give a `--listen` of their own).
pub(crate) fn spawn_proxy_with(args: &[&str], env: &[(&str, &str)]) -> (std::process::Child, String) {
    let listen: &[&str] = if args.contains(&"--listen") {
        &[]
    } else {
        &["--listen", "127.0.0.1:0"]
    };
    let mut child = bin()
        .arg("proxy")
        .args(listen)
        .args(args)
        .envs(env.iter().copied())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let proxy = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the proxy exited before listening"
        );
        if let Some(rest) = line.split("listening on ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_owned();
        }
    };
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_by_model_and_the_pricing_preset_from_the_command_line() {
    let (upstream, up) = start_upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("sessions.db").display());
    let (mut child, proxy) = spawn_proxy(&[
        "--upstream",
        &upstream,
        "--store",
        &store,
        "--budget-by-model",
        "--pricing",
        "openai-4o",
        "--summarizer",
        "none",
        "--counter",
        "heuristic",
    ]);
    let client = reqwest::Client::new();
    let mut messages = vec![json!({"role":"system","content":"Be brief."})];
    for i in 0..25 {
        messages.push(json!({"role":"user","content": format!("{i} {}", "u".repeat(800))}));
        messages.push(json!({"role":"assistant","content": format!("{i} {}", "a".repeat(800))}));
    }
    messages.push(json!({"role":"user","content":"and?"}));
    let send = |model: &str| {
        client
            .post(format!("{proxy}/v1/chat/completions"))
            .json(&json!({"model": model, "messages": messages}))
            .send()
    };
    let unknown = send("my-local-llama").await.unwrap();
    assert_eq!(unknown.status(), 400);
    assert!(unknown.text().await.unwrap().contains("--budget N"));
    assert_eq!(send("gpt-4").await.unwrap().status(), 200);
    let seen = up.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "the unknown model was not forwarded");
    assert!(
        seen[0]["messages"].as_array().unwrap().len() < messages.len(),
        "gpt-4's 8,192-token window: compacted"
    );
    let metrics = support::metrics_text(&client, &proxy).await;
    assert!(
        metrics.contains("compactor_proxy_estimated_cost_saved{pricing=\"openai-4o\"}"),
        "{metrics}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn unworkable_proxy_flags_are_refused_at_start_up() {
    let cases: [(&[&str], &str); 6] = [
        (
            &[
                "--summarizer-key",
                "client",
                "--summarizer",
                "openai",
                "--model",
                "gpt-4o-mini",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ],
            "origin",
        ),
        (
            &["--summarizer-key", "client", "--summarizer", "none"],
            "--summarizer openai|anthropic",
        ),
        (&["--pricing", "cheap"], "--pricing"),
        (&["--format", "openai"], "--format"),
        (&["--expand-max-calls", "2"], "--expand-tool"),
        (&["--expand-tool", "--expand-max-calls", "0"], "--expand-max-calls"),
    ];
    for (args, expected) in cases {
        let mut all = vec![
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:8",
            "--store",
            "memory:",
        ];
        all.extend_from_slice(args);
        let output = run(&all, None);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", support::stderr(&output));
        assert!(
            support::stderr(&output).contains(expected),
            "{args:?}: {}",
            support::stderr(&output)
        );
    }
}

/// The standard `OTEL_EXPORTER_OTLP_ENDPOINT` turns tracing on: a request through the
/// proxy reaches an OTLP/HTTP receiver on 127.0.0.1 as a span named for its session, sent
/// at the latest when SIGTERM stops the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_otel_environment_turns_tracing_on() {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(
                |State(seen): State<Arc<Mutex<Vec<Value>>>>, body: axum::body::Bytes| async move {
                    seen.lock()
                        .unwrap()
                        .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                    axum::Json(json!({}))
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let otlp = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let (upstream, _up) = start_upstream().await;
    let (mut child, proxy) = spawn_proxy_with(
        &[
            "--upstream",
            &upstream,
            "--store",
            "memory:",
            "--summarizer",
            "none",
            "--counter",
            "heuristic",
        ],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)],
    );
    let answered = reqwest::Client::new()
        .post(format!("{proxy}/v1/chat/completions"))
        .header("x-compactor-session", "otel-cli")
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success(), "a clean stop");
    let raw = serde_json::to_string(&*seen.lock().unwrap()).unwrap();
    assert!(
        raw.contains("\"gen_ai.conversation.id\""),
        "a GenAI span was exported: {raw}"
    );
    assert!(raw.contains("\"otel-cli\""), "named for its session: {raw}");
}

/// Issue 44: `--ui` on an address other than loopback needs `--ui-token-env`; a variable
/// that is not set is a usage error naming it.
#[test]
fn the_inspector_off_loopback_needs_a_token() {
    let base = [
        "proxy",
        "--upstream",
        "http://127.0.0.1:9",
        "--budget",
        "10000",
        "--store",
        "memory:",
    ];
    let exposed = run(&[&base[..], &["--listen", "0.0.0.0:0", "--ui"]].concat(), None);
    assert!(!exposed.status.success());
    let said = support::stderr(&exposed);
    assert!(said.contains("--ui-token-env"), "{said}");
    let unset = run(
        &[
            &base[..],
            &[
                "--listen",
                "0.0.0.0:0",
                "--ui",
                "--ui-token-env",
                "COMPACTOR_TEST_UNSET_TOKEN",
            ],
        ]
        .concat(),
        None,
    );
    assert!(!unset.status.success());
    assert!(support::stderr(&unset).contains("COMPACTOR_TEST_UNSET_TOKEN"));
}

/// Issue 43: `--native-compaction` takes auto, serve or forward; the key's variable must
/// be set and hold at least 16 bytes (a usage error naming it otherwise).
#[test]
fn native_compaction_flags_are_checked() {
    let base = [
        "proxy",
        "--upstream",
        "http://127.0.0.1:9",
        "--budget",
        "10000",
        "--store",
        "memory:",
        "--listen",
        "127.0.0.1:0",
    ];
    let bad_mode = run(&[&base[..], &["--native-compaction", "always"]].concat(), None);
    assert!(!bad_mode.status.success());
    let said = support::stderr(&bad_mode);
    assert!(said.contains("auto, serve or forward"), "{said}");
    let unset = run(
        &[&base[..], &["--native-compaction-key-env", "COMPACTOR_TEST_UNSET_KEY"]].concat(),
        None,
    );
    assert!(!unset.status.success());
    let said = support::stderr(&unset);
    assert!(
        said.contains("COMPACTOR_TEST_UNSET_KEY") && said.contains("16 bytes"),
        "{said}"
    );
}

/// Issue 44, the other way: with a token the real binary serves the inspector on a
/// non-loopback address, and `/ui` answers 401 without the token, 200 with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_off_loopback_serves_with_a_token_and_checks_it() {
    let (upstream, _up) = start_upstream().await;
    let args = [
        "--listen",
        "0.0.0.0:0",
        "--upstream",
        &upstream,
        "--store",
        "memory:",
        "--ui",
        "--ui-token-env",
        "COMPACTOR_TEST_UI_TOKEN",
    ];
    let (mut child, proxy) = spawn_proxy_with(&args, &[("COMPACTOR_TEST_UI_TOKEN", "tok-cli-7")]);
    let proxy = proxy.replace("0.0.0.0", "127.0.0.1");
    let client = reqwest::Client::new();
    let bare = client.get(format!("{proxy}/ui")).send().await.unwrap();
    let wrong = client
        .get(format!("{proxy}/ui"))
        .bearer_auth("tok-cli-")
        .send()
        .await
        .unwrap();
    let right = client
        .get(format!("{proxy}/ui"))
        .bearer_auth("tok-cli-7")
        .send()
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(bare.status(), 401);
    assert_eq!(wrong.status(), 401);
    assert_eq!(right.status(), 200);
}
