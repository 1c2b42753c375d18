//! OpenAI's standalone compaction (`POST /v1/responses/compact`) answered by the proxy
//! for an upstream that has no such endpoint: the documented `response.compaction`
//! object, a sealed `compaction` item that later requests carry and the proxy opens
//! into the summary, and every forged, altered or foreign item refused by name.

use crate::support;

use std::sync::Arc;

use compactor_proxy::{NativeCompaction, ProxyConfig};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{MemoryStore, SessionStore};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};
use support::{client, metric, metrics, proxy_with, upstream};

/// A rule the user states mid-conversation (summarized away, kept verbatim by the ledger).
const RULE: &str = "Always run the tests with pytest -x before committing.";

/// A compactor at `budget` whose passes summarize with the ledger.
fn ledger_compactor(budget: usize) -> Arc<Compactor> {
    let config = CompactorConfig::builder(budget).keep_recent(4).build().unwrap();
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)))
}

/// A Responses conversation of `rounds` tool rounds (call ids from `from`), with the
/// rule stated after the first round.
fn rounds(from: usize, rounds: usize) -> Vec<Value> {
    let mut items = Vec::new();
    for i in from..from + rounds {
        items.push(
            json!({"type": "function_call", "call_id": format!("c{i}"), "name": "shell",
            "arguments": format!("{{\"cmd\":\"cat src/file_{i}.py\"}}")}),
        );
        items.push(json!({"type": "function_call_output", "call_id": format!("c{i}"),
            "output": format!("line of src/file_{i}.py\n").repeat(60)}));
        if i == from {
            items.push(json!({"role": "user", "content": RULE}));
        }
    }
    items
}

async fn post(proxy: &str, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(format!("{proxy}{path}"))
        .header("authorization", format!("Bearer {key}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn compaction_items(output: &[Value]) -> Vec<&Value> {
    output.iter().filter(|item| item["type"] == "compaction").collect()
}

#[tokio::test]
async fn compaction_is_served_for_an_upstream_without_it_and_its_item_opens_only_for_its_client() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone());
    let proxy = proxy_with(builder, store).await;
    let url = proxy.url();

    let mut input = vec![json!({"role": "user", "content": "make the build green"})];
    input.extend(rounds(0, 12));
    let request = json!({"model": "m", "instructions": "You are a coding agent.", "input": input});
    let (status, compacted) = post(&url, "/v1/responses/compact", "sk-a", &request).await;
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["object"], "response.compaction");
    assert!(compacted["id"].as_str().unwrap().starts_with("resp_"));
    assert!(compacted["usage"]["total_tokens"].is_u64());
    let output = compacted["output"].as_array().unwrap().clone();
    let sealed = compaction_items(&output);
    assert_eq!(sealed.len(), 1, "one compaction item: {output:?}");
    let encrypted = sealed[0]["encrypted_content"].as_str().unwrap().to_owned();
    assert!(encrypted.starts_with("llmc1."));
    assert!(
        output.len() < input.len(),
        "the output is shorter: {} of {}",
        output.len(),
        input.len()
    );
    let visible: Vec<&Value> = output.iter().filter(|item| item["type"] != "compaction").collect();
    assert!(
        !serde_json::to_string(&visible).unwrap().contains(RULE),
        "the rule was summarized away into the item (it is in the middle)"
    );
    // The item carries a readable copy of the summary (the ledger keeps the user's words).
    assert_eq!(sealed[0]["summary"][0]["type"], "summary_text");
    assert!(sealed[0]["summary"][0]["text"].as_str().unwrap().contains(RULE));
    let text = metrics(&url).await;
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}"),
        1.0
    );
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"upstream\"}"),
        0.0
    );

    // The next request carries the output: the upstream sees the summary (the rule
    // verbatim, as the ledger keeps the user's words), never the item.
    let mut next = output.clone();
    next.push(json!({"role": "user", "content": "now fix the lint"}));
    let (status, answer) = post(&url, "/v1/responses", "sk-a", &json!({"model": "m", "input": next})).await;
    assert_eq!(status, 200, "{answer}");
    let seen = up.received().last().unwrap().body.clone();
    let seen_text = seen.to_string();
    assert!(
        !seen_text.contains("llmc1."),
        "the item never reaches the upstream: {seen_text}"
    );
    assert!(seen_text.contains(RULE), "the summary stands in its place: {seen_text}");
    assert_eq!(
        metric(
            &metrics(&url).await,
            "compactor_proxy_native_compaction_items_resolved_total"
        ),
        1.0
    );

    // A second compaction over the compacted conversation: served again (the upstream
    // was asked once), the old item opened, a new one written.
    let mut longer = output.clone();
    longer.extend(rounds(100, 12));
    let (status, again) = post(
        &url,
        "/v1/responses/compact",
        "sk-a",
        &json!({"model": "m", "input": longer}),
    )
    .await;
    assert_eq!(status, 200, "{again}");
    let again_output = again["output"].as_array().unwrap();
    let again_sealed = compaction_items(again_output);
    assert_eq!(again_sealed.len(), 1, "{again_output:?}");
    assert_ne!(again_sealed[0]["encrypted_content"].as_str().unwrap(), encrypted);
    let text = metrics(&url).await;
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}"),
        2.0
    );
    assert_eq!(
        up.script
            .unrouted
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.ends_with("/compact"))
            .count(),
        1,
        "auto asked the upstream once and remembered"
    );

    // Another client's key, an altered item, a forged one: 400 naming the item, and
    // nothing reaches the upstream.
    let before = up.received().len();
    let (status, error) = post(&url, "/v1/responses", "sk-b", &json!({"model": "m", "input": next})).await;
    assert_eq!(status, 400, "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("another client"), "{message}");
    let at = next.iter().position(|item| item["type"] == "compaction").unwrap();
    assert!(message.contains(&format!("input[{at}]")), "{message}");

    let mut altered = next.clone();
    let flipped: String = encrypted
        .char_indices()
        .map(|(i, c)| {
            if i == encrypted.len() - 3 {
                if c == 'A' { 'B' } else { 'A' }
            } else {
                c
            }
        })
        .collect();
    altered[at]["encrypted_content"] = json!(flipped);
    let (status, error) = post(&url, "/v1/responses", "sk-a", &json!({"model": "m", "input": altered})).await;
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("altered"),
        "{error}"
    );

    for forged in ["llmc1.", "llmc1.e30.AAAA", "llmc1.eyJvIjoiIiwiaSI6e319.c2lnbmF0dXJl"] {
        let mut forged_input = next.clone();
        forged_input[at]["encrypted_content"] = json!(forged);
        let (status, error) = post(
            &url,
            "/v1/responses/compact",
            "sk-a",
            &json!({"model": "m", "input": forged_input}),
        )
        .await;
        assert_eq!(status, 400, "{forged}: {error}");
    }
    assert_eq!(up.received().len(), before, "no refused request reached the upstream");

    // A provider's own compaction item (not ours) passes through untouched.
    let theirs = json!({"model": "m", "input": [
        {"type": "compaction", "id": "cmp_openai", "encrypted_content": "gAAAAB-opaque"},
        {"role": "user", "content": "hi"},
    ]});
    let (status, _) = post(&url, "/v1/responses", "sk-a", &theirs).await;
    assert_eq!(status, 200);
    assert!(up.received().last().unwrap().body.to_string().contains("gAAAAB-opaque"));
}

#[tokio::test]
async fn forward_mode_leaves_compaction_to_the_upstream() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone())
        .native_compaction(NativeCompaction::Forward);
    let proxy = proxy_with(builder, store).await;
    let request = json!({"model": "m", "input": rounds(0, 12)});
    let (status, _) = post(&proxy.url(), "/v1/responses/compact", "sk-a", &request).await;
    assert_eq!(status, 404, "the upstream's own answer");
    let (status, _) = post(&proxy.url(), "/v1/responses/compact", "sk-a", &request).await;
    assert_eq!(status, 404, "asked again: forward never learns");
    assert_eq!(up.script.unrouted.lock().unwrap().len(), 2);
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"upstream\"}"),
        2.0
    );
}

#[tokio::test]
async fn serve_mode_never_asks_the_upstream_and_refuses_server_state() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone())
        .native_compaction(NativeCompaction::Serve);
    let proxy = proxy_with(builder, store).await;
    let (status, body) = post(
        &proxy.url(),
        "/v1/responses/compact",
        "sk-a",
        &json!({"model": "m", "input": rounds(0, 12)}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(up.script.unrouted.lock().unwrap().is_empty());
    let (status, body) = post(
        &proxy.url(),
        "/v1/responses/compact",
        "sk-a",
        &json!({"model": "m", "previous_response_id": "resp_1"}),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("previous_response_id")
    );
}

/// The official `openai` Python SDK (`responses.compact`, sync and async) through the
/// proxy, three compactions in a row, each output carried into the next request; and a
/// forged item refused as the SDK's `BadRequestError`.
#[tokio::test]
async fn the_official_openai_sdk_compacts_through_the_proxy() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone());
    let proxy = proxy_with(builder, store).await;
    let out = support::run_python(&python, "native_compaction_client.py", &[], &[("PROXY", proxy.url())]).await;
    for check in ["compact ok", "forged ok", "async ok"] {
        assert!(out.contains(check), "{check} missing:\n{out}");
    }
    for request in up.received() {
        assert!(
            !request.body.to_string().contains("llmc1."),
            "no item reaches the upstream"
        );
    }
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}"),
        4.0
    );
    assert!(metric(&text, "compactor_proxy_native_compaction_items_resolved_total") >= 4.0);
}

/// The OpenAI Agents SDK's `OpenAIResponsesCompactionSession` over a 20-turn tool loop,
/// compacting every 5th turn (`run_compaction`): each compaction is answered by the
/// proxy, and the turns after it carry the proxy's item, opened before the upstream sees
/// it.
#[tokio::test]
async fn the_agents_sdk_compaction_session_compacts_through_the_proxy() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone());
    let proxy = proxy_with(builder, store).await;
    let out = support::run_python(&python, "agents_compaction.py", &[], &[("PROXY", proxy.url())]).await;
    assert!(out.contains("agents ok"), "{out}");
    let text = metrics(&proxy.url()).await;
    let served = metric(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}");
    assert_eq!(served, 4.0, "compactions served:\n{out}");
    assert!(metric(&text, "compactor_proxy_native_compaction_items_resolved_total") >= 3.0);
    for request in up.received() {
        assert!(
            !request.body.to_string().contains("llmc1."),
            "no item reaches the upstream"
        );
    }
}

/// Server-side compaction (`context_management` compaction on `/v1/responses`) asked of
/// an upstream without it: once the proxy serves the compaction endpoint (here `serve`),
/// it compacts such a request as any other and does not forward the field; before that
/// (`auto`, nothing learned) it stands down and forwards it untouched.
#[tokio::test]
async fn server_side_compaction_is_done_by_the_proxy_for_an_upstream_without_it() {
    let mut input = vec![json!({"role": "user", "content": "go"})];
    input.extend(rounds(0, 12));
    let request = json!({
        "model": "m",
        "context_management": [{"type": "compaction", "compact_threshold": 1000}],
        "input": input,
    });
    for (mode, compacts) in [(NativeCompaction::Serve, true), (NativeCompaction::Auto, false)] {
        let up = upstream().await;
        let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
        let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone()).native_compaction(mode);
        let proxy = proxy_with(builder, store).await;
        let (status, answer) = post(&proxy.url(), "/v1/responses", "sk-a", &request).await;
        assert_eq!(status, 200, "{answer}");
        let seen = up.received().last().unwrap().clone();
        assert_eq!(seen.body.get("context_management").is_none(), compacts, "{mode:?}");
        assert_eq!(seen.tokens() <= 3_000, compacts, "{mode:?}: {} tokens", seen.tokens());
        let text = metrics(&proxy.url()).await;
        assert_eq!(
            metric(&text, "compactor_proxy_native_server_side_total"),
            if compacts { 1.0 } else { 0.0 }
        );
    }
}

/// Anthropic's threshold compaction (`context_management.edits` `compact_20260112` on
/// `/v1/messages`) under `serve`: the proxy compacts, the compaction edit is not
/// forwarded, the client's other edits are.
#[tokio::test]
async fn anthropic_threshold_compaction_is_done_by_the_proxy_under_serve() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone())
        .native_compaction(NativeCompaction::Serve);
    let proxy = proxy_with(builder, store).await;
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for i in 0..12 {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "shell", "input": {"cmd": format!("cat f{i}")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("line of f{i}\n").repeat(60)}]}));
    }
    let request = json!({
        "model": "claude-x",
        "max_tokens": 100,
        "context_management": {"edits": [
            {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 1000}},
            {"type": "clear_thinking_20251015", "keep": "all"},
        ]},
        "messages": messages,
    });
    let (status, answer) = post(&proxy.url(), "/v1/messages", "sk-a", &request).await;
    assert_eq!(status, 200, "{answer}");
    let seen = up.received().last().unwrap().clone();
    assert_eq!(
        seen.body["context_management"],
        json!({"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]})
    );
    assert!(seen.tokens() <= 3_000, "{} tokens", seen.tokens());
    assert_eq!(
        metric(&metrics(&proxy.url()).await, "compactor_proxy_native_server_side_total"),
        1.0
    );
}

/// The official `anthropic` Python SDK with the threshold-compaction beta, 20 long turns
/// through the proxy under `serve`: every turn answered, no compaction edit forwarded,
/// every request the upstream sees within the budget, and passes run.
#[tokio::test]
async fn the_official_anthropic_sdk_threshold_compaction_is_done_by_the_proxy() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone())
        .native_compaction(NativeCompaction::Serve);
    let proxy = proxy_with(builder, store).await;
    let out = support::run_python(&python, "anthropic_compaction.py", &[], &[("PROXY", proxy.url())]).await;
    assert!(out.contains("anthropic compaction ok"), "{out}");
    let received = up.received();
    assert_eq!(received.len(), 20);
    for request in &received {
        assert!(request.body.get("context_management").is_none(), "{:?}", request.body);
        assert!(request.tokens() <= 3_000, "{} tokens", request.tokens());
    }
    let text = metrics(&proxy.url()).await;
    assert_eq!(metric(&text, "compactor_proxy_native_server_side_total"), 20.0);
    assert!(metric(&text, "compactor_proxy_compactions_total") >= 2.0, "{text}");
}

/// A request that also asks the server to clear tool uses is left to the server under
/// `serve` too: the proxy stands down and takes nothing out of it.
#[tokio::test]
async fn a_compaction_beside_another_server_edit_is_left_to_the_server() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), ledger_compactor(3_000), store.clone())
        .native_compaction(NativeCompaction::Serve);
    let proxy = proxy_with(builder, store).await;
    let edits = json!({"edits": [
        {"type": "compact_20260112"},
        {"type": "clear_tool_uses_20250919"},
    ]});
    let request = json!({
        "model": "claude-x",
        "max_tokens": 100,
        "context_management": edits,
        "messages": [{"role": "user", "content": "hello"}],
    });
    let (status, answer) = post(&proxy.url(), "/v1/messages", "sk-a", &request).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(up.received().last().unwrap().body["context_management"], edits);
    assert_eq!(
        metric(&metrics(&proxy.url()).await, "compactor_proxy_native_server_side_total"),
        0.0
    );
}
