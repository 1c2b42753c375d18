//! Signed thinking through the proxy (issue 39), against an upstream that enforces
//! Anthropic's preserved-thinking rules (`support::signing`): a tool loop with thinking
//! on, long enough for several passes (aging stubs and summaries), never gets a signature
//! 400: every request that carries a pass's rewrite asks for `drop_block`, and only those.
//! A client that edits its own history gets one retry with `drop_block`, and an answer.

use crate::support;

use std::sync::Arc;

use compactor_proxy::ProxyConfig;
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

/// What one 40-round tool loop through the proxy left at the upstream.
struct Run {
    passes: f64,
    asked: f64,
    clearing: f64,
    requests: usize,
    valid: usize,
    dropped: usize,
    refused: usize,
    cleared: usize,
    largest: usize,
    /// The transcript's `stale-thinking` lines (one per pass that left stale thinking).
    stale_lines: usize,
}

impl Run {
    fn share(&self) -> f64 {
        self.valid as f64 / (self.valid + self.dropped).max(1) as f64
    }
}

async fn run(budget: usize, server_clearing: bool) -> Run {
    let up = signing_upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder =
        ProxyConfig::builder(&up.url(), support::compactor(budget), store.clone()).server_clearing(server_clearing);
    let proxy = support::proxy_with(builder, store.clone()).await;
    tool_loop(&proxy.url(), "loop", 40).await;
    let stale_lines = store
        .events("loop", 0)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == llm_compactor::session::TYPE_STALE_THINKING)
        .count();
    let text = metrics(&proxy.url()).await;
    let seen = up.seen.lock().unwrap();
    assert!(
        seen.bodies[0].pointer("/thinking/block_binding").is_none()
            && seen.bodies[0].get("context_management").is_none(),
        "the first request, before any pass, goes as the client sent it"
    );
    let run = Run {
        passes: metric(&text, "compactor_proxy_compactions_total"),
        asked: metric(&text, "compactor_proxy_thinking_drop_block_total{why=\"rewrite\"}"),
        clearing: metric(&text, "compactor_proxy_server_clearing_total"),
        requests: seen.bodies.len(),
        valid: seen.valid,
        dropped: seen.dropped,
        refused: seen.refused,
        cleared: seen.cleared,
        largest: seen.input_tokens.iter().copied().max().unwrap_or(0),
        stale_lines,
    };
    println!(
        "budget {budget}, server clearing {server_clearing}: {} passes, {} requests, {} asked drop_block, {} asked clearing ({} results cleared), thinking blocks valid {} of {} ({:.1}%), {} refused, largest request as read {} tokens",
        run.passes,
        run.requests,
        run.asked,
        run.clearing,
        run.cleared,
        run.valid,
        run.valid + run.dropped,
        run.share() * 100.0,
        run.refused,
        run.largest
    );
    run
}

/// Aging epochs under preserved thinking: the oldest stubs go out as the client's own
/// results with the provider's clearing of them, so no thinking block loses its prefix.
/// The control, the same loop with the stubs sent as they are, keeps a quarter.
#[tokio::test]
async fn aging_through_the_providers_clearing_keeps_the_thinking_valid() {
    let cleared = run(20_000, true).await;
    let stubbed = run(20_000, false).await;
    for run in [&cleared, &stubbed] {
        assert!(run.passes >= 3.0, "{} passes", run.passes);
        assert_eq!(run.refused, 0, "no signature 400");
        assert!(run.largest <= 20_000, "{} tokens read", run.largest);
    }
    assert!(cleared.clearing >= 1.0 && cleared.cleared > 0);
    assert!(cleared.share() >= 0.9, "{:.3} of the thinking valid", cleared.share());
    assert_eq!(cleared.stale_lines, 0, "no pass left thinking stale");
    assert!(
        stubbed.stale_lines >= 1,
        "the transcript says which passes left thinking stale"
    );
    assert_eq!(stubbed.clearing, 0.0);
    assert!(stubbed.asked >= 1.0 && stubbed.dropped > 0);
    assert!(stubbed.share() < 0.5, "the control: {:.3}", stubbed.share());
}

/// Summary passes under preserved thinking (a budget aging alone cannot hold): the kept
/// turns' thinking is dropped by the provider on request (`drop_block`), never refused.
#[tokio::test]
async fn a_thinking_tool_loop_through_summary_passes_never_gets_a_signature_400() {
    let run = run(6_000, true).await;
    assert!(run.passes >= 3.0, "{} passes", run.passes);
    assert_eq!(run.refused, 0, "no signature 400");
    assert!(run.asked >= 1.0 && run.dropped > 0, "the summaries moved some thinking");
    assert!(run.largest <= 6_000, "{} tokens read", run.largest);
    assert!(run.valid > 0);
    assert!(
        run.stale_lines >= 1,
        "the transcript records the passes that left thinking stale"
    );
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
