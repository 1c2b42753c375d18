//! The engine's flags in the proxy, with `compact`'s meaning (aging epochs, the recent
//! window), `--budget-by-model`, the summarizer paying with the client's key, and the
//! metrics the issue names — over real HTTP on 127.0.0.1.

use crate::support;

use support::{metric, metrics, post_chat};

use std::sync::Arc;

use compactor_proxy::{ClientKeySummarizer, ProxyConfig};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::backend::http::HttpBackend;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::plan::CostPolicy;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};
use support::{proxy_with, upstream};

fn memory() -> Arc<dyn SessionStore> {
    Arc::new(MemoryStore::new())
}

/// A plain chat grown `rounds` rounds of `chars`-char messages; returns each round's
/// client history (what the agent sent).
pub(crate) async fn grow_chat(
    proxy: &str,
    session: &str,
    key: Option<&str>,
    model: &str,
    rounds: usize,
    chars: usize,
) -> Vec<Vec<Value>> {
    let mut messages = vec![json!({"role":"system","content":"You are a terse assistant."})];
    let mut sent = Vec::new();
    for i in 0..rounds {
        messages.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(chars))}));
        let response = post_chat(proxy, session, key, &json!({"model": model, "messages": messages})).await;
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        sent.push(messages.clone());
        messages.push(answer["choices"][0]["message"].clone());
    }
    sent
}

fn heuristic(config: CompactorConfig) -> Arc<Compactor> {
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)))
}

#[tokio::test]
async fn keep_recent_decides_how_many_messages_the_upstream_gets_verbatim() {
    for keep in [2usize, 6] {
        let up = upstream().await;
        let store = memory();
        // The model-free ledger summarizer replaces the whole middle, so what is left
        // verbatim is exactly the recent window (a hard trim would keep more).
        let config = CompactorConfig::builder(2_000).keep_recent(keep).build().unwrap();
        let compactor =
            Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)));
        let proxy = proxy_with(ProxyConfig::builder(&up.url(), compactor, store.clone()), store).await;
        // Short messages: the recent window is under its token cap (half the target).
        let sent = grow_chat(&proxy.url(), "k", None, "m", 30, 100).await;
        let received = up.received();
        // The first round that was compacted: the upstream got fewer messages than sent.
        let (round, seen) = received
            .iter()
            .enumerate()
            .find(|(i, r)| r.body["messages"].as_array().unwrap().len() < sent[*i].len())
            .expect("the run compacts");
        let seen = seen.body["messages"].as_array().unwrap();
        let client = &sent[round];
        let verbatim = seen
            .iter()
            .rev()
            .zip(client.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        assert_eq!(
            verbatim, keep,
            "--keep-recent {keep}: the recent window goes verbatim, nothing more"
        );
    }
}

/// A tool-using history: each round a call and its `chars`-char result, then a user turn.
fn tool_history(rounds: usize, chars: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role":"system","content":"You are a coding agent."}),
        json!({"role":"user","content":"Fix the bug."}),
    ];
    for i in 0..rounds {
        messages.push(json!({"role":"assistant","content":null,"tool_calls":[{"id":format!("call_{i}"),"type":"function","function":{"name":"read_file","arguments":format!("{{\"path\":\"src/f{i}.rs\"}}")}}]}));
        messages.push(json!({"role":"tool","tool_call_id":format!("call_{i}"),"content": format!("file {i}: {}", "x".repeat(chars))}));
        messages.push(json!({"role":"user","content": format!("go on {i}")}));
    }
    messages
}

#[tokio::test]
async fn aging_epochs_happen_in_the_proxy_below_the_trigger_and_the_prefix_carries_the_stubs() {
    let mut received_by = Vec::new();
    for aging in [false, true] {
        let up = upstream().await;
        let store = memory();
        let config = CompactorConfig::builder(100_000)
            .keep_recent(3)
            .age_observations(aging)
            .age_min_chars(1_000)
            .age_reclaim_min(4_000)
            .cost_policy(CostPolicy::seed())
            .build()
            .unwrap();
        let proxy = proxy_with(ProxyConfig::builder(&up.url(), heuristic(config), store.clone()), store).await;
        for rounds in 1..=8 {
            let body = json!({"model":"m","messages": tool_history(rounds, 3_000)});
            assert_eq!(post_chat(&proxy.url(), "tools", None, &body).await.status(), 200);
        }
        let text = metrics(&proxy.url()).await;
        received_by.push((up.received(), metric(&text, "compactor_proxy_elisions_total")));
    }
    let (plain, plain_elisions) = &received_by[0];
    let (aged, aged_elisions) = &received_by[1];
    assert_eq!(*plain_elisions, 0.0);
    assert!(
        plain
            .iter()
            .all(|r| !r.body.to_string().contains("[elided by the harness"))
    );
    assert!(*aged_elisions > 0.0, "an epoch ran");
    let first = aged
        .iter()
        .position(|r| r.body.to_string().contains("[elided by the harness"))
        .expect("the upstream received stubs");
    assert!(
        aged[first].tokens() < 80_000,
        "below the trigger: an elision epoch, not a compaction"
    );
    // Every later request starts with the stubbed prefix (the rewrite carries the epoch).
    for pair in aged[first..].windows(2) {
        let (prev, next) = (
            pair[0].body["messages"].as_array().unwrap(),
            pair[1].body["messages"].as_array().unwrap(),
        );
        let stubbed_next = next
            .iter()
            .filter(|m| m.to_string().contains("[elided by the harness"))
            .count();
        if stubbed_next
            > prev
                .iter()
                .filter(|m| m.to_string().contains("[elided by the harness"))
                .count()
        {
            continue; // another epoch
        }
        assert_eq!(&next[..prev.len()], &prev[..], "the stubbed prefix is stable");
    }
    assert!(aged.last().unwrap().tokens() < plain.last().unwrap().tokens());
}

#[tokio::test]
async fn budget_by_model_takes_each_models_window_and_refuses_unknown_models_without_a_fallback() {
    let up = upstream().await;
    let store = memory();
    let compactor = heuristic(CompactorConfig::builder(128_000).keep_recent(4).build().unwrap());
    let builder = ProxyConfig::builder(&up.url(), compactor.clone(), store.clone()).budget_by_model(None);
    let proxy = proxy_with(builder, store).await;
    // ~10,000 heuristic tokens: over gpt-4's 8,192, far under gpt-4o's 128,000.
    let mut messages = vec![json!({"role":"system","content":"Be brief."})];
    for i in 0..25 {
        messages.push(json!({"role":"user","content": format!("{i} {}", "u".repeat(800))}));
        messages.push(json!({"role":"assistant","content": format!("{i} {}", "a".repeat(800))}));
    }
    messages.push(json!({"role":"user","content":"and?"}));
    for (model, session) in [("gpt-4-0613", "small"), ("gpt-4o-2024-08-06", "large")] {
        let body = json!({"model": model, "messages": messages});
        assert_eq!(post_chat(&proxy.url(), session, None, &body).await.status(), 200);
    }
    let received = up.received();
    let sent_tokens = received[0].tokens();
    assert!(
        received[0].body["messages"].as_array().unwrap().len() < messages.len() && sent_tokens <= 8_192 * 8 / 10,
        "gpt-4: compacted into its window ({sent_tokens})"
    );
    assert_eq!(
        received[1].body["messages"].as_array().unwrap().len(),
        messages.len(),
        "gpt-4o: sent as is"
    );

    let body = json!({"model":"my-local-llama","messages": messages});
    let refused = post_chat(&proxy.url(), "unknown", None, &body).await;
    assert_eq!(refused.status(), 400);
    let text = refused.text().await.unwrap();
    assert!(text.contains("my-local-llama") && text.contains("--budget N"), "{text}");
    assert_eq!(up.received().len(), 2, "nothing forwarded for the refused request");

    // With a fallback, an unknown model gets it.
    let store = memory();
    let builder = ProxyConfig::builder(
        &up.url(),
        heuristic(CompactorConfig::builder(4_000).keep_recent(4).build().unwrap()),
        store.clone(),
    )
    .budget_by_model(Some(4_000));
    let fallback = proxy_with(builder, store).await;
    assert_eq!(post_chat(&fallback.url(), "unknown", None, &body).await.status(), 200);
    assert!(up.received().last().unwrap().tokens() <= 4_000);
}

fn summarizer_at(url: &str) -> ClientKeySummarizer {
    ClientKeySummarizer::new(
        HttpBackend::openai("summarizer-model")
            .base_url(format!("{url}/v1"))
            .no_api_key()
            .build()
            .unwrap(),
    )
}

#[tokio::test]
async fn the_summarizer_pays_with_the_key_of_the_request_that_triggered_the_pass() {
    let up = upstream().await;
    let store = memory();
    let summarizer = summarizer_at(&up.url());
    let config = CompactorConfig::builder(2_000).keep_recent(4).build().unwrap();
    let compactor =
        Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(summarizer.clone())));
    let builder = ProxyConfig::builder(&up.url(), compactor, store.clone()).summarizer_key_from_client(&summarizer);
    let proxy = proxy_with(builder, store.clone()).await;
    grow_chat(&proxy.url(), "seven", Some("sk-client-7"), "m", 10, 300).await;
    grow_chat(&proxy.url(), "eight", Some("sk-client-8"), "m", 10, 300).await;
    let received = up.received();
    // A summary request: the ordinary one (the summarizer's model), or (the client's key
    // makes the summarizer the agent's own model) the agent's request plus the
    // instruction that reads its cache.
    let summary = |r: &support::Received| {
        r.body["model"] == "summarizer-model"
            || r.wire_conversation()
                .last()
                .and_then(|m| m["content"].as_str())
                .is_some_and(|t| t.contains("The conversation to summarize is everything above this message"))
    };
    // "seven" ran first, then "eight": every summarizer call before eight's first
    // request was seven's pass, every one after it eight's.
    let eight_starts = received
        .iter()
        .position(|r| !summary(r) && r.authorization.as_deref() == Some("Bearer sk-client-8"))
        .unwrap();
    let mut keys = Vec::new();
    for (i, call) in received.iter().enumerate().filter(|(_, r)| summary(r)) {
        let expected = if i < eight_starts {
            "Bearer sk-client-7"
        } else {
            "Bearer sk-client-8"
        };
        assert_eq!(
            call.authorization.as_deref(),
            Some(expected),
            "each pass pays with its own request's key"
        );
        keys.push(expected);
    }
    assert!(
        keys.contains(&"Bearer sk-client-7") && keys.contains(&"Bearer sk-client-8"),
        "both runs summarized: {keys:?}"
    );
    for session in ["seven", "eight"] {
        let exported = export_jsonl(store.as_ref(), session).await.unwrap();
        assert!(!exported.contains("sk-client"), "the key is never stored");
    }
    assert!(!metrics(&proxy.url()).await.contains("sk-client"));
}

#[tokio::test]
async fn a_client_keyed_summarizer_on_another_origin_is_refused_at_start_up() {
    let up = upstream().await;
    let elsewhere = upstream().await;
    let summarizer = summarizer_at(&elsewhere.url());
    let compactor = Arc::new(
        Compactor::new(
            CompactorConfig::builder(2_000).build().unwrap(),
            Arc::new(HeuristicCounter),
        )
        .with_summarizer(Arc::new(summarizer.clone())),
    );
    let error = ProxyConfig::builder(&up.url(), compactor, memory())
        .summarizer_key_from_client(&summarizer)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("origin") && error.contains(&elsewhere.addr.port().to_string()),
        "{error}"
    );
}

#[tokio::test]
async fn metrics_name_every_series_of_the_issue_and_count_the_cost_saved() {
    let up = upstream().await;
    let store = memory();
    let compactor = heuristic(CompactorConfig::builder(2_000).keep_recent(4).build().unwrap());
    let builder = ProxyConfig::builder(&up.url(), compactor, store.clone()).pricing("openai-gpt5".parse().unwrap());
    let proxy = proxy_with(builder, store).await;
    let before = metrics(&proxy.url()).await;
    assert!(
        before.contains("compactor_proxy_estimated_cost_saved{pricing=\"openai-gpt5\"} 0.000"),
        "{before}"
    );
    grow_chat(&proxy.url(), "cost", None, "m", 30, 300).await;
    let body = json!({"model":"err-401","messages":[{"role":"user","content":"x"}]});
    assert_eq!(post_chat(&proxy.url(), "e", None, &body).await.status(), 401);
    let text = metrics(&proxy.url()).await;
    for series in [
        "# TYPE compactor_proxy_requests_total counter",
        "# TYPE compactor_proxy_compactions_total counter",
        "# TYPE compactor_proxy_elisions_total counter",
        "# TYPE compactor_proxy_tokens_saved_total counter",
        "# TYPE compactor_proxy_prompt_tokens_removed_total counter",
        "# TYPE compactor_proxy_estimated_cost_saved gauge",
        "# TYPE compactor_proxy_estimated_pass_cost gauge",
        "# TYPE compactor_proxy_upstream_errors_total counter",
        "# TYPE compactor_proxy_added_latency_seconds histogram",
        "# TYPE compactor_proxy_sessions_in_memory gauge",
    ] {
        assert!(text.contains(series), "{series} missing:\n{text}");
    }
    assert_eq!(
        metric(&text, "compactor_proxy_requests_total{route=\"chat_completions\"}"),
        31.0
    );
    assert_eq!(metric(&text, "compactor_proxy_added_latency_seconds_count"), 31.0);
    assert!(metric(&text, "compactor_proxy_compactions_total") >= 2.0);
    assert!(metric(&text, "compactor_proxy_tokens_saved_total") > 0.0);
    let removed = metric(&text, "compactor_proxy_prompt_tokens_removed_total");
    assert!(removed > 0.0);
    // A hard-trim run (no summarizer): each pass rewrote part of the prefix at
    // (1.0 - 0.1) per token; each rewritten request saved its removed tokens at 0.1.
    let saved = metric(&text, "compactor_proxy_estimated_cost_saved{pricing=\"openai-gpt5\"}");
    assert!(saved != 0.0 && saved < removed * 0.1 + 1e-6, "{saved} vs {removed}");
}
