//! OpenAI's server-side compaction (`context_management: [{"type": "compaction",
//! "compact_threshold": N}]` on `/v1/responses`) done by the proxy for an upstream that
//! has none: a pass when the request reaches the client's threshold, the sealed
//! `compaction` item first in the answer's output (streamed: its own events, everything
//! after it renumbered), and the item, sent back with or without the items before it,
//! opened into the conversation the upstream saw. Over a long tool loop, streamed and
//! not, with the official `openai` Python SDK too.

use crate::support;

use std::sync::Arc;

use compactor_proxy::{NativeCompaction, ProxyConfig};
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::store::{MemoryStore, SessionStore};
use llm_compactor::{Compactor, CompactorConfig};
use serde_json::{Value, json};
use support::{Proxy, Upstream, client, metric, metrics, proxy_with, upstream};

/// The client's threshold; the proxy's own budget is far above it, so every pass in
/// these runs is the threshold's.
const THRESHOLD: usize = 2_000;
const BUDGET: usize = 100_000;

/// A proxy under `serve` whose passes summarize with the ledger, in front of `up`.
async fn serving(up: &Upstream) -> (Proxy, Arc<dyn SessionStore>) {
    proxy_in(up, NativeCompaction::Serve).await
}

/// A proxy under `mode` whose passes summarize with the ledger, in front of `up`.
async fn proxy_in(up: &Upstream, mode: NativeCompaction) -> (Proxy, Arc<dyn SessionStore>) {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let config = CompactorConfig::builder(BUDGET).keep_recent(4).build().unwrap();
    let compactor =
        Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer)));
    let builder = ProxyConfig::builder(&up.url(), compactor, store.clone()).native_compaction(mode);
    (proxy_with(builder, store.clone()).await, store)
}

/// Scripts the `replay` model: `calls` tool calls (unique ids), then a closing answer.
fn script_tool_loop(up: &Upstream, calls: usize) {
    let mut replies = up.script.replies.lock().unwrap();
    for k in 0..calls {
        replies.push_back(json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{k}"), "type": "function",
            "function": {"name": "shell", "arguments": format!("{{\"cmd\":\"cat src/file_{k}.py\"}}")}}]}));
    }
    replies.push_back(json!({"role": "assistant", "content": "The build is green."}));
}

/// The `output` of a streamed answer, checked as the API's stream must be: sequence
/// numbers 0, 1, 2… with none missing, each item added and done at its own index, and
/// `response.completed` holding every item in that order.
fn streamed_output(text: &str) -> Vec<Value> {
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|block| block.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let sequence: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>(), "{text}");
    let done: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| e["item"].clone())
        .collect();
    for (index, event) in events
        .iter()
        .filter(|e| e["type"] == "response.output_item.added")
        .enumerate()
    {
        assert_eq!(event["output_index"], index, "{text}");
    }
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    let output = completed["response"]["output"].as_array().unwrap().clone();
    assert_eq!(output, done, "completed holds the items in the order they streamed");
    output
}

/// What one tool loop did.
struct Run {
    compactions: usize,
    turns: usize,
}

/// Plays a client that asks for server-side compaction at [`THRESHOLD`] over `calls`
/// tool rounds, appending each answer's output (and its tool results) to its input as
/// OpenAI's guide says; `prune` drops the items before the latest compaction item.
async fn tool_loop(proxy: &str, rounds: usize, stream: bool, prune: bool) -> Run {
    let mut input = vec![json!({"role": "user", "content": "make the build green"})];
    let mut run = Run {
        compactions: 0,
        turns: 0,
    };
    loop {
        let body = json!({
            "model": "replay", "instructions": "You are a coding agent.", "input": input, "stream": stream,
            "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
            "context_management": [{"type": "compaction", "compact_threshold": THRESHOLD}],
        });
        let response = client()
            .post(format!("{proxy}/v1/responses"))
            .bearer_auth("sk-server-side")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let output = if stream {
            streamed_output(&response.text().await.unwrap())
        } else {
            let answer: Value = response.json().await.unwrap();
            answer["output"].as_array().unwrap().clone()
        };
        run.turns += 1;
        let sealed: Vec<usize> = (0..output.len())
            .filter(|&i| output[i]["type"] == "compaction")
            .collect();
        match sealed[..] {
            [] => {}
            [0] => {
                run.compactions += 1;
                let item = &output[0];
                assert!(item["encrypted_content"].as_str().unwrap().starts_with("llmc1."));
                assert_eq!(item["summary"][0]["type"], "summary_text", "the readable copy: {item}");
                assert!(
                    item["summary"][0]["text"]
                        .as_str()
                        .unwrap()
                        .contains("make the build green")
                );
            }
            _ => panic!("one compaction item, first in the output: {output:?}"),
        }
        if prune && !sealed.is_empty() {
            input.clear();
        }
        input.extend(output.iter().cloned());
        let calls: Vec<&Value> = output.iter().filter(|i| i["type"] == "function_call").collect();
        if calls.is_empty() {
            return run;
        }
        for call in calls {
            input.push(json!({"type": "function_call_output", "call_id": call["call_id"],
                "output": format!("{}: line of the file\n", call["arguments"]).repeat(40)}));
        }
        assert!(run.turns <= rounds, "the scripted loop ends after {rounds} calls");
    }
}

/// Every upstream request: within the client's threshold, without the compaction entry
/// or any sealed item; the session never started over, and its transcript replays to
/// what the upstream saw last.
async fn assert_upstream_saw_plain_conversations(up: &Upstream, store: &Arc<dyn SessionStore>) {
    let received = up.received();
    for request in &received {
        let text = request.body.to_string();
        assert!(!text.contains("llmc1."), "no item reaches the upstream");
        assert!(request.body.get("context_management").is_none(), "{text}");
        assert!(
            request.tokens() <= THRESHOLD,
            "{} tokens over the threshold",
            request.tokens()
        );
    }
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "never started over: {sessions:?}");
    let replayed = support::replayed(store.as_ref(), &sessions[0].session).await;
    assert_eq!(
        replayed,
        received.last().unwrap().messages(),
        "export + replay equals what the upstream last saw"
    );
}

#[tokio::test]
async fn the_item_is_emitted_at_the_threshold_and_sent_back_it_stands_for_the_conversation() {
    for (stream, prune) in [(false, false), (true, true)] {
        let up = upstream().await;
        let (proxy, store) = serving(&up).await;
        script_tool_loop(&up, 24);
        let run = tool_loop(&proxy.url(), 24, stream, prune).await;
        assert_eq!(run.turns, 25);
        assert!(run.compactions >= 3, "stream {stream}: {} compactions", run.compactions);
        assert_upstream_saw_plain_conversations(&up, &store).await;
        // After each compaction the upstream's conversation goes on from what it saw: the
        // item sent back stands for it (the prefix breaks only at compaction rounds).
        support::assert_the_prefix_breaks_only_at_compactions(&proxy.url(), &up.received()).await;
        let text = metrics(&proxy.url()).await;
        assert_eq!(metric(&text, "compactor_proxy_native_server_side_total"), 25.0);
        // Every item was sent back (but a last turn's) and opened; kept, the older ones
        // are opened again on every request.
        let resolved = metric(&text, "compactor_proxy_native_compaction_items_resolved_total") as usize;
        assert!(resolved + 1 >= run.compactions, "{resolved} of {}", run.compactions);
    }
}

/// The official `openai` Python SDK: `responses.create(context_management=…)` over a
/// 24-call tool loop, not streamed and streamed (`responses.stream`), each crossing the
/// threshold at least three times; no error, every upstream request within the
/// threshold and free of items, each run one session whose transcript replays to what
/// the upstream saw last.
#[tokio::test]
async fn the_official_openai_sdk_server_side_compaction_is_done_by_the_proxy() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let (proxy, store) = serving(&up).await;
    let rounds = 24;
    script_tool_loop(&up, rounds);
    script_tool_loop(&up, rounds);
    let env = [
        ("PROXY", proxy.url()),
        ("THRESHOLD", THRESHOLD.to_string()),
        ("ROUNDS", rounds.to_string()),
    ];
    let out = support::run_python(&python, "server_side_compaction.py", &[], &env).await;
    assert!(out.contains("plain ok") && out.contains("streamed ok"), "{out}");
    let received = up.received();
    assert_eq!(received.len(), 2 * (rounds + 1), "{out}");
    for request in &received {
        let text = request.body.to_string();
        assert!(!text.contains("llmc1."), "no item reaches the upstream");
        assert!(request.body.get("context_management").is_none(), "{text}");
        assert!(request.tokens() <= THRESHOLD, "{} tokens", request.tokens());
    }
    let sessions = store.sessions().await.unwrap();
    assert_eq!(
        sessions.len(),
        2,
        "one session per run, never started over: {sessions:?}"
    );
    let lasts = [received[rounds].messages(), received.last().unwrap().messages()];
    for session in &sessions {
        let replayed = support::replayed(store.as_ref(), &session.session).await;
        assert!(
            lasts.contains(&replayed),
            "export + replay equals what the upstream last saw"
        );
    }
    let text = metrics(&proxy.url()).await;
    assert!(metric(&text, "compactor_proxy_compactions_total") >= 6.0, "{text}");
    // Each item came back (the plain run keeps the older ones too) and was opened.
    assert!(
        metric(&text, "compactor_proxy_native_compaction_items_resolved_total") >= 6.0,
        "{text}"
    );
    eprintln!("{}", out.trim());
}

/// Codex's remote compaction: a streamed `/v1/responses` whose input ends with a
/// `compaction_trigger` item. Under `auto`, the upstream refuses the first (it does not
/// know the item) and the proxy answers it and every later one: exactly one compaction
/// item (what Codex requires), which, sent back after Codex's retained user messages,
/// opens into the conversation the pass left.
#[tokio::test]
async fn codex_compaction_trigger_is_answered_with_one_item_that_opens_into_the_conversation() {
    let up = upstream().await;
    let (proxy, store) = proxy_in(&up, NativeCompaction::Auto).await;
    let mut conversation = vec![json!({"role": "user", "content": "make the build green"})];
    for k in 0..30 {
        conversation.push(
            json!({"type": "function_call", "call_id": format!("c{k}"), "name": "shell",
            "arguments": format!("{{\"cmd\":\"cat f{k}\"}}")}),
        );
        conversation.push(json!({"type": "function_call_output", "call_id": format!("c{k}"),
            "output": format!("line of f{k}\n").repeat(60)}));
    }
    let trigger = |conversation: &[Value]| {
        let mut input = conversation.to_vec();
        input.push(json!({"type": "compaction_trigger"}));
        json!({"model": "m", "instructions": "You are Codex.", "input": input, "stream": true,
               "prompt_cache_key": "thread-1",
               "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]})
    };
    for round in 0..2 {
        let response = client()
            .post(format!("{}/v1/responses", proxy.url()))
            .bearer_auth("sk-codex")
            .json(&trigger(&conversation))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "round {round}");
        let output = streamed_output(&response.text().await.unwrap());
        assert_eq!(output.len(), 1, "exactly one item: {output:?}");
        assert_eq!(output[0]["type"], "compaction");
        // Codex's next history: its user messages, the item, then the turn goes on.
        let next = json!({"model": "m", "instructions": "You are Codex.", "prompt_cache_key": "thread-1",
            "input": [conversation[0].clone(), output[0].clone(), {"role": "user", "content": format!("go on {round}")}]});
        let (status, _) = {
            let response = client()
                .post(format!("{}/v1/responses", proxy.url()))
                .bearer_auth("sk-codex")
                .json(&next)
                .send()
                .await
                .unwrap();
            (response.status(), response.bytes().await.unwrap())
        };
        assert_eq!(status, 200);
        let seen = up.received().last().unwrap().clone();
        let text = seen.body.to_string();
        assert!(
            !text.contains("llmc1.") && !text.contains("compaction_trigger"),
            "{text}"
        );
        assert!(text.contains(&format!("go on {round}")));
        assert!(
            seen.tokens() < 3_000,
            "the window, not the whole conversation: {}",
            seen.tokens()
        );
        // The conversation grows again, from what the upstream saw.
        conversation = seen.wire_conversation().to_vec();
        for k in 100 * (round + 1)..100 * (round + 1) + 30 {
            conversation.push(
                json!({"type": "function_call", "call_id": format!("c{k}"), "name": "shell",
                "arguments": format!("{{\"cmd\":\"cat f{k}\"}}")}),
            );
            conversation.push(json!({"type": "function_call_output", "call_id": format!("c{k}"),
                "output": format!("line of f{k}\n").repeat(60)}));
        }
    }
    let triggers = up
        .received()
        .iter()
        .filter(|r| r.body.to_string().contains("compaction_trigger"))
        .count();
    assert_eq!(triggers, 1, "auto asked the upstream once, then answered itself");
    let text = metrics(&proxy.url()).await;
    assert_eq!(
        metric(&text, "compactor_proxy_native_compactions_total{by=\"proxy\"}"),
        2.0
    );
    assert_eq!(
        store.sessions().await.unwrap().len(),
        1,
        "one session (its prompt_cache_key)"
    );
}

/// The OpenAI Agents SDK with server-side compaction in its model settings, a tool-using
/// agent over a `SQLiteSession` for 12 turns: the session stores each compaction item with
/// its turn and sends it back; every upstream request within the threshold and free of
/// items.
#[tokio::test]
async fn the_agents_sdk_server_side_compaction_is_done_by_the_proxy() {
    let Some(python) = support::python() else { return };
    let up = upstream().await;
    let (proxy, _store) = serving(&up).await;
    let env = [
        ("PROXY", proxy.url()),
        ("THRESHOLD", THRESHOLD.to_string()),
        ("TURNS", "12".to_owned()),
    ];
    let out = support::run_python(&python, "agents_server_side.py", &[], &env).await;
    assert!(out.contains("agents server-side ok"), "{out}");
    for request in up.received() {
        let text = request.body.to_string();
        assert!(!text.contains("llmc1."), "no item reaches the upstream");
        assert!(request.body.get("context_management").is_none(), "{text}");
        assert!(request.tokens() <= THRESHOLD, "{} tokens", request.tokens());
    }
    let text = metrics(&proxy.url()).await;
    let resolved = metric(&text, "compactor_proxy_native_compaction_items_resolved_total");
    assert!(resolved >= 3.0, "{resolved} items opened:\n{out}");
    eprintln!(
        "{}; {resolved} items opened, {} upstream requests",
        out.trim(),
        up.received().len()
    );
}

/// Issue 43: an item opens only in the session it was given to. Emitted in session
/// `a` (named by the client's header), it is refused with a 400 in session `b`, by the
/// same client, nothing forwarded; sent back in `a`, it opens.
#[tokio::test]
async fn an_item_of_another_session_is_refused() {
    let up = upstream().await;
    let (proxy, _) = serving(&up).await;
    script_tool_loop(&up, 0);
    up.script.replies.lock().unwrap().extend([
        json!({"role": "assistant", "content": "ok"}),
        json!({"role": "assistant", "content": "ok"}),
    ]);
    let big: Vec<Value> = (0..12)
        .map(|i| json!({"role": "user", "content": format!("note {i}: {}", "a line of the log ".repeat(60))}))
        .collect();
    let ask = |session: &'static str, input: Vec<Value>| {
        let body = json!({
            "model": "replay", "input": input,
            "context_management": [{"type": "compaction", "compact_threshold": THRESHOLD}],
        });
        client()
            .post(format!("{}/v1/responses", proxy.url()))
            .bearer_auth("sk-server-side")
            .header("x-compactor-session", session)
            .json(&body)
            .send()
    };
    let answer: Value = ask("a", big).await.unwrap().json().await.unwrap();
    let item = answer["output"][0].clone();
    assert_eq!(item["type"], "compaction", "{answer}");
    let seen = up.received().len();
    let next = vec![item, json!({"role": "user", "content": "go on"})];
    let refused = ask("b", next.clone()).await.unwrap();
    assert_eq!(refused.status(), 400);
    let text = refused.text().await.unwrap();
    assert!(text.contains("another session") && text.contains("\\\"b\\\""), "{text}");
    assert_eq!(up.received().len(), seen, "nothing forwarded");
    assert_eq!(ask("a", next).await.unwrap().status(), 200);
}
