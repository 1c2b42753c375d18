//! Added latency per proxied request by session store: the in-memory store, the
//! embedded SQLite file, and a shared PostgreSQL (a throwaway cluster on 127.0.0.1, as
//! the tests start it; skipped with a notice when PostgreSQL is absent), with one proxy
//! instance and with two instances on the same database taking the rounds of every
//! session in turn (each round then first catches up on the other instance's events).
//!
//! The same request is sent straight to a 127.0.0.1 upstream and through the proxy; the
//! difference is what the proxy adds (session lookup, catch-up, prefix check, store
//! write), for a request that needs no compaction. Prints a Markdown table for
//! BENCHMARKS.md.
//!
//! `CARGO_TARGET_DIR=/work/targets/release cargo bench -p compactor-proxy --bench shared_store`
//! Env: `LATENCY_ROUNDS` (default 1000), `LATENCY_HISTORY` (messages per request, default 40).

#[path = "../../llm-compactor/tests/store_support/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use compactor_proxy::ProxyConfig;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{SessionStore, open_store};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

async fn upstream() -> String {
    let answer = json!({
        "id":"c","object":"chat.completion","created":1,"model":"m",
        "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":100,"completion_tokens":1,"total_tokens":101}
    });
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move |_body: axum::body::Bytes| {
            let answer = answer.clone();
            async move { axum::Json(answer) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A proxy in this process on `store`; returns its URL.
async fn proxy(upstream: &str, store: Arc<dyn SessionStore>) -> String {
    let config = CompactorConfig::builder(10_000_000).build().unwrap();
    let compactor = Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)));
    let proxy_config = ProxyConfig::builder(upstream, compactor, store).build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(compactor_proxy::serve(proxy_config, listener, std::future::pending()));
    url
}

async fn time(client: &reqwest::Client, url: &str, session: &str, body: &Value) -> Duration {
    let started = Instant::now();
    let response = client
        .post(format!("{url}/v1/chat/completions"))
        .header("x-compactor-session", session)
        .json(body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    response.bytes().await.unwrap();
    started.elapsed()
}

struct Row {
    name: String,
    direct_p50: Duration,
    added_p50: Duration,
    added_p99: Duration,
    per_s: f64,
}

/// Rounds of growing sessions through `proxies` (in turn), each also sent straight to
/// the upstream.
async fn measure(name: &str, upstream: &str, proxies: &[String], rounds: usize, history: usize) -> Row {
    let client = reqwest::Client::new();
    let mut messages = vec![json!({"role":"system","content":"You are a coding agent."})];
    for i in 0..history {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        messages.push(json!({"role": role, "content": format!("turn {i}: {}", "lorem ipsum ".repeat(40))}));
    }
    let (mut direct, mut proxied) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    let mut session = 0;
    let mut through_proxy = Duration::ZERO;
    for round in 0..rounds + 50 {
        messages.push(json!({"role":"user","content": format!("round {round}")}));
        let body = json!({"model":"m","messages": messages});
        let key = format!("{name}-{session}");
        let d = time(&client, upstream, &key, &body).await;
        let p = time(&client, &proxies[round % proxies.len()], &key, &body).await;
        messages.push(json!({"role":"assistant","content":"ok"}));
        if messages.len() > history + 200 {
            // Keep the request size steady: start a new session of the same size.
            messages.truncate(history + 1);
            session += 1;
        }
        if round >= 50 {
            direct.push(d);
            proxied.push(p);
            through_proxy += p;
        }
    }
    let mut added: Vec<Duration> = proxied.iter().zip(&direct).map(|(p, d)| p.saturating_sub(*d)).collect();
    direct.sort();
    added.sort();
    Row {
        name: name.to_owned(),
        direct_p50: percentile(&direct, 0.5),
        added_p50: percentile(&added, 0.5),
        added_p99: percentile(&added, 0.99),
        per_s: rounds as f64 / through_proxy.as_secs_f64(),
    }
}

fn main() {
    // `cargo test --benches` runs bench binaries without `--bench`: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let rounds = env_usize("LATENCY_ROUNDS", 1000);
    let history = env_usize("LATENCY_HISTORY", 40);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let cluster = pg::PgCluster::start();
    let rows = runtime.block_on(async {
        let upstream = upstream().await;
        let dir = tempfile::tempdir().unwrap();
        let mut rows = Vec::new();
        let memory = open_store("memory:").await.unwrap();
        let one = proxy(&upstream, memory).await;
        rows.push(measure("memory", &upstream, &[one], rounds, history).await);
        let sqlite = open_store(&format!("sqlite:{}", dir.path().join("bench.db").display()))
            .await
            .unwrap();
        let one = proxy(&upstream, sqlite).await;
        rows.push(measure("sqlite", &upstream, &[one], rounds, history).await);
        if let Some(cluster) = &cluster {
            let url = cluster.database("latency");
            let one = proxy(&upstream, open_store(&url).await.unwrap()).await;
            rows.push(measure("postgres, 1 instance", &upstream, &[one], rounds, history).await);
            let a = proxy(&upstream, open_store(&url).await.unwrap()).await;
            let b = proxy(&upstream, open_store(&url).await.unwrap()).await;
            rows.push(measure("postgres, 2 instances in turn", &upstream, &[a, b], rounds, history).await);
        }
        rows
    });
    println!("proxy added latency, {rounds} rounds, {history}-message history (+ up to 200), no compaction");
    println!();
    println!("| store | direct p50 | added p50 | added p99 | proxied requests/s (1 client) |");
    println!("|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.0} |",
            row.name,
            row.direct_p50.as_secs_f64() * 1e3,
            row.added_p50.as_secs_f64() * 1e3,
            row.added_p99.as_secs_f64() * 1e3,
            row.per_s
        );
    }
}
