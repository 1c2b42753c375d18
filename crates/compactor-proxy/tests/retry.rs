//! The proxy's context-length retry follows the library's rule
//! (`Compactor::context_length_target`, the one the `ContextManager` uses): the pass
//! aims at the target and at most three quarters of what was sent, since the
//! rejection proves the count too low — over real HTTP on 127.0.0.1.

use crate::support;

use std::sync::Arc;

use llm_compactor::store::MemoryStore;
use serde_json::{Value, json};
use support::{client, proxy, upstream};

/// The engine believes the window is 100,000 tokens (its target is far above the
/// request); the upstream's is 1,500. Before, the retry aimed at the configured target,
/// found nothing to compact, and sent the same request again: the client got the 400.
#[tokio::test]
async fn a_rejection_below_the_target_is_retried_at_three_quarters_of_what_was_sent() {
    let up = upstream().await;
    let proxy = proxy(&up.url(), 100_000, Arc::new(MemoryStore::new())).await;
    let mut messages = vec![json!({"role":"system","content":"You are a terse assistant."})];
    for i in 0..8 {
        messages.push(json!({"role":"user","content": format!("question {i}: {}", "q".repeat(400))}));
        messages.push(json!({"role":"assistant","content": format!("answer {i}: {}", "a".repeat(400))}));
    }
    messages.push(json!({"role":"user","content":"and now?"}));
    let r = client()
        .post(format!("{}/v1/chat/completions", proxy.url()))
        .json(&json!({"model": "window-1500", "messages": Value::Array(messages)}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let received = up.received();
    assert_eq!(received.len(), 2, "one failed attempt, one retry");
    assert!(received[0].tokens() > 1_500);
    assert!(
        received[1].tokens() * 4 <= received[0].tokens() * 3,
        "the retry aims at three quarters of what was sent: {} then {}",
        received[0].tokens(),
        received[1].tokens()
    );
}
