//! Added latency of the proxy: the same requests sent straight to a 127.0.0.1 upstream
//! and through the proxy (SQLite store in a temp dir, WAL, the o200k counter the CLI
//! uses by default, session lookup, rewrite check and store write included), for
//! requests that need no compaction. Prints p50/p99 of both and of the per-request
//! difference, for a whole answer and for the first byte of a streamed one.
//!
//! `CARGO_TARGET_DIR=/work/targets/release cargo bench -p compactor-proxy --bench latency`
//!
//! Env: `LATENCY_ROUNDS` (default 2000), `LATENCY_HISTORY` (messages per request,
//! default 40), `LATENCY_CHARS` (chars per message, default 480), `LATENCY_BUDGET`
//! (default 10,000,000: never compacts; a budget the history is over makes the first
//! round of each session compact, and every later round carries the rewrite: the
//! stable-prefix check on every request), `LATENCY_SESSION_ROUNDS` (rounds per session,
//! default 100; the first round of each session is not sampled), `LATENCY_STORE`
//! (`memory` instead of the SQLite file, to see what the durable write costs),
//! `LATENCY_API` (`chat`, the default: `/v1/chat/completions`; `responses`: the same
//! conversation as OpenAI Responses `input` items on `/v1/responses`, `store: false`;
//! `messages`: Anthropic Messages on `/v1/messages`, with no `cache_control`, so the
//! proxy's `auto` breakpoints are placed on every request), `LATENCY_OTEL=1` (with
//! `--features otel`: every request traced to OpenTelemetry, exported to a local sink),
//! `LATENCY_EXPAND_TOOL=1` (`--expand-tool` on and the requests declare a tool: with a
//! budget that compacts, every rewritten request is offered `compactor_expand`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt;
use compactor_proxy::ProxyConfig;
use llm_compactor::count::counter_by_name;
use llm_compactor::store::open_store;
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// An upstream that answers at once: a JSON answer, or (with `"stream": true`) an SSE
/// answer whose first event goes out at once and the rest 2 ms later.
async fn upstream() -> String {
    let answer = json!({
        "id":"c","object":"chat.completion","created":1,"model":"m",
        "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":100,"completion_tokens":1,"total_tokens":101}
    });
    let responses_answer = json!({
        "id":"resp_1","object":"response","created_at":1,"model":"m","status":"completed",
        "output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed",
                   "content":[{"type":"output_text","text":"ok","annotations":[]}]}],
        "usage":{"input_tokens":100,"output_tokens":1,"total_tokens":101}
    });
    let messages_answer = json!({
        "id":"msg_1","type":"message","role":"assistant","model":"m",
        "content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn",
        "usage":{"input_tokens":100,"output_tokens":1}
    });
    let app = Router::new()
        .route(
            "/v1/messages",
            post(move |body: axum::body::Bytes| {
                answer_at_once(
                    body,
                    messages_answer.clone(),
                    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":100,\"output_tokens\":1}}}\n\n",
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                )
            }),
        )
        .route(
            "/v1/chat/completions",
            post(move |body: axum::body::Bytes| {
                answer_at_once(
                    body,
                    answer.clone(),
                    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
                    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":1,\"total_tokens\":101}}\n\ndata: [DONE]\n\n",
                )
            }),
        )
        .route(
            "/v1/responses",
            post(move |body: axum::body::Bytes| {
                answer_at_once(
                    body,
                    responses_answer.clone(),
                    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n",
                    "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":100,\"output_tokens\":1,\"total_tokens\":101}}}\n\n",
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // As production API servers do: small SSE writes go out at once (no Nagle delay).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// `answer` as JSON, or (when the request asks `"stream": true`) `first` at once and
/// `last` 2 ms later as an SSE body.
async fn answer_at_once(body: axum::body::Bytes, answer: Value, first: &'static str, last: &'static str) -> Response {
    let streamed = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("stream").and_then(Value::as_bool))
        == Some(true);
    if !streamed {
        return axum::Json(answer).into_response();
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(4);
    tokio::spawn(async move {
        let _ = tx.send(Ok(first.to_owned())).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
        let _ = tx.send(Ok(last.to_owned())).await;
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// The API a run speaks (`LATENCY_API`).
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Chat,
    Responses,
    Messages,
}

impl Api {
    fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
        }
    }

    /// A message of the conversation as this API's request carries it.
    fn message(self, role: &str, text: String) -> Value {
        match (self, role) {
            (Api::Responses, "assistant") => json!({
                "type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]
            }),
            _ => json!({"role": role, "content": text}),
        }
    }

    /// The request body of `messages`.
    fn body(self, messages: &[Value], stream: bool) -> Value {
        let mut body = match self {
            Api::Chat => json!({"model": "m", "messages": messages}),
            Api::Responses => json!({"model": "m", "input": messages, "store": false}),
            Api::Messages => json!({"model": "m", "max_tokens": 64, "system": messages[0]["content"],
                "messages": messages[1..]}),
        };
        if std::env::var("LATENCY_EXPAND_TOOL").is_ok_and(|v| v == "1") {
            // A tool of the client's own: what lets `--expand-tool` offer its tool.
            body["tools"] = match self {
                Api::Chat => {
                    json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}])
                }
                Api::Responses => json!([{"type": "function", "name": "bash", "parameters": {"type": "object"}}]),
                Api::Messages => json!([{"name": "bash", "input_schema": {"type": "object"}}]),
            };
        }
        if stream {
            body["stream"] = json!(true);
            if self == Api::Chat {
                body["stream_options"] = json!({"include_usage": true});
            }
        }
        body
    }
}

/// The whole answer's time, and the time to its first body byte.
async fn time(client: &reqwest::Client, url: &str, api: Api, session: &str, body: &Value) -> (Duration, Duration) {
    let started = Instant::now();
    let mut response = client
        .post(format!("{url}{}", api.path()))
        .header("x-compactor-session", session)
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let first = response.chunk().await.unwrap();
    let ttfb = started.elapsed();
    assert!(first.is_some());
    while response.chunk().await.unwrap().is_some() {}
    (started.elapsed(), ttfb)
}

fn report(name: &str, direct: &mut [Duration], proxied: &mut [Duration]) {
    let mut added: Vec<Duration> = proxied
        .iter()
        .zip(direct.iter())
        .map(|(p, d)| p.saturating_sub(*d))
        .collect();
    direct.sort();
    proxied.sort();
    added.sort();
    println!("{name}");
    println!("             p50        p99");
    for (label, v) in [("direct", &*direct), ("proxied", &*proxied), ("added", &added[..])] {
        println!(
            "  {label:<8} {:>8.3} ms {:>8.3} ms",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99))
        );
    }
    println!(
        "  p50(proxied) - p50(direct) = {:.3} ms; p99(proxied) - p99(direct) = {:.3} ms",
        ms(percentile(proxied, 0.5)) - ms(percentile(direct, 0.5)),
        ms(percentile(proxied, 0.99)) - ms(percentile(direct, 0.99))
    );
}

fn main() {
    let rounds = env_usize("LATENCY_ROUNDS", 2000);
    let history = env_usize("LATENCY_HISTORY", 40);
    let chars = env_usize("LATENCY_CHARS", 480);
    let budget = env_usize("LATENCY_BUDGET", 10_000_000);
    let per_session = env_usize("LATENCY_SESSION_ROUNDS", 100).max(2);
    let api = match std::env::var("LATENCY_API").as_deref() {
        Ok("responses") => Api::Responses,
        Ok("messages") => Api::Messages,
        _ => Api::Chat,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let upstream = upstream().await;
        let dir = tempfile::tempdir().unwrap();
        let store_url = match std::env::var("LATENCY_STORE").as_deref() {
            Ok("memory") => "memory:".to_owned(),
            _ => format!("sqlite:{}", dir.path().join("bench.db").display()),
        };
        let store = open_store(&store_url).await.unwrap();
        let config = CompactorConfig::builder(budget).build().unwrap();
        let counter = counter_by_name("o200k").unwrap();
        let compactor = Arc::new(Compactor::new(config, counter));
        let mut builder = ProxyConfig::builder(&upstream, compactor, store);
        // LATENCY_OTEL=1 (with `--features otel`): every request traced, exported to a
        // 127.0.0.1 OTLP/HTTP receiver that discards what it gets.
        #[cfg(feature = "otel")]
        if std::env::var("LATENCY_OTEL").is_ok_and(|v| v == "1") {
            let sink = Router::new().route("/v1/traces", post(|| async { "{}" }));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, sink).await });
            builder = builder.telemetry(Some(compactor_proxy::Telemetry::to_endpoint(&url).unwrap()));
            eprintln!("tracing every request to OpenTelemetry ({url})");
        }
        // LATENCY_EXPAND_TOOL=1: `--expand-tool` on, and the requests declare a tool, so a
        // compacted session's requests are offered `compactor_expand` (the bench's
        // upstream never calls it: the cost of offering it, not of an expansion).
        if std::env::var("LATENCY_EXPAND_TOOL").is_ok_and(|v| v == "1") {
            builder = builder.expand_tool(Some(compactor_proxy::ExpandTool::default()));
            eprintln!("--expand-tool on; requests declare a tool");
        }
        let proxy_config = builder.build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(compactor_proxy::serve(proxy_config, listener, std::future::pending()));
        let client = reqwest::Client::new();

        let words = "lorem ipsum ".repeat(chars / 12 + 1);
        let base: Vec<Value> = std::iter::once(api.message("system", "You are a coding agent.".to_owned()))
            .chain((0..history).map(|i| {
                let role = if i % 2 == 0 { "user" } else { "assistant" };
                api.message(role, format!("turn {i}: {}", &words[..chars]))
            }))
            .collect();
        let mut messages = base.clone();
        let (mut direct, mut proxied) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        let (mut direct_ttfb, mut proxied_ttfb) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        let mut session = 0;
        let mut in_session = 0;
        let warmup = 20;
        let mut round = 0;
        while direct.len() < rounds {
            // Each round the agent adds a turn: the proxy checks the session's prefix,
            // counts, and writes the new message to the store, as in a real run. Every
            // other round is streamed: its first byte is timed.
            messages.push(api.message("user", format!("round {round}")));
            let stream = round % 2 == 1;
            let body = api.body(&messages, stream);
            let key = format!("bench-{session}");
            // Alternate which goes first so neither side always meets a warmer cache.
            let (d, p) = if round % 4 < 2 {
                let d = time(&client, &upstream, api, &key, &body).await;
                (d, time(&client, &proxy, api, &key, &body).await)
            } else {
                let p = time(&client, &proxy, api, &key, &body).await;
                (time(&client, &upstream, api, &key, &body).await, p)
            };
            messages.push(api.message("assistant", "ok".to_owned()));
            let sampled = round >= warmup && in_session > 0;
            in_session += 1;
            if in_session == per_session {
                // Keep the request size steady: start a new session of the same size.
                messages = base.clone();
                session += 1;
                in_session = 0;
            }
            round += 1;
            if !sampled {
                continue;
            }
            if stream {
                direct_ttfb.push(d.1);
                proxied_ttfb.push(p.1);
            } else {
                direct.push(d.0);
                proxied.push(p.0);
            }
        }
        let metrics = client
            .get(format!("{proxy}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let mean_before_forwarding = metrics
            .lines()
            .find_map(|l| l.strip_prefix("compactor_proxy_added_latency_seconds_sum "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_default()
            / metrics
                .lines()
                .find_map(|l| l.strip_prefix("compactor_proxy_added_latency_seconds_count "))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(1.0);
        let compactions = metrics
            .lines()
            .find(|l| l.starts_with("compactor_proxy_compactions_total "))
            .unwrap_or_default()
            .to_owned();
        let request_bytes = serde_json::to_vec(&api.body(&base, false)).unwrap().len();
        println!(
            "proxy added latency ({}): {rounds} sampled rounds each, {history}+ messages of {chars} chars (~{} KB requests), budget {budget}, o200k counter, store {}; {compactions} (first round of each {per_session}-round session, not sampled)",
            api.path(),
            request_bytes / 1024,
            store_url.split(':').next().unwrap_or_default()
        );
        report("whole answer (non-streamed)", &mut direct, &mut proxied);
        report("time to first byte (streamed)", &mut direct_ttfb, &mut proxied_ttfb);
        println!(
            "the proxy's own histogram: mean time before forwarding {:.3} ms (parse, session, rewrite check, count, store write)",
            mean_before_forwarding * 1e3
        );
    });
}
