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
use serde_json::json;

mod clients;

use clients::{Client, Shape};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
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
