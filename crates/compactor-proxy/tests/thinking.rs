//! Signed thinking through the proxy (issue 39), against an upstream that enforces
//! Anthropic's preserved-thinking rules (`support::signing`): a tool loop with thinking
//! on, long enough for several passes (aging stubs and summaries), never gets a signature
//! 400: every request that carries a pass's rewrite asks for `drop_block`, and only those.
//! A client that edits its own history gets one retry with `drop_block`, and an answer.

use crate::support;

use std::sync::Arc;

use llm_compactor::store::{MemoryStore, SessionStore};
use serde_json::{Value, json};
use support::signing::signing_upstream;
use support::{client, metric, metrics, proxy};

const MODEL: &str = "claude-fable-5-1";

fn request(messages: &[Value]) -> Value {
    json!({"model": MODEL, "max_tokens": 2048, "system": [{"type":"text","text":"You are a coding agent."}],
        "tools": [{"name":"Bash","description":"Run a command","input_schema":{"type":"object"}}],
        "thinking": {"type":"enabled","budget_tokens":1024}, "messages": messages})
}

async fn post(proxy: &str, session: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(format!("{proxy}/v1/messages"))
        .header("x-compactor-session", session)
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-beta", "interleaved-thinking-2025-05-14")
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// One prompt, then `rounds` rounds of the tool loop: the answer as it came, then its
/// tool result (3 KB).
async fn tool_loop(proxy: &str, session: &str, rounds: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role":"user","content":"Read every part of the log and find the failure."})];
    for round in 0..rounds {
        let (status, answer) = post(proxy, session, &request(&messages)).await;
        assert_eq!(status, 200, "round {round}: {answer}");
        let call = answer["content"][1]["id"].clone();
        messages.push(json!({"role":"assistant","content":answer["content"]}));
        messages.push(
            json!({"role":"user","content":[{"type":"tool_result","tool_use_id":call,
            "content":format!("part {round}\n{}", "log line with details\n".repeat(150))}]}),
        );
    }
    messages
}

#[tokio::test]
async fn a_thinking_tool_loop_through_passes_never_gets_a_signature_400() {
    let up = signing_upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 20_000, store).await;
    tool_loop(&proxy.url(), "loop", 40).await;
    let text = metrics(&proxy.url()).await;
    let passes = metric(&text, "compactor_proxy_compactions_total");
    let asked = metric(&text, "compactor_proxy_thinking_drop_block_total{why=\"rewrite\"}");
    let seen = up.seen.lock().unwrap();
    println!(
        "thinking through {passes} passes: {} requests, {} asked drop_block, {} blocks valid, {} dropped, {} refused",
        seen.bodies.len(),
        asked,
        seen.valid,
        seen.dropped,
        seen.refused
    );
    assert!(passes >= 3.0, "{passes} passes");
    assert_eq!(seen.refused, 0, "no signature 400");
    assert!(asked >= 1.0 && seen.dropped > 0);
    // Only requests that carry stale thinking ask: the first ones, before any pass, do not.
    assert!(seen.bodies[0].pointer("/thinking/block_binding").is_none());
    let share = seen.valid as f64 / (seen.valid + seen.dropped) as f64;
    println!("thinking blocks that reached the upstream valid: {:.1}%", share * 100.0);
    // What the aging epochs cost: every block after the first stub is dropped (the
    // documented rule); blocks produced after an epoch stay valid until the next one.
    assert!(seen.valid > 0);
}

/// The upstream refuses an edited prefix (the gauge can fail: a client that edits its
/// own history is refused), and the proxy answers that refusal once with `drop_block`.
#[tokio::test]
async fn the_signing_upstream_refuses_an_edited_prefix_and_the_proxy_retries_once() {
    let up = signing_upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 200_000, store).await;
    let mut messages = tool_loop(&proxy.url(), "edit", 3).await;
    // The client edits its own history: an early tool result shortened.
    messages[2]["content"][0]["content"] = json!("part 0 (trimmed by the client)");
    let (status, answer) = post(&proxy.url(), "edit", &request(&messages)).await;
    assert_eq!(status, 200, "{answer}");
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&text, "compactor_proxy_thinking_drop_block_total{why=\"recovery\"}"),
        1.0
    );
    let seen = up.seen.lock().unwrap();
    assert_eq!(seen.refused, 1, "the edited request was refused once, then retried");
    let last = seen.bodies.last().unwrap();
    assert_eq!(
        last.pointer("/thinking/block_binding/prefix_mismatch_behavior"),
        Some(&json!("drop_block"))
    );
}
