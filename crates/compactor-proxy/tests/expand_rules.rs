//! The rules of `--expand-tool` beyond the happy path: a turn that also calls another
//! tool, the bound on follow-ups per client request, and a client that chose its tool.

use crate::expand::{expanding_compactor, play_model_until_offered, post, round, tools};
use crate::support;

use std::sync::Arc;

use compactor_proxy::{ExpandTool, ProxyConfig};
use llm_compactor::Role;
use llm_compactor::store::{MemoryStore, SessionStore};
use serde_json::{Value, json};
use support::{EXPAND_TOOL, offers_expand, upstream};

#[tokio::test]
async fn another_tool_called_beside_the_expansion_is_answered_not_run() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = crate::expand::expanding_proxy(&up.url(), store).await;
    let (answer, _) = play_model_until_offered(&proxy.url(), "s", "PROBE", &up, None, "expander-mixed").await;
    let message = &answer["choices"][0]["message"];
    assert!(
        message["content"].as_str().unwrap().starts_with("read back: "),
        "{answer}"
    );
    assert!(message.get("tool_calls").is_none_or(Value::is_null), "{answer}");
    let received = up.received();
    let follow_up = received.last().unwrap().messages();
    let n = follow_up.len();
    let (turn, results) = (&follow_up[n - 3], &follow_up[n - 2..]);
    assert_eq!(turn.tool_calls.len(), 2, "the turn as the model made it");
    assert!(results.iter().all(|m| m.role == Role::Tool));
    assert_eq!(results[0].tool_call_id.as_deref(), Some("call_bash_1"));
    assert!(
        results[0].content.text().starts_with("[not run by the harness"),
        "{:?}",
        results[0]
    );
    assert!(results[1].content.text().starts_with("=== #"));
    crate::sdk::assert_no_orphans(&follow_up, n);
}

#[tokio::test]
async fn one_client_request_costs_at_most_max_calls_follow_ups_the_last_without_tools() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let builder = ProxyConfig::builder(&up.url(), expanding_compactor(3_000), store.clone())
        .expand_tool(Some(ExpandTool { max_calls: 2 }));
    let proxy = support::proxy_with(builder, store).await;
    let before = {
        // The rounds before the one that offered the tool, then that one.
        let (answer, _) = play_model_until_offered(&proxy.url(), "s", "PROBE", &up, None, "expander-greedy").await;
        assert_eq!(
            answer["choices"][0]["message"]["content"], "answered without reading more",
            "{answer}"
        );
        answer
    };
    assert!(!before.to_string().contains(EXPAND_TOOL));
    let received = up.received();
    let offered = received.iter().position(|r| offers_expand(&r.body)).unwrap();
    assert_eq!(received.len(), offered + 3, "the request and two follow-ups");
    assert_eq!(received[offered + 1].body.get("tool_choice"), None);
    assert_eq!(
        received[offered + 2].body["tool_choice"],
        "none",
        "the last follow-up asks for text"
    );
    let text = support::metrics(&proxy.url()).await;
    assert_eq!(support::metric(&text, "compactor_proxy_expand_followups_total"), 2.0);
}

#[tokio::test]
async fn a_request_that_chose_its_tool_or_declared_none_is_not_offered_it() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = crate::expand::expanding_proxy(&up.url(), store).await;
    let (_, mut history) = play_model_until_offered(&proxy.url(), "s", "PROBE", &up, None, "expander").await;
    history.push(json!({"role": "user", "content": "Go on."}));
    let variants = [
        json!({"model": "expander", "messages": history, "tools": tools(), "tool_choice": "required"}),
        json!({"model": "expander", "messages": history, "tools": tools(),
               "tool_choice": {"type": "function", "function": {"name": "bash"}}}),
        json!({"model": "expander", "messages": history, "tools": tools(), "tool_choice": "none"}),
        json!({"model": "expander", "messages": history}),
    ];
    for body in variants {
        let before = up.received().len();
        let answer: Value = post(&proxy.url(), "s", &body).await.json().await.unwrap();
        assert!(answer["choices"][0]["message"].is_object(), "{answer}");
        let received = up.received();
        assert_eq!(received.len(), before + 1, "no follow-up");
        assert!(!offers_expand(&received[before].body), "not offered: {body}");
        assert_eq!(
            received[before].body.get("tool_choice"),
            body.get("tool_choice"),
            "the client's choice stands"
        );
    }
    // The compacted session still offers it when the model may choose.
    history.extend(round(99, "PROBE"));
    let body = json!({"model": "echo", "messages": history, "tools": tools()});
    let before = up.received().len();
    post(&proxy.url(), "s", &body).await.json::<Value>().await.unwrap();
    assert!(offers_expand(&up.received()[before].body));
}

#[tokio::test]
async fn an_expansion_too_large_for_the_budget_is_cut_and_says_so() {
    let up = upstream().await;
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = crate::expand::expanding_proxy(&up.url(), store).await;
    let huge: String = (0..2_000)
        .map(|n| format!("BIG line {n}: a row of the dump\n"))
        .collect();
    let mut history = vec![
        json!({"role": "user", "content": "Dump the table, then migrate."}),
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_dump", "type": "function",
               "function": {"name": "bash", "arguments": "{\"cmd\":\"./dump\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "call_dump", "content": huge}),
    ];
    for i in 0..40 {
        history.extend(round(i, "PROBE"));
        let before = up.received().len();
        let body = json!({"model": "expander", "messages": history, "tools": tools()});
        post(&proxy.url(), "s", &body).await.json::<Value>().await.unwrap();
        let received = up.received();
        if !received[before..].iter().any(|r| offers_expand(&r.body)) {
            continue;
        }
        let (_, follow_up, handle) = crate::expand::expansion_pair(&received);
        let result = follow_up.messages().last().unwrap().content.text();
        assert!(
            follow_up.tokens() <= 3_000,
            "{} tokens: the follow-up stays within the budget",
            follow_up.tokens()
        );
        assert!(
            result.contains("BIG line 0: a row"),
            "{handle}: the dump's stub is the one asked for"
        );
        assert!(
            result.contains("cut to stay within the context budget]"),
            "{handle}: {result}"
        );
        assert!(result.len() < huge.len());
        return;
    }
    panic!("the proxy never offered {EXPAND_TOOL}");
}

#[tokio::test]
async fn a_failed_follow_up_is_the_clients_error_and_leaves_the_session_whole() {
    let up = upstream().await;
    up.script
        .fail_follow_ups
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let proxy = crate::expand::expanding_proxy(&up.url(), store.clone()).await;
    let mut history = vec![json!({"role": "user", "content": "Run the migrations."})];
    for i in 0..40 {
        history.extend(round(i, "PROBE"));
        let before = up.received().len();
        let body = json!({"model": "expander", "messages": history, "tools": tools()});
        let response = post(&proxy.url(), "s", &body).await;
        if !up.received()[before..].iter().any(|r| offers_expand(&r.body)) {
            assert_eq!(response.status(), 200);
            continue;
        }
        // Non-streamed: the follow-up's error is the client's answer.
        assert_eq!(response.status(), 503);
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"]["type"], "overloaded", "{answer}");
        // Streamed: the stream the client reads breaks off, without a stray call.
        let mut streamed = body.clone();
        streamed["stream"] = json!(true);
        let response = post(&proxy.url(), "s", &streamed).await;
        assert_eq!(response.status(), 200);
        let text = response.text().await.unwrap_or_default();
        assert!(!text.contains(EXPAND_TOOL), "{text}");
        // The session is whole: the retry goes out with no hidden turn recorded, and
        // the store replays to what the upstream saw last before the failed follow-ups.
        up.script
            .fail_follow_ups
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let before = up.received().len();
        let answer: Value = post(&proxy.url(), "s", &body).await.json().await.unwrap();
        assert!(
            answer["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .starts_with("read back: "),
            "{answer}"
        );
        let received = up.received();
        assert_eq!(received.len(), before + 2, "the request and its follow-up");
        assert_eq!(
            received[before].messages(),
            received[before - 2].messages(),
            "the retry is the request as before: no turn of the failed exchange was kept"
        );
        let text = support::metrics(&proxy.url()).await;
        assert!(
            support::metric(&text, "compactor_proxy_upstream_errors_total") >= 2.0,
            "{text}"
        );
        return;
    }
    panic!("the proxy never offered {EXPAND_TOOL}");
}
