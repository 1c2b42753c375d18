//! A conversation that reaches the proxy already broken (an orphaned tool result, a call
//! never answered, a call id used twice) and grows over the trigger — over real HTTP on
//! 127.0.0.1, budget 4,000, the model-free ledger summarizer.
//!
//! The pass repairs what it can and the transcript records the repair, so the upstream
//! is never sent an orphan after a pass, never gets more than the budget, and the export
//! replays to exactly what it last saw; what no repair can make valid is refused with a
//! 400 that names the message and the id. Before, the proxy never read the pass's
//! repairs: its record of the pass failed to replay, so it sent every request
//! uncompacted, the orphan in each.

use crate::support;

use support::{metric, metrics, post_chat};

use std::collections::HashSet;
use std::sync::Arc;

use compactor_proxy::ProxyConfig;
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::Role;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use llm_compactor::{Compactor, CompactorConfig, Message};
use serde_json::{Value, json};
use support::{proxy_with, upstream};

const BUDGET: usize = 4_000;

async fn ledger_proxy(up: &support::Upstream, store: Arc<dyn SessionStore>) -> support::Proxy {
    let config = CompactorConfig::builder(BUDGET).build().unwrap();
    let compactor =
        Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)));
    proxy_with(ProxyConfig::builder(&up.url(), compactor, store.clone()), store).await
}

/// A round of an agent's work: a call and its ~`chars`-char result.
fn round(i: usize, chars: usize) -> [Value; 2] {
    [
        json!({"role":"assistant","content":null,"tool_calls":[{"id":format!("call_{i}"),"type":"function",
               "function":{"name":"read_file","arguments":format!("{{\"path\":\"src/f{i}.rs\"}}")}}]}),
        json!({"role":"tool","tool_call_id":format!("call_{i}"),"content": format!("file {i}: {}", "x".repeat(chars))}),
    ]
}

/// The tool results that answer no earlier call, and the calls of a finished turn left
/// unanswered (calls followed only by tool results are pending, not broken).
fn breakages(messages: &[Message]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut open: HashSet<String> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        if message.role == Role::Tool {
            let id = message.tool_call_id.clone().unwrap_or_default();
            if !open.remove(&id) {
                problems.push(format!("message {i} answers unknown call {id:?}"));
            }
        } else if !open.is_empty() {
            problems.push(format!("message {i} follows unanswered calls {open:?}"));
            open.clear();
        }
        for call in &message.tool_calls {
            open.insert(call.id.clone());
        }
    }
    problems
}

/// Grows `start` by a round at a time through the proxy, then checks the promises:
/// compacted at least once, never over the budget, nothing broken sent after the first
/// pass, and the export replays to what the upstream last saw.
async fn grows_whole(session: &str, start: Vec<Value>) {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = ledger_proxy(&up, store.clone()).await;
    let mut messages = start;
    let mut sent = Vec::new();
    for i in 0..30 {
        messages.extend(round(i, 600));
        let response = post_chat(
            &proxy.url(),
            session,
            None,
            &json!({"model": "m", "messages": messages}),
        )
        .await;
        assert_eq!(response.status(), 200, "round {i}: {}", response.text().await.unwrap());
        sent.push(messages.len());
    }
    let received = up.received();
    assert_eq!(received.len(), 30);
    let compactions = metric(&metrics(&proxy.url()).await, "compactor_proxy_compactions_total") as usize;
    assert!(compactions >= 1, "a {BUDGET}-token budget must compact this run");
    for (i, request) in received.iter().enumerate() {
        assert!(
            request.tokens() <= BUDGET,
            "round {i}: {} tokens over the budget of {BUDGET}",
            request.tokens()
        );
    }
    let first_pass = received
        .iter()
        .zip(&sent)
        .position(|(r, &n)| r.messages().len() < n)
        .expect("a compacted round sends fewer messages than the client did");
    for (i, request) in received.iter().enumerate().skip(first_pass) {
        let problems = breakages(&request.messages());
        assert!(problems.is_empty(), "round {i}, after a pass: {problems:?}");
    }
    let exported = export_jsonl(store.as_ref(), session).await.unwrap();
    let replayed = support::replayed(store.as_ref(), session).await;
    assert_eq!(
        replayed,
        received.last().unwrap().messages(),
        "export + replay equals what the upstream last saw"
    );
    assert!(exported.contains("\"type\":\"repair\""), "the repair is recorded");
}

#[tokio::test]
async fn an_orphaned_tool_result_near_the_start_is_dropped_by_the_first_pass_and_never_sent_again() {
    let start = vec![
        json!({"role":"system","content":"You are a coding agent."}),
        json!({"role":"user","content":"Fix the bug."}),
        // Its call was trimmed away by the client.
        json!({"role":"tool","tool_call_id":"call_gone","content":"old result whose call is gone"}),
        json!({"role":"user","content":"Go on."}),
    ];
    grows_whole("orphan", start).await;
}

#[tokio::test]
async fn a_call_left_unanswered_in_a_finished_turn_gets_its_answer_from_the_first_pass() {
    let start = vec![
        json!({"role":"system","content":"You are a coding agent."}),
        json!({"role":"user","content":"Fix the bug."}),
        json!({"role":"assistant","content":null,"tool_calls":[{"id":"call_lost","type":"function",
               "function":{"name":"run","arguments":"{\"cmd\":\"make\"}"}}]}),
        json!({"role":"user","content":"Never mind that; read the files."}),
    ];
    grows_whole("unanswered", start).await;
}

#[tokio::test]
async fn a_call_id_used_twice_is_refused_with_a_400_naming_the_message_and_the_id() {
    let up = upstream().await;
    let proxy = ledger_proxy(&up, Arc::new(MemoryStore::new())).await;
    let mut messages = vec![
        json!({"role":"system","content":"You are a coding agent."}),
        json!({"role":"user","content":"Fix the bug."}),
        json!({"role":"assistant","content":null,"tool_calls":[
            {"id":"dup","type":"function","function":{"name":"ls","arguments":"{}"}},
            {"id":"dup","type":"function","function":{"name":"pwd","arguments":"{}"}}]}),
        json!({"role":"tool","tool_call_id":"dup","content":"a b c"}),
        json!({"role":"tool","tool_call_id":"dup","content":"/src"}),
    ];
    for i in 0..24 {
        messages.extend(round(i, 600));
    }
    let response = post_chat(&proxy.url(), "dup", None, &json!({"model": "m", "messages": messages})).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    let text = error["error"]["message"].as_str().unwrap();
    assert!(text.contains("message 2") && text.contains("\"dup\""), "{text}");
    assert!(up.received().is_empty(), "nothing is forwarded");
}
