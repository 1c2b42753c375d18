//! The proxy's wire manners: the overhead and pass headers on every proxied response,
//! standing down when the client asks the provider to compact (`context_management`),
//! OpenAI's `prompt_cache_key` from the session, and the breakpoint limit.

use crate::support;

use std::sync::Arc;

use compactor_proxy::{COMPACTED_HEADER, OVERHEAD_HEADER, ProxyConfig, WireOptions};
use llm_compactor::store::{MemoryStore, SessionStore};
use serde_json::{Value, json};
use support::{client, compactor, metric, metrics, proxy, proxy_with, upstream};

fn long_chat(rounds: usize) -> Value {
    let mut messages = vec![json!({"role":"system","content":"be brief"})];
    for i in 0..rounds {
        messages.push(json!({"role":"user","content":format!("question {i}: {}", "words ".repeat(60))}));
        messages.push(json!({"role":"assistant","content":format!("answer {i}: {}", "more ".repeat(60))}));
    }
    messages.push(json!({"role":"user","content":"and now?"}));
    json!({"model":"gpt-4o","messages":messages})
}

#[tokio::test]
async fn every_proxied_response_says_its_overhead_and_a_rewrite_names_its_pass() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 2_000, store).await;
    let send = |body: Value| {
        client()
            .post(format!("{}/v1/chat/completions", proxy.url()))
            .header("x-compactor-session", "overhead")
            .json(&body)
            .send()
    };
    let small = send(json!({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}))
        .await
        .unwrap();
    let overhead: f64 = small.headers()[OVERHEAD_HEADER].to_str().unwrap().parse().unwrap();
    assert!(overhead >= 0.0);
    assert!(
        small.headers().get(COMPACTED_HEADER).is_none(),
        "sent as the client did"
    );
    let big = send(long_chat(20)).await.unwrap();
    assert!(big.status().is_success());
    let pass = big.headers()[COMPACTED_HEADER].to_str().unwrap().to_owned();
    assert!(pass.starts_with("overhead"), "{pass}");
    // A passed-through path says its overhead too.
    let models = client().get(format!("{}/v1/models", proxy.url())).send().await.unwrap();
    assert!(models.headers().contains_key(OVERHEAD_HEADER));
}

#[tokio::test]
async fn a_request_for_server_side_compaction_is_forwarded_unchanged() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 2_000, store.clone()).await;
    let mut messages = Vec::new();
    for i in 0..20 {
        messages.push(json!({"role":"user","content":format!("question {i}: {}", "words ".repeat(60))}));
        messages.push(json!({"role":"assistant","content":[{"type":"compaction","content":"earlier, summarized by the provider"},{"type":"text","text":format!("answer {i}")}]}));
    }
    messages.push(json!({"role":"user","content":"go on"}));
    let body = json!({"model":"claude-sonnet-4-5","max_tokens":64,"messages":messages,
        "context_management":{"edits":[{"type":"compact_20260112"}]}});
    let bytes = serde_json::to_vec(&body).unwrap();
    let response = client()
        .post(format!("{}/v1/messages", proxy.url()))
        .header("content-type", "application/json")
        .body(bytes.clone())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let received = up.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body, body, "forwarded as it came, over budget and all");
    assert!(store.sessions().await.unwrap().is_empty(), "no session of ours");
    assert_eq!(
        metric(
            &metrics(&proxy.url()).await,
            "compactor_proxy_server_compaction_total{edit=\"compaction\"}"
        ),
        1.0
    );
}

/// Claude Code with thinking on sends `clear_thinking` with `keep: "all"` on every
/// request: it clears nothing, so the proxy compacts as it would without it (it used to
/// stand down for any `context_management`, and Claude Code was never compacted).
#[tokio::test]
async fn a_thinking_edit_leaves_the_proxy_compacting_and_clear_tool_uses_stands_it_down() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 2_000, store.clone()).await;
    let conversation = |edits: Value| {
        let mut messages = Vec::new();
        for i in 0..20 {
            messages.push(json!({"role":"user","content":format!("question {i}: {}", "words ".repeat(60))}));
            messages.push(json!({"role":"assistant","content":format!("answer {i}: {}", "more ".repeat(60))}));
        }
        messages.push(json!({"role":"user","content":"go on"}));
        json!({"model":"claude-sonnet-4-5","max_tokens":64,"messages":messages,
            "context_management":{"edits":edits}})
    };
    let post = |session: &'static str, body: Value| {
        client()
            .post(format!("{}/v1/messages", proxy.url()))
            .header("x-compactor-session", session)
            .json(&body)
            .send()
    };
    let keep_all = conversation(json!([{"type":"clear_thinking_20251015","keep":"all"}]));
    let response = post("thinking-edit", keep_all.clone()).await.unwrap();
    assert!(response.status().is_success());
    assert!(
        response.headers().get(COMPACTED_HEADER).is_some(),
        "compacted despite the thinking edit"
    );
    let sent = &up.received()[0].body;
    assert!(
        sent["messages"].as_array().unwrap().len() < keep_all["messages"].as_array().unwrap().len(),
        "the upstream got the compacted conversation"
    );
    assert_eq!(
        sent["context_management"], keep_all["context_management"],
        "the client's edit is forwarded as it came"
    );
    let clear = conversation(json!([{"type":"clear_tool_uses_20250919"}]));
    assert!(post("clearing", clear.clone()).await.unwrap().status().is_success());
    assert_eq!(up.received()[1].body, clear, "forwarded as it came");
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(
            &text,
            "compactor_proxy_server_compaction_total{edit=\"clear_tool_uses\"}"
        ),
        1.0
    );
    assert_eq!(metric(&text, "compactor_proxy_context_management_compacted_total"), 1.0);
    let sessions = store.sessions().await.unwrap();
    assert_eq!(
        sessions.len(),
        1,
        "only the compacted one is a session of ours: {sessions:?}"
    );
}

#[tokio::test]
async fn an_openai_request_gets_a_cache_key_from_its_session_unless_it_set_one() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let wire = WireOptions {
        openai_cache_key: true,
        ..WireOptions::default()
    };
    let proxy = proxy_with(
        ProxyConfig::builder(&up.url(), compactor(100_000), store.clone()).wire(wire),
        store,
    )
    .await;
    for (session, body) in [
        (
            "s1",
            json!({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}),
        ),
        (
            "s1",
            json!({"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"echo: hi"},{"role":"user","content":"more"}]}),
        ),
        (
            "s2",
            json!({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}),
        ),
        (
            "s3",
            json!({"model":"gpt-4o","prompt_cache_key":"mine","messages":[{"role":"user","content":"hi"}]}),
        ),
    ] {
        let r = support::post_chat(&proxy.url(), session, None, &body).await;
        assert!(r.status().is_success());
    }
    let keys: Vec<Value> = up
        .received()
        .iter()
        .map(|r| r.body["prompt_cache_key"].clone())
        .collect();
    assert_eq!(keys[0], keys[1], "one session, one cache key");
    assert_ne!(keys[0], keys[2]);
    assert_eq!(keys[3], "mine");
    assert!(
        !keys[0].as_str().unwrap().contains("s1"),
        "the session key itself is not sent"
    );
}

/// The body-I/O gauge: how many times the proxy read and wrote whole request bodies.
async fn body_io(proxy: &str) -> (f64, f64) {
    let text = metrics(proxy).await;
    (
        metric(&text, "compactor_proxy_body_parses_total"),
        metric(&text, "compactor_proxy_body_writes_total"),
    )
}

#[tokio::test]
async fn each_proxied_body_is_parsed_once_and_written_at_most_once() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    // The cache key changes every OpenAI body, and a small budget compacts the long one:
    // a rewrite and a wire option on the same body, still one write.
    let wire = WireOptions {
        openai_cache_key: true,
        ..WireOptions::default()
    };
    let proxy = proxy_with(
        ProxyConfig::builder(&up.url(), compactor(2_000), store.clone()).wire(wire),
        store,
    )
    .await;
    let small = json!({"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]});
    let anthropic = |rounds: usize| {
        let mut body = long_chat(rounds);
        let messages: Vec<Value> = body["messages"].as_array().unwrap()[1..].to_vec();
        body["system"] = json!("be brief");
        body["messages"] = Value::Array(messages);
        body["max_tokens"] = json!(64);
        body["model"] = json!("claude-sonnet-4-5");
        body
    };
    let cases = [
        ("/v1/chat/completions", "small", small, false),
        ("/v1/chat/completions", "long", long_chat(20), true),
        ("/v1/messages", "anthropic", anthropic(20), true),
    ];
    for (path, session, body, compacts) in cases {
        let before = body_io(&proxy.url()).await;
        let r = client()
            .post(format!("{}{path}", proxy.url()))
            .header("x-compactor-session", session)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert_eq!(r.headers().contains_key(COMPACTED_HEADER), compacts, "{path} {session}");
        let after = body_io(&proxy.url()).await;
        assert_eq!(after.0 - before.0, 1.0, "{path} {session}: parsed once");
        assert!(after.1 - before.1 <= 1.0, "{path} {session}: written at most once");
    }
    let keys: Vec<Value> = up
        .received()
        .iter()
        .map(|r| r.body["prompt_cache_key"].clone())
        .collect();
    assert!(
        keys[..2].iter().all(Value::is_string),
        "the one write carries the cache key: {keys:?}"
    );
}
