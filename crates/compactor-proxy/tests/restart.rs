//! Sessions that come back: after a restart of the proxy on the same SQLite file, and
//! after the bounded session map dropped them from memory. Both must find the
//! transcript the session continues in (a session that started over lives under
//! `KEY~xxxxxxxx`) and its rewrite, so the upstream keeps seeing the same prefix.

use crate::support;

use support::{chat_in_session, metrics};

use llm_compactor::store::open_store;
use serde_json::{Value, json};
use support::{compactor, proxy_with, upstream};

/// One round: sends `messages`, appends the answer.
async fn round(proxy: &str, session: &str, messages: &mut Vec<Value>) {
    let answer = chat_in_session(proxy, session, &json!({"model":"m","messages": messages})).await;
    messages.push(answer["choices"][0]["message"].clone());
}

fn user(i: usize) -> Value {
    json!({"role":"user","content": format!("question {i}: {}", "q".repeat(300))})
}

async fn metric(proxy: &str, name: &str) -> f64 {
    let text = metrics(proxy).await;
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
        .parse()
        .unwrap()
}

/// Grows `messages` until the last request was compacted and then a few rounds more
/// (so the session has a rewrite that later requests carry).
async fn grow_past_a_compaction(proxy: &str, session: &str, messages: &mut Vec<Value>, from: usize) -> usize {
    let start = metric(proxy, "compactor_proxy_compactions_total").await;
    let mut i = from;
    while metric(proxy, "compactor_proxy_compactions_total").await == start {
        messages.push(user(i));
        round(proxy, session, messages).await;
        i += 1;
        assert!(i < from + 60, "no compaction");
    }
    messages.push(user(i));
    round(proxy, session, messages).await;
    i + 1
}

/// True when the last request the upstream got kept the one before it as its prefix.
fn kept_prefix(received: &[support::Received]) -> bool {
    let n = received.len();
    let prev = received[n - 2].body["messages"].as_array().unwrap();
    let next = received[n - 1].body["messages"].as_array().unwrap();
    next.len() > prev.len() && next[..prev.len()] == prev[..]
}

#[tokio::test]
async fn a_session_that_started_over_keeps_its_rewrite_across_a_restart() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("s.db").display());
    let budget = 2_000;
    let store = open_store(&url).await.unwrap();
    let mut first = support::proxy(&up.url(), budget, store).await;
    let mut messages = vec![json!({"role":"system","content":"You are terse."})];
    let next = grow_past_a_compaction(&first.url(), "edit", &mut messages, 0).await;
    // The agent edits its history: the session starts over, under `edit~xxxxxxxx`.
    messages[1] = json!({"role":"user","content":"question 0, edited"});
    let next = grow_past_a_compaction(&first.url(), "edit", &mut messages, next).await;
    first.shutdown.take().unwrap().send(()).unwrap();
    first.handle.await.unwrap().unwrap();

    let store = open_store(&url).await.unwrap();
    let keys_before: Vec<String> = store.sessions().await.unwrap().into_iter().map(|s| s.session).collect();
    assert_eq!(keys_before.len(), 2, "{keys_before:?}");
    assert!(keys_before.iter().any(|k| k.starts_with("edit~")), "{keys_before:?}");
    let seen_before = up.received().len();

    // A new proxy on the same file; the agent's next round.
    let second = support::proxy(&up.url(), budget, store.clone()).await;
    messages.push(user(next));
    round(&second.url(), "edit", &mut messages).await;
    let received = up.received();
    assert_eq!(received.len(), seen_before + 1);
    let keys_after: Vec<String> = store.sessions().await.unwrap().into_iter().map(|s| s.session).collect();
    assert_eq!(
        keys_after, keys_before,
        "the session went on in its transcript; it did not start over again"
    );
    assert!(received.last().unwrap().tokens() <= budget);
    if metric(&second.url(), "compactor_proxy_compactions_total").await == 0.0 {
        assert!(kept_prefix(&received), "the restarted proxy serves the same prefix");
    }
}

#[tokio::test]
async fn a_session_dropped_from_memory_comes_back_with_its_rewrite() {
    let up = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&format!("sqlite:{}", dir.path().join("s.db").display()))
        .await
        .unwrap();
    let builder = compactor_proxy::ProxyConfig::builder(&up.url(), compactor(2_000), store.clone()).max_sessions(1);
    let proxy = proxy_with(builder, store.clone()).await;
    let mut a = vec![json!({"role":"system","content":"You are terse."})];
    let next = grow_past_a_compaction(&proxy.url(), "a", &mut a, 0).await;
    // The agent edits its history: "a" continues under `a~xxxxxxxx`, with a rewrite.
    a[1] = json!({"role":"user","content":"question 0, edited"});
    let next = grow_past_a_compaction(&proxy.url(), "a", &mut a, next).await;
    let compactions = metric(&proxy.url(), "compactor_proxy_compactions_total").await;

    // Another session pushes "a" out of memory.
    let mut b = vec![json!({"role":"system","content":"Other agent."}), user(0)];
    round(&proxy.url(), "b", &mut b).await;
    assert_eq!(metric(&proxy.url(), "compactor_proxy_sessions_in_memory").await, 1.0);
    let keys_before = store.sessions().await.unwrap().len();

    a.push(user(next));
    round(&proxy.url(), "a", &mut a).await;
    let received: Vec<_> = up
        .received()
        .into_iter()
        .filter(|r| !r.body.to_string().contains("Other agent"))
        .collect();
    assert_eq!(
        store.sessions().await.unwrap().len(),
        keys_before,
        "no new transcript: the session did not start over"
    );
    assert!(received.last().unwrap().tokens() <= 2_000);
    if metric(&proxy.url(), "compactor_proxy_compactions_total").await == compactions {
        assert!(kept_prefix(&received), "the returning session serves the same prefix");
    }
}
