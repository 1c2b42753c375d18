//! Session identity through the official SDKs: each known client identity routes its
//! request stream to one session, two clients with the same system prompt and first
//! message but different identities are two sessions, and a subagent's session records
//! its parent.

use crate::support;

use std::sync::Arc;

use llm_compactor::store::{MemoryStore, SessionStore};
use serde_json::Value;
use support::{proxy, python, run_python, upstream};

async fn meta(store: &dyn SessionStore, session: &str) -> Value {
    let events = store.events(session, 0).await.unwrap();
    serde_json::from_str(&events[0].line).unwrap()
}

#[tokio::test]
async fn each_known_client_identity_is_one_session_and_two_clients_are_two() {
    let Some(python) = python() else { return };
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = proxy(&up.url(), 100_000, store.clone()).await;
    let out = run_python(&python, "identity_clients.py", &[], &[("PROXY", proxy.url())]).await;
    assert!(out.contains("identities ok"), "{out}");

    let sessions: Vec<String> = store.sessions().await.unwrap().into_iter().map(|s| s.session).collect();
    let mut expected = Vec::new();
    for who in ["A", "B"] {
        expected.extend([
            format!("claude-code-cc-{who}"),
            format!("claude-code-meta-{who}"),
            format!("codex-codex-thread-{who}"),
            format!("opencode-oc-{who}"),
            format!("cache-key-pck-{who}"),
        ]);
    }
    expected.push("claude-code-cc-sub".to_owned());
    let mut want = expected.clone();
    want.sort();
    let mut got = sessions.clone();
    got.sort();
    assert_eq!(got, want, "one session per identity, none from the digest");
    for session in &expected {
        let line = meta(store.as_ref(), session).await.to_string();
        assert!(line.contains(r#""identity_tier":"client""#), "{session}: {line}");
        // Three rounds of a growing conversation, one transcript: 1 meta + 6 messages
        // (plus the system prompt).
        let events = store.events(session, 0).await.unwrap();
        assert!(events.len() >= 7, "{session}: {} events", events.len());
    }
    let sub = meta(store.as_ref(), "claude-code-cc-sub").await.to_string();
    assert!(sub.contains(r#""parent_session":"claude-code-cc-A""#), "{sub}");
    assert!(
        meta(store.as_ref(), "claude-code-meta-A")
            .await
            .to_string()
            .contains(r#""identity_source":"body:metadata.user_id""#)
    );
}
