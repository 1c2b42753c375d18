//! `--summarizer upstream` (issue 40): a proxy configured with nothing but its upstream
//! and this one setting summarizes each pass with the model of the request being
//! compacted, through that upstream, with the client's key, and its summary request is
//! the agent's own request plus one instruction (read from the cache). Driven by the
//! official SDKs on all three routes, and measured on the prefix-billing upstream.

use crate::support;

use std::sync::Arc;

use compactor_proxy::ProxyConfig;
use llm_compactor::backend::http::HttpBackend;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};
use support::{compactor, metric, metrics, proxy_with, python, run_python, upstream};

/// The instruction's closing words: a summary request that reads the cache ends with it.
const INSTRUCTION: &str = "The conversation to summarize is everything above this message";

/// The text of a request's last message or input item.
fn last_text(received: &support::Received) -> String {
    let Some(last) = received.wire_conversation().last() else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    }
}

#[tokio::test]
async fn the_official_sdks_compact_on_every_route_with_the_requests_model_and_key() {
    let Some(python) = python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), compactor(3_000), store.clone()).summarizer_upstream();
    let proxy = proxy_with(builder, store.clone()).await;
    let out = run_python(
        &python,
        "upstream_summary.py",
        &[],
        &[("PROXY", proxy.url()), ("ROUNDS", "16".to_owned())],
    )
    .await;
    for route in ["chat ok", "messages ok", "responses ok"] {
        assert!(out.contains(route), "{route} missing:\n{out}");
    }
    let received = up.received();
    let text = metrics(&proxy.url()).await;
    assert!(
        metric(&text, "compactor_proxy_compactions_total") >= 3.0,
        "every route compacted: {text}"
    );
    for (path, key) in [
        ("/v1/chat/completions", "sk-client-chat"),
        ("/v1/messages", "sk-client-messages"),
        ("/v1/responses", "sk-client-responses"),
    ] {
        let summaries: Vec<&support::Received> = received
            .iter()
            .filter(|r| r.path == path && last_text(r).contains(INSTRUCTION))
            .collect();
        assert!(!summaries.is_empty(), "{path}: no cache-reading summary request");
        for (i, summary) in summaries.iter().enumerate() {
            assert_eq!(summary.body["model"], "m", "{path}: the request's own model");
            assert_eq!(summary.body["stream"], json!(false), "{path}");
            let sent = summary.authorization.clone().or_else(|| summary.api_key.clone());
            assert!(
                sent.as_deref().is_some_and(|k| k.ends_with(key)),
                "{path}: the client's key, got {sent:?}"
            );
            // An agent's request the upstream received is the start of the summary's
            // (the whole of it for a prepared pass; for an inline pass, the previous
            // round's, the new messages after it).
            let conversation = &summary.wire_conversation()[..summary.wire_conversation().len() - 1];
            let prefix = received
                .iter()
                .filter(|r| r.path == path && !last_text(r).contains(INSTRUCTION))
                .any(|r| {
                    let sent = r.wire_conversation();
                    sent.len() >= 3
                        && sent.len() <= conversation.len()
                        && sent[..sent.len() - 1] == conversation[..sent.len() - 1]
                });
            assert!(
                prefix,
                "{path}: summary {i} does not start with a request the agent sent"
            );
        }
    }
    for session in store.sessions().await.unwrap() {
        let exported = export_jsonl(store.as_ref(), &session.session).await.unwrap();
        assert!(!exported.contains("sk-client"), "the key is never stored");
    }
    assert!(!text.contains("sk-client"));
}

/// A client that authenticates its own way (a Claude login: a bearer token on Messages,
/// with its `anthropic-beta`) gets its summary request sent the same way, and no secret
/// of it is stored.
#[tokio::test]
async fn the_summary_request_carries_the_clients_own_headers() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), compactor(2_000), store.clone()).summarizer_upstream();
    let proxy = proxy_with(builder, store.clone()).await;
    let mut messages = Vec::new();
    for i in 0..10 {
        messages.push(json!({"role": "user", "content": format!("question {i}: {}", "q".repeat(300))}));
        let response = support::client()
            .post(format!("{}/v1/messages", proxy.url()))
            .header("x-compactor-session", "login")
            .header("authorization", "Bearer sk-ant-oat-login")
            .header("anthropic-beta", "oauth-2025-04-20")
            .header("anthropic-version", "2023-06-01")
            .json(&json!({"model": "m", "max_tokens": 100, "messages": messages}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        messages.push(json!({"role": "assistant", "content": answer["content"][0]["text"]}));
    }
    let received = up.received();
    let summaries: Vec<&support::Received> = received.iter().filter(|r| last_text(r).contains(INSTRUCTION)).collect();
    assert!(!summaries.is_empty(), "no summary request");
    for summary in summaries {
        assert_eq!(summary.authorization.as_deref(), Some("Bearer sk-ant-oat-login"));
        assert_eq!(summary.api_key, None, "the key in the client's own header only");
        assert_eq!(summary.anthropic_beta.as_deref(), Some("oauth-2025-04-20"));
    }
    let exported = export_jsonl(store.as_ref(), "login").await.unwrap();
    assert!(!exported.contains("sk-ant-oat"));
}

/// Issue 40, item 2: an HTTP summarizer on the upstream's origin that asks the
/// request's own model sends the cache-reading request; asking another model, the
/// ordinary one.
#[tokio::test]
async fn an_http_summarizer_reads_the_cache_only_as_the_agents_own_model() {
    for (model, reads) in [("m", true), ("other", false)] {
        let up = upstream().await;
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let backend = HttpBackend::openai(model)
            .base_url(format!("{}/v1", up.url()))
            .no_api_key()
            .build()
            .unwrap();
        let config = CompactorConfig::builder(2_000).keep_recent(4).build().unwrap();
        let compactor =
            Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(backend.clone())));
        let builder = ProxyConfig::builder(&up.url(), compactor, store.clone())
            .summarizer_endpoint(backend.endpoint(), backend.model());
        let proxy = proxy_with(builder, store).await;
        crate::options::grow_chat(&proxy.url(), "own", None, "m", 10, 300).await;
        let received = up.received();
        let cache_reading = received.iter().filter(|r| last_text(r).contains(INSTRUCTION)).count();
        let ordinary = received
            .iter()
            .filter(|r| {
                r.body["model"] == model
                    && !last_text(r).contains(INSTRUCTION)
                    && r.body["messages"].as_array().is_some_and(|m| m.len() == 2)
            })
            .count();
        if reads {
            assert!(cache_reading >= 1, "{model}: no cache-reading summary request");
        } else {
            assert_eq!(cache_reading, 0, "{model}: another model never reads the agent's cache");
            assert!(ordinary >= 1, "{model}: the ordinary summary request");
        }
    }
}

/// The share of the summary requests' input that the prefix-billing upstream
/// (Anthropic's cache rules) bills as cache reads, over the tau-bench trajectory replayed
/// through a proxy at an 8,000-token budget with `--summarizer upstream`; `None` without
/// the data.
async fn cache_read_share(prepare: Option<compactor_proxy::PrepareConfig>) -> Option<f64> {
    let conversation = crate::anthropic_cache::trajectory()?;
    let up = support::anthropic_cache::cache_upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), compactor(8_000), store.clone())
        .summarizer_upstream()
        .prepare(prepare);
    let proxy = proxy_with(builder, store).await;
    let messages = conversation["messages"].as_array().unwrap();
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "tools": crate::anthropic_cache::tools(),
            "system": conversation["system"], "messages": messages[..i]});
        let response = support::client()
            .post(format!("{}/v1/messages", proxy.url()))
            .header("x-api-key", "sk-ant-client")
            .header("x-compactor-session", "cache-upstream")
            .json(&request)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "round {i}: {}", response.status());
    }
    let bodies = up.state.bodies.lock().unwrap().clone();
    let bills = up.bills();
    let summaries: Vec<usize> = (0..bodies.len())
        .filter(|&i| {
            let last = bodies[i]["messages"]
                .as_array()
                .and_then(|m| m.last())
                .cloned()
                .unwrap_or_default();
            last["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains(INSTRUCTION))
        })
        .collect();
    assert!(!summaries.is_empty(), "the run compacted with a summary");
    for &i in &summaries {
        assert_eq!(bodies[i]["model"], "claude-sonnet-4-5", "the agent's own model");
    }
    let read: u64 = summaries.iter().map(|&i| bills[i].cache_read).sum();
    let total: u64 = summaries.iter().map(|&i| bills[i].total()).sum();
    let share = read as f64 / total as f64;
    println!(
        "summary input read from the cache (--summarizer upstream, {}, budget 8,000, prefix-billing upstream): {:.1}% over {} summary requests ({read} of {total} tokens)",
        if prepare.is_some() { "prepared" } else { "inline" },
        share * 100.0,
        summaries.len()
    );
    Some(share)
}

/// The measured figure of issue 40 (goal: at least 90%). What is not read: the
/// instruction (300 tokens here, a share that shrinks as the context grows) and, for an
/// inline pass, the round's new messages (never sent before).
#[tokio::test]
async fn the_upstream_summary_reads_most_of_its_input_from_the_cache() {
    let Some(prepared) = cache_read_share(Some(compactor_proxy::PrepareConfig::default())).await else {
        return;
    };
    assert!(
        prepared >= 0.90,
        "prepared: {:.1}% read from the cache",
        prepared * 100.0
    );
    let inline = cache_read_share(None).await.unwrap();
    assert!(inline >= 0.88, "inline: {:.1}% read from the cache", inline * 100.0);
}
