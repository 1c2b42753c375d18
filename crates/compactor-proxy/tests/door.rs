//! Budgets at the door through the real proxy on 127.0.0.1 (issue 41, item 3): pasted
//! screenshots beyond the newest 20 and over the byte ceiling, and a 2 MB tool output,
//! go upstream as placeholders and a preview naming their handle; the store keeps every
//! original, and each handle the upstream saw expands to it byte for byte.

use crate::support;

use std::sync::Arc;

use compactor_proxy::ProxyConfig;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::plan::{DoorRules, content_bytes, handles_in};
use llm_compactor::store::{MemoryStore, SessionStore};
use llm_compactor::{Compactor, CompactorConfig, Message};
use serde_json::{Value, json};
use support::{chat_in_session, stored_transcript, upstream};

/// The ceiling of these tests: a tenth of the default, with screenshots a tenth of a real
/// one's size (the library's test sends real sizes: `tests/door_budgets.rs`).
const CEILING: usize = 3_000_000;

fn door_compactor(budget: usize) -> Arc<Compactor> {
    let rules = DoorRules::default().with_max_request_bytes(CEILING);
    let config = CompactorConfig::builder(budget)
        .keep_recent(4)
        .door(rules)
        .build()
        .unwrap();
    Arc::new(Compactor::new(config, Arc::new(HeuristicCounter)))
}

fn pasted(k: usize) -> Value {
    let data = format!("{k:08}{}", "iVBORw0KGgo".repeat(70_000 / 11));
    json!({"role": "user", "content": [
        {"type": "text", "text": format!("Page {k}: anything wrong?")},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}
    ]})
}

/// Every message the upstream saw in place of an original names its handle, and the
/// handle expands in the stored session to the original, byte for byte. Returns how many.
async fn replaced_originals_expand(store: &dyn SessionStore, session: &str, sent: &[Message]) -> usize {
    let transcript = stored_transcript(store, session).await;
    let originals = transcript.originals();
    let mut replaced = 0;
    for message in sent {
        let text = message.content.text();
        // (The scripted model echoes what it read: its answers name handles too.)
        if message.role == llm_compactor::Role::Assistant
            || !(text.contains("elided by the harness") || text.contains("capped by the harness"))
        {
            continue;
        }
        replaced += 1;
        let handle = &handles_in(&text)[0];
        let expansion = transcript.expand(handle).expect("the handle resolves");
        let original = expansion.messages.first().unwrap();
        assert!(originals.contains(original));
        assert!(content_bytes(&original.content) > content_bytes(&message.content));
        // A pasted page reads back as the client sent it, image and all.
        if let Some(k) = text.strip_prefix("Page ").and_then(|t| t.split(':').next()) {
            let k: usize = k.parse().unwrap();
            assert_eq!(original.content.to_value(), pasted(k)["content"], "page {k}");
        }
    }
    replaced
}

#[tokio::test]
async fn pasted_screenshots_beyond_the_newest_twenty_go_upstream_as_placeholders() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = support::proxy_with(
        ProxyConfig::builder(&up.url(), door_compactor(128_000), store.clone()),
        store.clone(),
    )
    .await;
    let mut history: Vec<Value> = vec![json!({"role": "system", "content": "You review screenshots."})];
    for k in 0..53 {
        history.push(pasted(k));
        let answer = chat_in_session(&proxy.url(), "shots", &json!({"model": "m", "messages": history})).await;
        history.push(answer["choices"][0]["message"].clone());
    }
    let received = up.received();
    assert_eq!(received.len(), 53);
    let client_bytes = serde_json::to_vec(&history).unwrap().len();
    assert!(
        client_bytes > CEILING + CEILING / 10,
        "the client's history is over the ceiling: {client_bytes}"
    );
    for (k, r) in received.iter().enumerate() {
        let bytes = serde_json::to_vec(&r.body).unwrap().len();
        assert!(bytes <= CEILING + 100_000, "request {k}: {bytes} bytes");
        let images = r.body.to_string().matches("data:image/png;base64").count();
        assert!(images <= 20, "request {k}: {images} images");
        // The unanswered turn's screenshot always goes.
        assert_eq!(r.body["messages"].as_array().unwrap().last().unwrap(), &pasted(k));
    }
    let last = received.last().unwrap().messages();
    let replaced = replaced_originals_expand(store.as_ref(), "shots", &last).await;
    assert!(replaced >= 33, "{replaced}");
}

#[tokio::test]
async fn a_two_megabyte_tool_output_goes_upstream_as_the_same_preview_every_round() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let budget = 32_000;
    let proxy = support::proxy_with(
        ProxyConfig::builder(&up.url(), door_compactor(budget), store.clone()),
        store.clone(),
    )
    .await;
    let output: String = (0..52_000)
        .map(|i| format!("line {i:06} of a 2 MB build log ......\n"))
        .collect();
    let mut history = vec![
        json!({"role": "user", "content": "Build it and tell me what failed."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"make\"}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "c1", "content": output}),
    ];
    let answer = chat_in_session(&proxy.url(), "build", &json!({"model": "m", "messages": history})).await;
    history.push(answer["choices"][0]["message"].clone());
    history.push(json!({"role": "user", "content": "Why?"}));
    chat_in_session(&proxy.url(), "build", &json!({"model": "m", "messages": history})).await;
    let received = up.received();
    assert_eq!(received.len(), 2);
    let first = received[0].messages();
    let preview = first[2].content.text();
    assert!(
        preview.starts_with("line 000000") && preview.contains("capped by the harness"),
        "{}",
        &preview[..200]
    );
    assert!(received[0].tokens() <= budget, "{}", received[0].tokens());
    let second = received[1].messages();
    assert_eq!(second[..3], first[..3], "the same bytes on the next round");
    let handle = &handles_in(&preview)[0];
    let transcript = stored_transcript(store.as_ref(), "build").await;
    let back = transcript.expand(handle).unwrap();
    assert_eq!(back.messages[0].content.text(), output, "byte for byte");
    assert_eq!(replaced_originals_expand(store.as_ref(), "build", &second).await, 1);
}
