//! The proxy over real HTTP on 127.0.0.1: routing, relaying, errors, limits, the
//! stable-prefix rewrite, compaction, the context-length retry, and the durable record
//! (the Responses API's runs are in `http_responses.rs`).

use crate::support;

use support::{assert_the_prefix_breaks_only_at_compactions, chat_in_session, client, metric, metrics, post_chat};

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::format::{Document, Format};
use llm_compactor::session::Transcript;
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl};
use serde_json::{Value, json};
use support::{proxy, upstream};

fn chat_body(model: &str, messages: Value) -> Value {
    json!({"model": model, "messages": messages})
}

/// A history with `rounds` user/assistant pairs of ~`chars` characters each.
fn history(rounds: usize, chars: usize) -> Vec<Value> {
    let mut messages = vec![json!({"role":"system","content":"You are a terse assistant."})];
    for i in 0..rounds {
        messages.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(chars))}));
        messages.push(json!({"role":"assistant","content": format!("answer {i}: {}", "a".repeat(chars))}));
    }
    messages
}

#[tokio::test]
async fn non_streaming_request_is_forwarded_with_the_clients_key_and_relayed() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 100_000, store.clone()).await;
    let body = chat_body("m", json!([{"role":"user","content":"hello"}]));
    let response = post_chat(&proxy.url(), "s1", Some("sk-secret-1"), &body).await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "echo: hello");
    let received = up.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].authorization.as_deref(), Some("Bearer sk-secret-1"));
    assert_eq!(
        received[0].session_header, None,
        "the proxy's own header is not forwarded"
    );
    assert_eq!(received[0].body, body, "an unchanged request is forwarded as sent");
    let exported = export_jsonl(store.as_ref(), "s1").await.unwrap();
    assert!(!exported.contains("sk-secret-1"), "credentials never reach the store");
    assert_eq!(exported.lines().count(), 2, "session-meta and the one message");
}

#[tokio::test]
async fn errors_are_passed_through_and_an_unreachable_upstream_is_a_clear_502() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 100_000, Arc::new(MemoryStore::new())).await;
    let url = format!("{}/v1/chat/completions", proxy.url());
    let one = json!([{"role":"user","content":"hi"}]);
    let r = client()
        .post(&url)
        .json(&chat_body("err-401", one.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "invalid_api_key");
    let r = client()
        .post(&url)
        .json(&chat_body("err-429", one.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "7");

    // Nothing listens on the upstream port any more.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let dead_proxy = support::proxy(&dead_url, 100_000, Arc::new(MemoryStore::new())).await;
    let r = client()
        .post(format!("{}/v1/chat/completions", dead_proxy.url()))
        .bearer_auth("sk-secret-2")
        .json(&chat_body("m", one))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let text = r.text().await.unwrap();
    assert!(text.contains("upstream could not be reached"), "{text}");
    assert!(!text.contains("sk-secret-2"), "{text}");
}

#[tokio::test]
async fn other_paths_pass_through_and_health_and_metrics_answer() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 100_000, Arc::new(MemoryStore::new())).await;
    let models: Value = client()
        .get(format!("{}/v1/models", proxy.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "m");
    let health = client().get(format!("{}/healthz", proxy.url())).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let metrics = metrics(&proxy.url()).await;
    assert!(
        metrics.contains("compactor_proxy_requests_total{route=\"passthrough\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("# TYPE compactor_proxy_added_latency_seconds histogram"),
        "{metrics}"
    );
}

/// A chat request that sends a key of the crate's own namespace (where the readers keep
/// how to write a message back) is refused with a 400 naming the message and the key,
/// and nothing reaches the upstream: the key would steer the rewritten request.
#[tokio::test]
async fn a_request_using_the_crates_reserved_keys_is_refused_by_name() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 1_000, Arc::new(MemoryStore::new())).await;
    let messages = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function",
            "function": {"name": "f", "arguments": "{}", "_llm_compactor_arguments_object": true}}]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"}
    ]);
    let response = post_chat(&proxy.url(), "reserved", None, &chat_body("m", messages)).await;
    assert_eq!(response.status(), 400);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("message 1") && text.contains("_llm_compactor_arguments_object"),
        "{text}"
    );
    assert!(up.received().is_empty(), "nothing forwarded");
}

/// Screenshots are counted as images, not as their base64: ten of ~150 KB each (~16k
/// tokens as billed, ~400k as base64 text) in a 100k window are forwarded exactly as
/// sent. Before, the proxy summarized them away on the first request.
#[tokio::test]
async fn a_conversation_with_screenshots_inside_the_window_is_forwarded_unchanged() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 100_000, Arc::new(MemoryStore::new())).await;
    let mut messages = vec![json!({"role": "system", "content": "You look at screens."})];
    for i in 0..10 {
        let png = format!(
            "data:image/png;base64,{}",
            format!("iVBORw0KGgoAAAANSUhEUg{i:03}").repeat(6_000)
        );
        messages.push(json!({"role": "user", "content": [
            {"type": "text", "text": format!("screen {i}: what changed?")},
            {"type": "image_url", "image_url": {"url": png}}
        ]}));
        messages.push(json!({"role": "assistant", "content": format!("In screen {i} the dialog moved.")}));
    }
    let body = chat_body("m", Value::Array(messages));
    let response = post_chat(&proxy.url(), "screens", None, &body).await;
    assert_eq!(response.status(), 200);
    let received = up.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body, body, "nothing to compact: forwarded as sent");
}

/// A PDF is counted by its pages, not as one image. An agent read a 60-page PDF (its
/// `Read` tool answered with a `document` block: ~144k tokens as billed) and went on
/// working; in a 128k window the proxy compacts before the request goes on, and the
/// upstream gets a request that fits, without the PDF's data, the recent turns as sent.
/// Before, the PDF counted 1,600 tokens and the request went on as sent, over the
/// window.
#[tokio::test]
async fn a_long_pdf_read_earlier_is_compacted_before_the_request_goes_on() {
    use base64::Engine;
    let up = upstream().await;
    let budget = 128_000;
    let proxy = proxy(&up.url(), budget, Arc::new(MemoryStore::new())).await;
    let mut pdf = b"%PDF-1.4\n".to_vec();
    for page in 0..60 {
        pdf.extend(format!("{} 0 obj << /Type /Page /Parent 1 0 R >> endobj\n", page + 2).bytes());
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&pdf);
    let mut messages = vec![
        json!({"role": "user", "content": "What does docs/q3.pdf say about churn? Then fix the report script."}),
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_0", "name": "Read", "input": {"file_path": "docs/q3.pdf"}}
        ]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}
        ]}]}),
    ];
    for round in 1..=6 {
        let id = format!("toolu_{round}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {round}: checking the report script.")},
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": format!("grep -n churn scripts/report_{round}.py")}}
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": format!("{round}: churn = lost / start  # {}", "x".repeat(200))}
        ]}));
    }
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages});
    let response = client()
        .post(format!("{}/v1/messages", proxy.url()))
        .header("x-compactor-session", "pdf")
        .header("x-api-key", "sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let received = up.received();
    assert_eq!(received.len(), 1);
    let forwarded = received[0].body.to_string();
    assert!(!forwarded.contains(&data[..64]), "the PDF's data went on");
    assert!(received[0].tokens() <= budget, "{} tokens", received[0].tokens());
    let sent = body["messages"].as_array().unwrap();
    let mut got = received[0].body["messages"].as_array().unwrap().clone();
    // The client marked no breakpoint: `--anthropic-cache auto` put the rolling one on
    // the last block; otherwise the recent turns went on as sent.
    let last = got.last_mut().unwrap()["content"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    assert_eq!(
        last.as_object_mut().unwrap().shift_remove("cache_control"),
        Some(json!({"type": "ephemeral"}))
    );
    assert_eq!(got[got.len() - 4..], sent[sent.len() - 4..], "the recent turns as sent");
}

/// Some OpenAI-compatible clients send `function.arguments` as the JSON object itself.
/// The proxy compacts such a conversation like any other and sends every call on with
/// its arguments as the object the client wrote (the upstream accepts what the client
/// sends; the proxy used to answer 400).
#[tokio::test]
async fn tool_call_arguments_sent_as_objects_are_compacted_and_forwarded_as_objects() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 1_500;
    let proxy = proxy(&up.url(), budget, store.clone()).await;
    let mut messages = vec![json!({"role": "user", "content": "fix the build"})];
    for i in 0..20 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("c{i}"), "type": "function",
            "function": {"name": "shell", "arguments": {"cmd": format!("make step{i}"), "timeout": 30}}
        }]}));
        messages.push(
            json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("{i}: {}", "log ".repeat(60))}),
        );
        let response = post_chat(
            &proxy.url(),
            "objects",
            None,
            &chat_body("m", Value::Array(messages.clone())),
        )
        .await;
        assert_eq!(response.status(), 200, "round {i}");
    }
    let received = up.received();
    assert_eq!(received.len(), 20);
    let mut calls = 0;
    for (k, r) in received.iter().enumerate() {
        assert!(r.tokens() <= budget, "request {k} over the budget: {}", r.tokens());
        for message in r.body["messages"].as_array().unwrap() {
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let function = call["function"].as_object().unwrap();
                assert!(function["arguments"].is_object(), "request {k}: {call}");
                assert_eq!(function.len(), 2, "request {k}: only name and arguments: {call}");
                calls += 1;
            }
        }
    }
    assert!(calls > 0);
    let metrics = metrics(&proxy.url()).await;
    assert!(
        metric(&metrics, "compactor_proxy_compactions_total") >= 1.0,
        "the run should compact: {metrics}"
    );
}

#[tokio::test]
async fn an_oversized_body_gets_a_clear_413() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = compactor_proxy::ProxyConfig::builder(&up.url(), support::compactor(100_000), store.clone())
        .max_body_bytes(1000);
    let proxy = support::proxy_with(builder, store).await;
    let body = chat_body("m", json!([{"role":"user","content":"x".repeat(5000)}]));
    let r = client()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let text = r.text().await.unwrap();
    assert!(text.contains("1000 bytes"), "{text}");
    assert!(up.received().is_empty());
}

#[tokio::test]
async fn streamed_chunks_are_forwarded_as_they_arrive() {
    let up = upstream().await;
    let (open, gate) = tokio::sync::oneshot::channel();
    *up.script.gate.lock().unwrap() = Some(gate);
    let proxy = proxy(&up.url(), 100_000, Arc::new(MemoryStore::new())).await;
    let mut body = chat_body("gated", json!([{"role":"user","content":"stream me"}]));
    body["stream"] = json!(true);
    let mut response = client()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    // The upstream holds the second half back until we have seen the first: a proxy
    // that buffered the answer would never deliver it (the timeout fails the test).
    let first = tokio::time::timeout(Duration::from_secs(20), response.chunk())
        .await
        .expect("the first chunk arrives before the upstream finishes")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    open.send(()).unwrap();
    let mut rest = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        rest.extend_from_slice(&chunk);
    }
    assert!(String::from_utf8_lossy(&rest).ends_with("data: [DONE]\n\n"));
}

/// Sends the full, growing history `rounds` times and returns what the upstream saw.
async fn grow(proxy_url: &str, session: &str, rounds: usize, chars: usize) {
    let mut messages = history(0, 0);
    for i in 0..rounds {
        messages.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(chars))}));
        let answer = chat_in_session(proxy_url, session, &chat_body("m", Value::Array(messages.clone()))).await;
        messages.push(answer["choices"][0]["message"].clone());
    }
}

#[tokio::test]
async fn compaction_keeps_the_upstream_under_budget_with_a_stable_prefix_and_a_replayable_record() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let store = llm_compactor::store::open_store(&format!("sqlite:{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let budget = 2_000;
    let proxy = proxy(&up.url(), budget, store.clone()).await;
    grow(&proxy.url(), "grow", 40, 300).await;
    let received = up.received();
    assert_eq!(received.len(), 40);
    for r in &received[1..] {
        assert!(r.tokens() <= budget, "a request over the budget: {}", r.tokens());
    }
    assert_the_prefix_breaks_only_at_compactions(&proxy.url(), &received).await;

    // Export and replay: the transcript rebuilds exactly what the upstream last saw.
    let exported = export_jsonl(store.as_ref(), "grow").await.unwrap();
    let transcript = Transcript::parse(std::path::Path::new("grow.jsonl"), exported.as_bytes()).unwrap();
    let last = received.last().unwrap();
    let seen = Document::from_value(last.body.clone(), Some(Format::OpenAi), "upstream")
        .unwrap()
        .into_messages();
    let replayed: Vec<_> = transcript
        .messages()
        .iter()
        .map(|m| llm_compactor::Message { id: None, ..m.clone() })
        .collect();
    assert_eq!(replayed, seen);
}

#[tokio::test]
async fn a_restarted_proxy_continues_the_session_from_the_store() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("s.db").display());
    let store = llm_compactor::store::open_store(&url).await.unwrap();
    let first = proxy(&up.url(), 2_000, store).await;
    grow(&first.url(), "again", 20, 300).await;
    let mut first = first;
    first.shutdown.take().unwrap().send(()).unwrap();
    first.handle.await.unwrap().unwrap();
    let before = up.received().len();
    // A new process: the same file, a new proxy, the agent's next round.
    let store = llm_compactor::store::open_store(&url).await.unwrap();
    let second = proxy(&up.url(), 2_000, store.clone()).await;
    let last = up.received().last().unwrap().clone();
    let mut client_history: Vec<Value> = history(0, 0);
    for i in 0..20 {
        client_history.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(300))}));
        client_history.push(json!({"role":"assistant","content": format!("echo: question {i}: {}", "q".repeat(300))}));
    }
    client_history.push(json!({"role":"user","content":"one more"}));
    let r = post_chat(
        &second.url(),
        "again",
        None,
        &chat_body("m", Value::Array(client_history)),
    )
    .await;
    assert_eq!(r.status(), 200);
    let received = up.received();
    assert_eq!(received.len(), before + 1);
    let prev = last.body["messages"].as_array().unwrap();
    let next = received.last().unwrap().body["messages"].as_array().unwrap();
    assert!(received.last().unwrap().tokens() <= 2_000);
    let metrics = metrics(&second.url()).await;
    if metrics.contains("compactor_proxy_compactions_total 0") {
        assert_eq!(
            &next[..prev.len()],
            &prev[..],
            "the restarted proxy serves the same prefix"
        );
    }
    // The stored rewrite matched: the session did not start over under a new key.
    assert_eq!(store.sessions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_context_length_error_is_compacted_and_retried_once_transparently() {
    let up = upstream().await;
    // The engine thinks the window is huge; the upstream's is 1500 tokens.
    let proxy = proxy(&up.url(), 3_000, Arc::new(MemoryStore::new())).await;
    let mut messages = history(8, 400);
    messages.push(json!({"role":"user","content":"and now?"}));
    let r = client()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .json(&chat_body("window-1500", Value::Array(messages)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let received = up.received();
    assert_eq!(received.len(), 2, "one failed attempt, one retry");
    assert!(received[0].tokens() > 1500 && received[1].tokens() <= 1500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_concurrent_sessions_neither_mix_nor_lose_anything() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let store = llm_compactor::store::open_store(&format!("sqlite:{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let proxy = proxy(&up.url(), 1_000_000, store.clone()).await;
    let rounds = 8;
    let tasks: Vec<_> = (0..32)
        .map(|k| {
            let url = proxy.url();
            tokio::spawn(async move {
                let mut messages = vec![json!({"role":"system","content":"Be brief."})];
                for i in 0..rounds {
                    messages.push(json!({"role":"user","content": format!("sess-{k}-round-{i}")}));
                    let answer: Value = client()
                        .post(format!("{url}/v1/chat/completions"))
                        .json(&chat_body("m", Value::Array(messages.clone())))
                        .send()
                        .await
                        .unwrap()
                        .json()
                        .await
                        .unwrap();
                    let reply = answer["choices"][0]["message"].clone();
                    assert_eq!(reply["content"], format!("echo: sess-{k}-round-{i}"));
                    messages.push(reply);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let received = up.received();
    assert_eq!(received.len(), 32 * rounds);
    for request in &received {
        let text = request.body.to_string();
        let owner = text
            .split("sess-")
            .nth(1)
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .to_owned();
        assert!(
            !text
                .split("sess-")
                .skip(1)
                .any(|part| !part.starts_with(&format!("{owner}-"))),
            "a request mixes sessions: {text}"
        );
    }
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 32);
    for session in sessions {
        // session-meta, the system prompt, `rounds` user turns and `rounds - 1` answers.
        assert_eq!(session.events as usize, 1 + 1 + rounds + rounds - 1, "{session:?}");
        let exported = export_jsonl(store.as_ref(), &session.session).await.unwrap();
        let transcript = Transcript::parse(std::path::Path::new("s.jsonl"), exported.as_bytes()).unwrap();
        let owner = transcript.messages()[1].content.text();
        assert!(
            transcript
                .messages()
                .iter()
                .skip(1)
                .all(|m| m.content.text().contains(owner.split("-round").next().unwrap()))
        );
    }
}
