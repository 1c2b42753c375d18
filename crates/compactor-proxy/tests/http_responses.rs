//! The proxy over real HTTP on 127.0.0.1, on the OpenAI Responses API: a request on
//! server state passed through byte for byte, and agents' runs (function calls with
//! reasoning, the local shell tool with hosted web search) compacted with their turns
//! whole.

use crate::codex_run;
use crate::support;

use support::{assert_the_prefix_breaks_only_at_compactions, client, metric, metrics, proxy, upstream};

use std::sync::Arc;

use llm_compactor::session::Transcript;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use serde_json::{Value, json};

/// A Responses request the codec does not model (it continues a conversation the
/// server keeps) reaches the upstream exactly as sent, however large.
#[tokio::test]
async fn a_responses_request_on_server_state_is_passed_through_byte_for_byte() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 1_000, Arc::new(MemoryStore::new())).await;
    let body = serde_json::to_vec(&json!({
        "model": "m",
        "previous_response_id": "resp_0",
        "metadata": {"echo_body": "true"},
        "input": [{"role": "user", "content": "x ".repeat(20_000)}],
    }))
    .unwrap();
    let r = client()
        .post(format!("{}/v1/responses", proxy.url()))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().as_ref(), body.as_slice());
    let metrics = metrics(&proxy.url()).await;
    assert!(
        metrics.contains("compactor_proxy_requests_total{route=\"responses\"} 1"),
        "{metrics}"
    );
    assert_eq!(metric(&metrics, "compactor_proxy_compactions_total"), 0.0);
}

/// An agent on the Responses API (reasoning, function calls and their outputs, the
/// items fed back each round), through the proxy: every request the upstream sees fits
/// the budget, the prefix changes only at compactions, no output loses its call, a
/// reasoning item stays right before its call, and the record replays to what the
/// upstream last saw.
#[tokio::test]
async fn the_responses_api_is_compacted_with_its_turns_whole() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 2_000;
    let proxy = proxy(&up.url(), budget, store.clone()).await;
    let mut input = vec![json!({"role": "user", "content": [{"type": "input_text", "text": "make the build green"}]})];
    for i in 0..30 {
        input.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [], "encrypted_content": format!("enc{i}")}));
        input.push(json!({"type": "function_call", "call_id": format!("c{i}"), "name": "shell", "arguments": format!("{{\"n\":{i}}}")}));
        input.push(json!({"type": "function_call_output", "call_id": format!("c{i}"), "output": format!("{i}: {}", "log ".repeat(80))}));
        let body = json!({"model": "m", "instructions": "You are an agent.", "input": input, "store": false});
        let r = client()
            .post(format!("{}/v1/responses", proxy.url()))
            .header("x-compactor-session", "resp")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer["object"], "response");
        input.extend(answer["output"].as_array().unwrap().iter().cloned());
    }
    let received = up.received();
    assert_eq!(received.len(), 30);
    for (k, r) in received.iter().enumerate() {
        assert!(r.tokens() <= budget, "request {k} over the budget: {}", r.tokens());
        assert_eq!(r.body["instructions"], "You are an agent.");
        assert_eq!(r.body["store"], false);
        let items = r.body["input"].as_array().unwrap();
        let mut calls = std::collections::HashSet::new();
        for (j, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some("function_call") => {
                    assert_eq!(items[j - 1]["type"], "reasoning", "request {k} item {j}");
                    calls.insert(item["call_id"].as_str().unwrap());
                }
                Some("function_call_output") => {
                    assert!(
                        calls.contains(item["call_id"].as_str().unwrap()),
                        "request {k}: an orphan output"
                    );
                }
                _ => {}
            }
        }
    }
    assert_the_prefix_breaks_only_at_compactions(&proxy.url(), &received).await;
    let metrics = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&metrics, "compactor_proxy_requests_total{route=\"responses\"}"),
        30.0
    );
    let exported = export_jsonl(store.as_ref(), "resp").await.unwrap();
    let transcript = Transcript::parse(std::path::Path::new("resp.jsonl"), exported.as_bytes()).unwrap();
    let replayed: Vec<_> = transcript
        .messages()
        .iter()
        .map(|m| llm_compactor::Message { id: None, ..m.clone() })
        .collect();
    assert_eq!(replayed, received.last().unwrap().messages());
}

/// A Codex-like agent on the local shell tool with hosted web search: the proxy models
/// the shell calls and their outputs and keeps each search with its turn, so the run is
/// compacted under the budget (it used to be passed through whole, as unmodelled), every
/// output still follows its call and every item the upstream sees is one the client sent
/// or the summary.
#[tokio::test]
async fn a_run_on_the_local_shell_tool_with_web_search_is_compacted() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 2_000;
    let proxy = proxy(&up.url(), budget, store.clone()).await;
    let mut input = vec![codex_run::codex_ask()];
    let mut sent = std::collections::HashSet::new();
    for i in 0..30 {
        input.extend(codex_run::codex_round(i, 36));
        sent.extend(input.iter().map(Value::to_string));
        let body = json!({"model": "codex-mini-latest", "input": input, "store": false,
                          "tools": [{"type": "local_shell"}, {"type": "web_search"}]});
        let r = client()
            .post(format!("{}/v1/responses", proxy.url()))
            .header("x-compactor-session", "shell")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "round {i}");
        let answer: Value = r.json().await.unwrap();
        input.extend(answer["output"].as_array().unwrap().iter().cloned());
    }
    let received = up.received();
    assert_eq!(received.len(), 30);
    for (k, r) in received.iter().enumerate() {
        assert!(r.tokens() <= budget, "request {k} over the budget: {}", r.tokens());
        let items = r.wire_conversation();
        let mut calls = std::collections::HashSet::new();
        for (j, item) in items.iter().enumerate() {
            match item["type"].as_str() {
                Some("local_shell_call") => {
                    calls.insert(item["call_id"].as_str().unwrap());
                }
                Some("local_shell_call_output") => {
                    assert!(
                        calls.contains(item["call_id"].as_str().unwrap()),
                        "request {k} item {j}: an output without its call"
                    );
                }
                _ => {}
            }
            let summary = item["role"] == "user" && item.to_string().contains("Summary of the earlier conversation");
            let stub = item["type"] == "local_shell_call_output" && item.to_string().contains("elided");
            assert!(
                sent.contains(&item.to_string()) || summary || stub,
                "request {k} item {j} was never sent: {item}"
            );
        }
    }
    assert_the_prefix_breaks_only_at_compactions(&proxy.url(), &received).await;
}
