//! Added latency of the proxy: the same requests sent straight to a 127.0.0.1 upstream
//! and through the proxy (SQLite store in a temp dir, session lookup, rewrite check and
//! store write included), for a request that needs no compaction. Prints p50/p99 of both
//! and of the difference. `cargo bench -p compactor-proxy --bench latency`.
//!
//! Env: `LATENCY_ROUNDS` (default 2000), `LATENCY_HISTORY` (messages per request,
//! default 40).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use compactor_proxy::ProxyConfig;
use llm_compactor::count::HeuristicCounter;
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

fn main() {
    let rounds = env_usize("LATENCY_ROUNDS", 2000);
    let history = env_usize("LATENCY_HISTORY", 40);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let upstream = upstream().await;
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(&format!("sqlite:{}", dir.path().join("bench.db").display()))
            .await
            .unwrap();
        let config = CompactorConfig::builder(10_000_000).build().unwrap();
        let compactor = Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)));
        let proxy_config = ProxyConfig::builder(&upstream, compactor, store).build().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(compactor_proxy::serve(proxy_config, listener, std::future::pending()));
        let client = reqwest::Client::new();

        let mut messages = vec![json!({"role":"system","content":"You are a coding agent."})];
        for i in 0..history {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            messages.push(json!({"role": role, "content": format!("turn {i}: {}", "lorem ipsum ".repeat(40))}));
        }
        let (mut direct, mut proxied) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        let mut session = 0;
        for round in 0..rounds + 50 {
            // Each round the agent adds a turn: the proxy checks the session's prefix and
            // writes the new message to the store, as in a real run.
            messages.push(json!({"role":"user","content": format!("round {round}")}));
            let body = json!({"model":"m","messages": messages});
            let key = format!("bench-{session}");
            let d = time(&client, &upstream, &key, &body).await;
            let p = time(&client, &proxy, &key, &body).await;
            messages.pop();
            messages.push(json!({"role":"user","content": format!("round {round}")}));
            messages.push(json!({"role":"assistant","content":"ok"}));
            if messages.len() > history + 200 {
                // Keep the request size steady: start a new session of the same size.
                messages.truncate(history + 1);
                session += 1;
            }
            if round >= 50 {
                direct.push(d);
                proxied.push(p);
            }
        }
        let mut added: Vec<Duration> = proxied.iter().zip(&direct).map(|(p, d)| p.saturating_sub(*d)).collect();
        direct.sort();
        proxied.sort();
        added.sort();
        println!("proxy added latency, {rounds} rounds, {history}-message history, no compaction, SQLite store");
        println!("             p50        p99");
        for (name, v) in [("direct", &direct), ("proxied", &proxied), ("added", &added)] {
            println!(
                "{name:<8} {:>8.3} ms {:>8.3} ms",
                percentile(v, 0.5).as_secs_f64() * 1e3,
                percentile(v, 0.99).as_secs_f64() * 1e3
            );
        }
        println!(
            "p50(proxied) - p50(direct) = {:.3} ms; p99(proxied) - p99(direct) = {:.3} ms",
            (percentile(&proxied, 0.5).as_secs_f64() - percentile(&direct, 0.5).as_secs_f64()) * 1e3,
            (percentile(&proxied, 0.99).as_secs_f64() - percentile(&direct, 0.99).as_secs_f64()) * 1e3
        );
    });
}
