//! Real agent clients through the real proxy: unmodified Claude Code, Codex CLI and
//! opencode (over its Anthropic provider) from npm (`scripts/agent-clients.sh`), run headless for 50 tool rounds of 3–17 KB outputs
//! through `compactor proxy` against a scripted model on 127.0.0.1 that enforces what
//! the providers document (`real_clients/rules.rs`).
//!
//! The proxy's first promise is "point your client at it, change nothing else"; the
//! official SDKs replaying recorded trajectories cannot show it, because the clients
//! people run add what no trajectory records: Claude Code's moving cache breakpoint,
//! its thinking blocks and `context_management`, Codex's own session headers. Each run
//! checks the goals of the real-clients issue and prints one line of figures:
//!
//! - the client exits 0 after every round and the final answer;
//! - every request the model received is within the budget, by the model's count;
//! - at least one summary pass; no request refused (no client-visible 4xx); at most
//!   four `cache_control` marks on every request;
//! - one transcript for the client's session, whose export + replay is what the model
//!   last saw (byte for byte, modulo the request-only cache marks);
//! - every break of the prefix lines up with a pass; the proxy's added latency ≤ 5 ms
//!   mean (`/metrics`, which the model cannot see), judged for an optimized proxy only
//!   (`COMPACTOR_PROXY_BIN=target/release/compactor`, or `cargo test --release`): an
//!   unoptimized one spends 50–200 ms counting and parsing, and its figure is printed.
//!
//! Direct runs (no proxy) show the scripted model accepts the unmodified clients as
//! they are: a rule that failed them there would be the harness's fault.

mod anthropic;
mod clients;
mod figures;
mod model;
mod proxy;
mod responses;
mod rules;

use std::path::Path;

use serde_json::Value;

use figures::Figures;
use model::{Options, Received};

/// Client runs one at a time: they are the heavy tests, and the latency they measure
/// means nothing when four share two cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The most mean added latency the proxy may cost, in ms.
const MAX_LATENCY_MS: f64 = 5.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Client {
    Claude,
    Codex,
    OpenCode,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude-code",
            Client::Codex => "codex",
            Client::OpenCode => "opencode",
        }
    }

    /// The model route the client speaks.
    fn route(self) -> &'static str {
        match self {
            Client::Claude | Client::OpenCode => "/v1/messages",
            Client::Codex => "/v1/responses",
        }
    }
}

/// One run: a client, through the proxy at `budget` (or directly at the model), for
/// `rounds` rounds.
struct Run {
    client: Client,
    budget: Option<usize>,
    rounds: usize,
    enforce_thinking: bool,
    /// Claude Code's thinking (its default: on).
    thinking: bool,
    /// A summary pass is expected (else any pass: aging alone may keep the run inside).
    summary: bool,
    /// The model Claude Code asks for.
    model: &'static str,
    /// Codex asks the server to compact (its remote compaction) when its context reaches
    /// this many tokens; the proxy serves it (`--native-compaction serve`).
    remote_compaction: Option<usize>,
}

/// Runs `run` and checks the goals; panics listing every goal missed.
async fn check(run: Run) {
    let Some(clients) = clients::find() else { return };
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let model = model::start(Options {
        rounds: run.rounds,
        enforce_thinking: run.enforce_thinking,
        ..Options::default()
    })
    .await;
    let serve: &[&str] = if run.remote_compaction.is_some() {
        &["--native-compaction", "serve"]
    } else {
        &[]
    };
    let proxy = run
        .budget
        .map(|budget| proxy::start(&model.url(), dir.path(), budget, serve));
    let base = proxy.as_ref().map_or_else(|| model.url(), |p| p.url.clone());
    let client_dir = dir.path().join("client");
    let started = std::time::Instant::now();
    let output = match run.client {
        Client::Claude => {
            let options = clients::ClaudeOptions {
                turns: run.rounds + 10,
                thinking: run.thinking,
                model: run.model,
            };
            clients::claude(&clients, &base, &client_dir, options).await
        }
        Client::Codex => clients::codex(&clients, &format!("{base}/v1"), &client_dir, run.remote_compaction).await,
        Client::OpenCode => clients::opencode(&clients, &format!("{base}/v1"), &client_dir).await,
    };
    let received: Vec<Received> = model
        .received()
        .into_iter()
        .filter(|r| r.route.starts_with(&format!("POST {}", run.client.route())) && !r.route.contains("count_tokens"))
        .collect();
    describe_first(run.client, &model.received());
    let mut figures = Figures::of(&run, &output, &received);
    figures.seconds = started.elapsed().as_secs_f64();
    let mut log = Vec::new();
    if let Some(proxy) = proxy {
        let metrics = proxy.metrics().await;
        let store = proxy.store.clone();
        log = proxy.stop();
        figures.through_proxy(&run, &metrics, &store, dir.path(), &received, &log);
        keep(&run, &model.received(), &log, &metrics.text, dir.path());
    } else {
        keep(&run, &model.received(), &[], "", dir.path());
    }
    eprintln!("{}", figures.line(&run));
    let missed = figures.missed(&run);
    if !missed.is_empty() {
        let notable: Vec<&String> = log
            .iter()
            .filter(|l| {
                l.contains("WARN")
                    || l.contains("ERROR")
                    || l.contains("starts over")
                    || l.contains("context_management")
            })
            .take(12)
            .collect();
        panic!(
            "{} missed {} goal(s):\n- {}\nproxy log (first notable lines): {notable:#?}\nclient stdout tail: {}\nclient stderr tail: {}",
            label(&run),
            missed.len(),
            missed.join("\n- "),
            tail(&output.stdout),
            tail(&output.stderr)
        );
    }
}

/// With `COMPACTOR_REAL_CLIENTS_OUT=DIR`, keeps what a run saw under `DIR/<label>/`:
/// every request the model received (`requests/NNN.json`: route, headers, status,
/// error, body), the proxy's log and `/metrics`, and the exported transcripts.
fn keep(run: &Run, received: &[Received], log: &[String], metrics: &str, dir: &Path) {
    let Some(out) = std::env::var_os("COMPACTOR_REAL_CLIENTS_OUT") else {
        return;
    };
    let out = Path::new(&out).join(label(run).replace([' ', '@'], "-"));
    std::fs::create_dir_all(out.join("requests")).unwrap();
    let first = received.first().map(|r| r.at);
    for (n, r) in received.iter().enumerate() {
        let at_ms = first.map_or(0, |f| r.at.duration_since(f).as_millis() as u64);
        let record = serde_json::json!({"route": r.route, "at_ms": at_ms, "headers": r.headers, "status": r.status,
            "error": r.error, "tokens": r.tokens, "marks": r.marks, "turn": format!("{:?}", r.turn), "body": r.body});
        std::fs::write(
            out.join(format!("requests/{n:03}.json")),
            serde_json::to_vec_pretty(&record).unwrap(),
        )
        .unwrap();
    }
    std::fs::write(out.join("proxy.log"), log.join("\n")).unwrap();
    std::fs::write(out.join("metrics.txt"), metrics).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(entry.path(), out.join(entry.file_name())).unwrap();
        }
    }
}

fn label(run: &Run) -> String {
    match run.budget {
        Some(budget) if run.remote_compaction.is_some() => format!("{} remote compaction@{budget}", run.client.name()),
        Some(budget) if !run.thinking => format!("{} without thinking@{budget}", run.client.name()),
        Some(budget) if run.enforce_thinking => format!("{} thinking enforced@{budget}", run.client.name()),
        Some(budget) => format!("{}@{budget}", run.client.name()),
        None => format!("{} direct", run.client.name()),
    }
}

fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut start = text.len().saturating_sub(1500);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

/// What the client sends, from its first model request: what the proxy must handle.
fn describe_first(client: Client, all: &[Received]) {
    let Some(first) = all.iter().find(|r| r.route.starts_with("POST") && r.body.is_object()) else {
        return;
    };
    let session_headers: Vec<&str> = first
        .headers
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k.contains("session") || k.contains("thread") || k.contains("window-id"))
        .collect();
    let side: Vec<&str> = all
        .iter()
        .filter(|r| !r.route.contains(client.route()))
        .map(|r| r.route.as_str())
        .collect();
    eprintln!(
        "{} sends: {} keys {:?}; anthropic-beta {:?}; session headers {session_headers:?}; thinking {}; context_management {}; {} cache marks; side requests {side:?}",
        client.name(),
        first.route,
        first
            .body
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default(),
        first.header("anthropic-beta"),
        first.body["thinking"],
        first.body["context_management"],
        first.marks,
    );
}

/// A run of `client` at `budget` (`None`: directly at the model) for `rounds` rounds,
/// with the client's defaults and the thinking check counted, not enforced.
fn run(client: Client, budget: Option<usize>, rounds: usize) -> Run {
    Run {
        client,
        budget,
        rounds,
        enforce_thinking: false,
        thinking: true,
        summary: true,
        model: "claude-sonnet-4-5",
        remote_compaction: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_direct_is_accepted_by_the_scripted_model() {
    check(Run {
        enforce_thinking: true,
        ..run(Client::Claude, None, 6)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_direct_is_accepted_by_the_scripted_model() {
    check(run(Client::Codex, None, 6)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_the_proxy_at_80k() {
    // 50 rounds of 3-17 KB outputs: aging epochs alone keep the run under 80k.
    check(Run {
        summary: false,
        ..run(Client::Claude, Some(80_000), 50)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_the_proxy_at_40k() {
    check(run(Client::Claude, Some(40_000), 50)).await;
}

/// The signed-state issue's goal: with the documented thinking check enforced, on a
/// model with preserved thinking, Claude Code finishes its run through aging epochs and
/// summaries with no request refused: the oldest stubs go out as Claude Code sent them
/// with the server's clearing of them (the thinking after them stays valid), and the
/// kept turns' thinking after a summary is dropped at the request's asking
/// (`drop_block`), never refused. The other Claude Code runs count the invalid blocks
/// without refusing them (their line's `invalid` figure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_thinking_stays_bound_through_the_proxy_at_24k() {
    check(Run {
        enforce_thinking: true,
        model: "claude-opus-5-5",
        ..run(Client::Claude, Some(24_000), 50)
    })
    .await;
}

/// Claude Code with thinking off sends no `context_management`: the proxy's compaction
/// path under Claude Code's own moving cache breakpoint, whatever the stand-down does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_without_thinking_through_the_proxy_at_40k() {
    check(Run {
        thinking: false,
        ..run(Client::Claude, Some(40_000), 50)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_direct_is_accepted_by_the_scripted_model() {
    check(Run {
        enforce_thinking: true,
        ..run(Client::OpenCode, None, 3)
    })
    .await;
}

/// opencode over its Anthropic provider places its own cache marks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_over_anthropic_through_the_proxy_at_32k() {
    // Aging alone keeps this run under 32k.
    check(Run {
        summary: false,
        ..run(Client::OpenCode, Some(32_000), 50)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_the_proxy_at_32k() {
    check(run(Client::Codex, Some(32_000), 50)).await;
}

/// Codex's own remote compaction, against a model with none: the provider declaring it
/// (`capabilities.remote_compaction = "v2"`, what makes Codex send `compaction_trigger`;
/// naming the provider `OpenAI` does the same), Codex compacting at 18k of context, the proxy at 32k answering each compaction itself (`serve`) and opening the
/// item Codex sends back; at least three of them, with every goal above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_remote_compaction_through_the_proxy_at_32k() {
    check(Run {
        remote_compaction: Some(18_000),
        // The passes Codex asks for may all be aging epochs (its context is mostly
        // tool output): any pass counts.
        summary: false,
        ..run(Client::Codex, Some(32_000), 50)
    })
    .await;
}

/// The gauges can fail: the scripted model refuses, over HTTP, a fifth breakpoint, an
/// orphan tool result and a thinking block whose prefix was edited, with Anthropic's
/// messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scripted_model_refuses_what_the_provider_refuses() {
    let model = model::start(Options {
        enforce_thinking: true,
        ..Options::default()
    })
    .await;
    let client = reqwest::Client::new();
    let send = |body: Value| client.post(format!("{}/v1/messages", model.url())).json(&body).send();
    let mark = serde_json::json!({"type": "ephemeral"});
    let mut body = serde_json::json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "You are scripted."}],
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "Go."}]
    });
    // A good first request: a signed thinking block and round 1's call.
    let first: Value = send(body.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(first["content"][0]["type"], "thinking", "{first}");
    assert_eq!(first["content"][1]["type"], "tool_use", "{first}");
    let call = first["content"][1]["id"].clone();
    body["messages"].as_array_mut().unwrap().extend([
        serde_json::json!({"role": "assistant", "content": first["content"]}),
        serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": "ROUND 1\nok"}]}),
    ]);
    let second = send(body.clone()).await.unwrap();
    assert_eq!(second.status(), 200);
    let second: Value = second.json().await.unwrap();
    assert_eq!(second["content"][1]["input"]["command"], model::command(2), "{second}");

    let refused = |response: reqwest::Response| async move {
        assert_eq!(response.status(), 400);
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["type"], "error");
        error["error"]["message"].as_str().unwrap().to_owned()
    };
    let mut marked = body.clone();
    marked["system"][0]["cache_control"] = mark.clone();
    marked["tools"][0]["cache_control"] = mark.clone();
    marked["messages"][0]["content"] = serde_json::json!([{"type": "text", "text": "Go.", "cache_control": mark}]);
    marked["messages"][2]["content"][0]["cache_control"] = mark.clone();
    assert_eq!(
        send(marked.clone()).await.unwrap().status(),
        200,
        "four marks are allowed"
    );
    marked["cache_control"] = mark;
    let message = refused(send(marked).await.unwrap()).await;
    assert_eq!(
        message,
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    );

    let mut orphan = body.clone();
    orphan["messages"].as_array_mut().unwrap().remove(1);
    assert!(
        refused(send(orphan).await.unwrap())
            .await
            .contains("unexpected `tool_use_id`")
    );

    let mut edited = body;
    edited["messages"][0]["content"] = serde_json::json!("[summary of earlier turns] Go.");
    let message = refused(send(edited).await.unwrap()).await;
    assert!(
        message.starts_with(
            "messages.1.content.0: Invalid signature in thinking block. The block is bound to a different conversation"
        ),
        "{message}"
    );
    let statuses: Vec<u16> = model.received().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 200, 200, 400, 400, 400], "every refusal is recorded");
}
