//! The proxy's added latency for the requests the agent CLIs really send, measured in
//! one run: Claude Code's (Anthropic Messages, a ~29 KB system prompt in three blocks,
//! two of them marked, ~48 KB of tool declarations, thinking on, `context_management`,
//! a `cache_control` mark on the last block that moves every request, tool results with
//! `"is_error": false`, streamed) at 40k and 80k budgets, and Codex CLI's (Responses
//! API, developer messages, function calls, `store: false`, streamed) at 32k as the
//! named baseline. Each session runs 50 tool rounds of 3–17 KB outputs (the real-client
//! suite's sizes) through the proxy to a 127.0.0.1 upstream that answers at once, with
//! the proxy set up as `compactor proxy --summarizer ledger --store sqlite:…` sets it up,
//! so the history grows to the budget and passes happen.
//!
//! The figure is the proxy's own: the `x-compactor-overhead-ms` header it stamps on every
//! response (the time it held the request before forwarding it; the same time its
//! `compactor_proxy_added_latency_seconds` histogram sums, and this run checks the two
//! agree). Rounds are split into those that ran a pass and those that did not (a round
//! ran one when `compactor_proxy_compactions_total` moved).
//!
//! ```sh
//! cargo run --release -p compactor-proxy --example client_latency
//! ```
//!
//! Env: `CLIENT_LATENCY_SESSIONS` (sessions per shape, default 3), `CLIENT_LATENCY_ROUNDS`
//! (tool rounds per session, default 50), `CLIENT_LATENCY_MAX_MEAN_MS` (fail when a
//! Claude Code run's mean is above it). The run fails (exit 1) when a shape was not
//! measured, a figure is not finite and positive, a budgeted run ran no pass, or the
//! header and the histogram disagree.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::Response;
use axum::routing::post;
use compactor_proxy::{OVERHEAD_HEADER, ProxyConfig, WireOptions};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::counter_by_name;
use llm_compactor::plan::breakpoints::{BreakpointPolicy, CacheMode};
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::store::open_store;
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Map, Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Deterministic prose: words drawn from a small vocabulary by a fixed generator, so the
/// tokenizer sees text like a prompt's rather than one repeated word.
struct Prose(u64);

impl Prose {
    const WORDS: [&'static str; 48] = [
        "the",
        "agent",
        "must",
        "always",
        "read",
        "file",
        "before",
        "editing",
        "it",
        "use",
        "tool",
        "when",
        "command",
        "output",
        "directory",
        "never",
        "create",
        "new",
        "unless",
        "user",
        "asks",
        "for",
        "a",
        "change",
        "run",
        "tests",
        "after",
        "each",
        "edit",
        "prefer",
        "small",
        "diffs",
        "explain",
        "briefly",
        "what",
        "you",
        "did",
        "and",
        "why",
        "paths",
        "are",
        "absolute",
        "quote",
        "them",
        "with",
        "spaces",
        "IMPORTANT:",
        "`git`",
    ];

    fn text(&mut self, chars: usize) -> String {
        let mut out = String::with_capacity(chars + 16);
        let mut sentence = 0;
        while out.len() < chars {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let word = Self::WORDS[(self.0 >> 33) as usize % Self::WORDS.len()];
            out.push_str(word);
            sentence += 1;
            if sentence % 13 == 0 {
                out.push_str(".\n");
            } else {
                out.push(' ');
            }
        }
        out
    }
}

/// Round `n`'s tool output: a marker line, then 3–17 KB of numbered lines (the
/// real-client suite's scripted model prints the same sizes).
fn tool_output(n: usize) -> String {
    let bytes = 3 * 1024 + (n * 7919 % 15) * 1024 - 16;
    let mut out = format!("ROUND {n}\n");
    let mut line = 1;
    while out.len() < bytes {
        out.push_str(&format!(
            "round {n:02} line {line:05}: scripted output filling the context window of the agent\n"
        ));
        line += 1;
    }
    out
}

/// Which client's requests a run sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    ClaudeCode,
    Codex,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::ClaudeCode => "claude-code",
            Shape::Codex => "codex",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Shape::ClaudeCode => "/v1/messages",
            Shape::Codex => "/v1/responses",
        }
    }
}

/// One client session: what it sends, round after round.
struct Client {
    shape: Shape,
    id: String,
    /// The fixed fields (system, tools, settings), in the client's key order.
    fixed: Map<String, Value>,
    /// The conversation so far.
    history: Vec<Value>,
}

impl Client {
    fn new(shape: Shape, session: usize) -> Self {
        let mut prose = Prose(0x5eed + session as u64);
        let id = format!("6e2d1c31-dd50-40da-ae6b-{session:012}");
        let mut fixed = Map::new();
        let history = match shape {
            Shape::ClaudeCode => {
                fixed.insert(
                    "system".into(),
                    json!([
                        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;"},
                        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                         "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": prose.text(28_000), "cache_control": {"type": "ephemeral"}},
                    ]),
                );
                fixed.insert("tools".into(), Value::Array(claude_tools(&mut prose)));
                fixed.insert(
                    "metadata".into(),
                    json!({"user_id": json!({"device_id": "c409edb075b077f46d3c0cbc10993cdd3bee42fa9fccf5d8fae7aef430139328",
                        "account_uuid": "", "session_id": id}).to_string()}),
                );
                fixed.insert("max_tokens".into(), json!(32000));
                fixed.insert(
                    "thinking".into(),
                    json!({"budget_tokens": 31999, "type": "enabled", "display": "omitted"}),
                );
                fixed.insert(
                    "context_management".into(),
                    json!({"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}),
                );
                fixed.insert("stream".into(), json!(true));
                let mut blocks: Vec<Value> = [845, 198, 495, 1934, 6494, 116, 94, 628]
                    .iter()
                    .map(|&n| json!({"type": "text", "text": format!("<system-reminder>\n{}\n</system-reminder>", prose.text(n))}))
                    .collect();
                blocks
                    .push(json!({"type": "text", "text": "Run the scripted rounds until the model says it is done."}));
                vec![json!({"role": "user", "content": blocks})]
            }
            Shape::Codex => {
                fixed.insert("stream".into(), json!(true));
                fixed.insert("tools".into(), Value::Array(codex_tools(&mut prose)));
                fixed.insert("tool_choice".into(), json!("auto"));
                fixed.insert("parallel_tool_calls".into(), json!(true));
                fixed.insert("reasoning".into(), json!({"summary": "auto"}));
                fixed.insert("store".into(), json!(false));
                fixed.insert("include".into(), json!(["reasoning.encrypted_content"]));
                fixed.insert("prompt_cache_key".into(), json!(id));
                fixed.insert(
                    "client_metadata".into(),
                    json!({"turn_id": format!("turn-{session}"), "x-codex-turn-metadata": prose.text(900)}),
                );
                let message = |id: usize, role: &str, text: String| {
                    json!({"type": "message", "id": format!("msg_{session}_{id}"), "role": role,
                        "content": [{"type": "input_text", "text": text}]})
                };
                vec![
                    message(0, "developer", prose.text(17_500)),
                    message(1, "developer", prose.text(2_600)),
                    message(2, "user", prose.text(450)),
                    message(
                        3,
                        "user",
                        "Run the scripted rounds until the model says it is done.".to_owned(),
                    ),
                ]
            }
        };
        Client {
            shape,
            id,
            fixed,
            history,
        }
    }

    /// The request of the current round, and its headers.
    fn request(&self) -> (Vec<u8>, Vec<(&'static str, String)>) {
        let mut body = Map::new();
        match self.shape {
            Shape::ClaudeCode => {
                body.insert("model".into(), json!("claude-sonnet-4-5"));
                body.insert("messages".into(), Value::Array(self.history.clone()));
            }
            Shape::Codex => {
                body.insert("model".into(), json!("gpt-5-codex"));
                body.insert("input".into(), Value::Array(self.history.clone()));
            }
        }
        for (key, value) in &self.fixed {
            // Claude Code sends `messages` before `system`; Codex `stream` before `input`.
            body.insert(key.clone(), value.clone());
        }
        let headers = match self.shape {
            Shape::ClaudeCode => vec![
                ("x-claude-code-session-id", self.id.clone()),
                ("anthropic-version", "2023-06-01".to_owned()),
                (
                    "anthropic-beta",
                    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27".to_owned(),
                ),
                ("x-api-key", "sk-ant-bench".to_owned()),
            ],
            Shape::Codex => vec![
                ("session-id", self.id.clone()),
                ("authorization", "Bearer sk-bench".to_owned()),
            ],
        };
        (serde_json::to_vec(&Value::Object(body)).unwrap(), headers)
    }

    /// The model's answer to round `n` (a tool call) and the tool's output, appended as
    /// the client appends them; Claude Code moves its cache mark to the new last block.
    fn advance(&mut self, n: usize) {
        let output = tool_output(n);
        match self.shape {
            Shape::ClaudeCode => {
                if let Some(last) = self.history.last_mut()
                    && let Some(blocks) = last["content"].as_array_mut()
                    && let Some(Value::Object(block)) = blocks.last_mut()
                {
                    block.remove("cache_control");
                }
                let call = format!("toolu_bench_{n:05}");
                self.history.push(json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "", "signature": format!("{:064x}", n as u128 * 0x9e3779b97f4a7c15)},
                    {"type": "tool_use", "id": call, "name": "Bash",
                     "input": {"command": format!("bash round-{n}.sh"), "description": format!("Print round {n}'s output")}},
                ]}));
                self.history.push(json!({"role": "user", "content": [
                    {"tool_use_id": call, "type": "tool_result", "content": output, "is_error": false,
                     "cache_control": {"type": "ephemeral"}},
                ]}));
            }
            Shape::Codex => {
                let call = format!("call_bench_{n:05}");
                self.history.push(json!({"type": "function_call", "status": "completed",
                    "id": format!("fc_{n:05}"), "name": "exec_command",
                    "arguments": json!({"cmd": format!("bash round-{n}.sh")}).to_string(), "call_id": call}));
                self.history
                    .push(json!({"type": "function_call_output", "call_id": call,
                    "output": output}));
            }
        }
    }
}

/// A tool declaration with a long description and a nested schema.
fn tool_schema(prose: &mut Prose, name: &str, description: usize, properties: usize) -> (String, Value) {
    let mut props = Map::new();
    for i in 0..properties {
        props.insert(
            format!("{name}_arg_{i}"),
            json!({"type": if i % 3 == 0 {"string"} else if i % 3 == 1 {"integer"} else {"array"},
                "description": prose.text(120 + 40 * (i % 5)),
                "items": {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"}}}}),
        );
    }
    let required: Vec<String> = props.keys().take(2).cloned().collect();
    (
        prose.text(description),
        json!({"type": "object", "properties": props, "required": required, "additionalProperties": false,
            "$schema": "http://json-schema.org/draft-07/schema#"}),
    )
}

/// Claude Code's tools: 12 declarations, ~48 KB.
fn claude_tools(prose: &mut Prose) -> Vec<Value> {
    [
        ("Agent", 8000, 6),
        ("Bash", 10_500, 6),
        ("Edit", 1000, 4),
        ("ListAgents", 1200, 4),
        ("Read", 2000, 5),
        ("ReportFindings", 1500, 5),
        ("ScheduleWakeup", 3800, 6),
        ("Skill", 1100, 4),
        ("ToolSearch", 900, 3),
        ("Workflow", 4500, 6),
        ("Glob", 600, 2),
        ("Write", 600, 3),
    ]
    .iter()
    .map(|&(name, description, properties)| {
        let (description, schema) = tool_schema(prose, name, description, properties);
        json!({"name": name, "description": description, "input_schema": schema})
    })
    .collect()
}

/// Codex CLI's tools: 8 functions and a web search, ~18 KB.
fn codex_tools(prose: &mut Prose) -> Vec<Value> {
    let mut tools: Vec<Value> = [
        ("exec_command", 900, 5),
        ("write_stdin", 400, 3),
        ("request_user_input", 800, 4),
        ("view_image", 200, 1),
        ("multi_agent_v1", 7000, 6),
        ("get_goal", 150, 1),
        ("create_goal", 400, 3),
        ("update_goal", 1200, 5),
    ]
    .iter()
    .map(|&(name, description, properties)| {
        let (description, schema) = tool_schema(prose, name, description, properties);
        json!({"type": "function", "name": name, "description": description, "strict": false, "parameters": schema})
    })
    .collect();
    tools.push(json!({"type": "web_search", "external_web_access": false}));
    tools
}

/// The 127.0.0.1 upstream: answers every request at once, streamed, in each API's event
/// sequence, with a usage the proxy calibrates from (a token per 4.7 bytes, what o200k makes of
/// Claude Code's requests).
async fn upstream() -> String {
    let app = Router::new()
        .route(
            "/v1/messages",
            post(|body: Bytes| async move {
                let tokens = body.len() * 10 / 47;
                let events = [
                    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                        "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
                        "usage": {"input_tokens": tokens, "output_tokens": 1,
                                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "abc"}}),
                    json!({"type": "content_block_stop", "index": 0}),
                    json!({"type": "content_block_start", "index": 1, "content_block":
                        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}}),
                    json!({"type": "content_block_delta", "index": 1, "delta":
                        {"type": "input_json_delta", "partial_json": "{\"command\":\"bash round.sh\"}"}}),
                    json!({"type": "content_block_stop", "index": 1}),
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                        "usage": {"input_tokens": tokens, "output_tokens": 24}}),
                    json!({"type": "message_stop"}),
                ];
                sse(events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())))
            }),
        )
        .route(
            "/v1/responses",
            post(|body: Bytes| async move {
                let tokens = body.len() * 10 / 47;
                let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
                    "arguments": "{\"cmd\":\"bash round.sh\"}", "status": "completed"});
                let events = [
                    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
                    json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
                    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                        "output": [call],
                        "usage": {"input_tokens": tokens, "output_tokens": 24, "total_tokens": tokens + 24}}}),
                ];
                sse(events.iter().map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn sse(events: impl Iterator<Item = String>) -> Response {
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(events.collect::<String>()))
        .unwrap()
}

/// A proxy as `compactor proxy --budget BUDGET --summarizer ledger --store sqlite:…`
/// starts it, on an ephemeral port.
async fn proxy(upstream: &str, budget: usize, dir: &std::path::Path) -> String {
    let store = open_store(&format!(
        "sqlite:{}",
        dir.join(format!("sessions-{budget}.db")).display()
    ))
    .await
    .unwrap();
    let config = CompactorConfig::builder(budget).build().unwrap();
    let counter = counter_by_name("o200k").unwrap();
    let compactor = Compactor::new(config, counter)
        .with_ledger(LedgerPolicy::default())
        .with_summarizer(Arc::new(LedgerSummarizer));
    let config = ProxyConfig::builder(upstream, Arc::new(compactor), store)
        .wire(WireOptions {
            anthropic_cache: BreakpointPolicy {
                mode: CacheMode::Auto,
                ..BreakpointPolicy::default()
            },
            ..WireOptions::default()
        })
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(compactor_proxy::serve(config, listener, std::future::pending()));
    url
}

/// A metric's value in the exposition text (0 when absent).
fn series(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// What one run measured.
struct Run {
    label: String,
    shape: Shape,
    budget: usize,
    /// The header's figure per round, in ms, and whether the round ran a pass.
    rounds: Vec<(f64, bool)>,
    /// The histogram's mean over the same rounds, in ms.
    histogram_mean: f64,
    largest_request: usize,
}

async fn run(upstream: &str, shape: Shape, budget: usize, sessions: usize, rounds: usize) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let proxy = proxy(upstream, budget, dir.path()).await;
    let http = reqwest::Client::new();
    let metrics = || async {
        let text = http
            .get(format!("{proxy}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        (
            series(&text, "compactor_proxy_compactions_total"),
            series(&text, "compactor_proxy_added_latency_seconds_sum"),
        )
    };
    let mut measured = Vec::new();
    let mut largest_request = 0;
    let (mut passes, mut histogram) = metrics().await;
    let histogram_start = histogram;
    for session in 0..sessions {
        let mut client = Client::new(shape, session);
        for n in 0..=rounds {
            let (body, headers) = client.request();
            largest_request = largest_request.max(body.len());
            let mut request = http.post(format!("{proxy}{}", shape.path())).body(body);
            request = request.header("content-type", "application/json");
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let response = request.send().await.unwrap();
            assert!(
                response.status().is_success(),
                "{}: {}",
                shape.name(),
                response.status()
            );
            let overhead: f64 = response
                .headers()
                .get(OVERHEAD_HEADER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .expect("the proxy stamps its overhead on every response");
            // The client reads the whole answer before its next round.
            let _ = response.bytes().await.unwrap();
            let (now, sum) = metrics().await;
            measured.push((overhead, now > passes));
            passes = now;
            histogram = sum;
            client.advance(n + 1);
        }
    }
    let histogram_mean = (histogram - histogram_start) * 1e3 / measured.len() as f64;
    Run {
        label: format!("{} @ {}k", shape.name(), budget / 1000),
        shape,
        budget,
        rounds: measured,
        histogram_mean,
        largest_request,
    }
}

/// Mean, p50 and p99 of `values` (NaN when empty).
fn stats(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    (values.iter().sum::<f64>() / values.len() as f64, at(0.5), at(0.99))
}

fn main() {
    let sessions = env_usize("CLIENT_LATENCY_SESSIONS", 3).max(1);
    let rounds = env_usize("CLIENT_LATENCY_ROUNDS", 50).max(2);
    let max_mean: Option<f64> = std::env::var("CLIENT_LATENCY_MAX_MEAN_MS")
        .ok()
        .and_then(|v| v.parse().ok());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let runs = runtime.block_on(async {
        let upstream = upstream().await;
        let mut runs = Vec::new();
        for (shape, budget) in [
            (Shape::ClaudeCode, 40_000),
            (Shape::ClaudeCode, 80_000),
            (Shape::Codex, 32_000),
        ] {
            runs.push(run(&upstream, shape, budget, sessions, rounds).await);
        }
        runs
    });
    println!(
        "proxy added latency (x-compactor-overhead-ms), {sessions} sessions x {} requests per run, ledger summarizer, sqlite store, o200k",
        rounds + 1
    );
    println!(
        "{:<20} {:>5} {:>6} | {:>8} {:>8} {:>8} | no pass: {:>5} {:>8} {:>8} {:>8} | pass: {:>8} | {:>9}",
        "run", "reqs", "passes", "mean", "p50", "p99", "reqs", "mean", "p50", "p99", "mean", "hist mean"
    );
    let mut failures = Vec::new();
    for run in &runs {
        let all: Vec<f64> = run.rounds.iter().map(|r| r.0).collect();
        let quiet: Vec<f64> = run.rounds.iter().filter(|r| !r.1).map(|r| r.0).collect();
        let passed: Vec<f64> = run.rounds.iter().filter(|r| r.1).map(|r| r.0).collect();
        let (mean, p50, p99) = stats(&all);
        let (qmean, q50, q99) = stats(&quiet);
        let (pmean, _, _) = stats(&passed);
        println!(
            "{:<20} {:>5} {:>6} | {mean:>8.3} {p50:>8.3} {p99:>8.3} | no pass: {:>5} {qmean:>8.3} {q50:>8.3} {q99:>8.3} | pass: {pmean:>8.3} | {:>9.3}   (largest request {} KB)",
            run.label,
            all.len(),
            passed.len(),
            quiet.len(),
            run.histogram_mean,
            run.largest_request / 1024,
        );
        for (what, v) in [("mean", mean), ("p50", p50), ("p99", p99), ("no-pass mean", qmean)] {
            if !(v.is_finite() && v > 0.0) {
                failures.push(format!("{}: {what} is {v}", run.label));
            }
        }
        if passed.is_empty() {
            failures.push(format!("{}: no pass ran at a {} budget", run.label, run.budget));
        }
        // The header rounds to a microsecond; the histogram is the same durations.
        if (run.histogram_mean - mean).abs() > 0.01 + mean * 0.01 {
            failures.push(format!(
                "{}: the header's mean {mean:.3} ms and the histogram's {:.3} ms disagree",
                run.label, run.histogram_mean
            ));
        }
        if let Some(max) = max_mean
            && run.shape == Shape::ClaudeCode
            && mean > max
        {
            failures.push(format!(
                "{}: mean {mean:.3} ms over CLIENT_LATENCY_MAX_MEAN_MS={max}",
                run.label
            ));
        }
    }
    if !runs.iter().any(|r| r.shape == Shape::Codex && !r.rounds.is_empty()) {
        failures.push("the Codex baseline was not measured".to_owned());
    }
    if failures.is_empty() {
        println!("self-check: ok");
    } else {
        for failure in &failures {
            eprintln!("self-check failed: {failure}");
        }
        std::process::exit(1);
    }
}
