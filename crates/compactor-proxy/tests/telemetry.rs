//! OpenTelemetry through the proxy (issue 29), against an OTLP/HTTP receiver on
//! 127.0.0.1 that decodes what the exporter sends (OTLP JSON): one client span per
//! proxied request in GenAI's conventions, the upstream's usage on it, a
//! `gen_ai.conversation.compacted` event on the request that carried a new pass, and
//! never a message's text, a key or a header value.

use crate::support;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use compactor_proxy::{ProxyConfig, Telemetry};
use llm_compactor::store::MemoryStore;
use serde_json::{Value, json};
use support::{metric, metrics, post_chat, proxy_with, upstream};

const KEY: &str = "sk-otel-secret-key";
const SECRET_TEXT: &str = "the-private-words-of-round";

/// An OTLP/HTTP traces endpoint: every request body it received, as JSON.
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(|State(seen): State<Arc<Mutex<Vec<Value>>>>, body: Bytes| async move {
                let value = serde_json::from_slice(&body).unwrap_or(Value::String("not JSON".into()));
                seen.lock().unwrap().push(value);
                axum::Json(json!({}))
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// An attribute's value as JSON (OTLP JSON writes integers as strings).
fn attribute<'a>(attributes: &'a Value, key: &str) -> Option<&'a Value> {
    attributes
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn int(value: Option<&Value>) -> Option<i64> {
    let v = &value?["intValue"];
    v.as_i64().or_else(|| v.as_str()?.parse().ok())
}

fn text(value: Option<&Value>) -> Option<&str> {
    value?["stringValue"].as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_is_a_genai_span_and_a_pass_is_an_event() {
    let (otlp, seen) = receiver().await;
    let up = upstream().await;
    let store = Arc::new(MemoryStore::new());
    let telemetry = Telemetry::to_endpoint(&format!("{otlp}/v1/traces")).unwrap();
    let builder = ProxyConfig::builder(&up.url(), support::compactor(3_000), store.clone()).telemetry(Some(telemetry));
    let mut proxy = proxy_with(builder, store).await;
    let mut messages = vec![json!({"role": "system", "content": "You are terse."})];
    let rounds = 12;
    for i in 0..rounds {
        let content = format!("{SECRET_TEXT} {i} {}", "words ".repeat(120));
        messages.push(json!({"role": "user", "content": content}));
        let response = post_chat(
            &proxy.url(),
            "traced",
            Some(KEY),
            &json!({"model": "m", "messages": messages}),
        )
        .await;
        assert_eq!(response.status(), 200);
        let answer: Value = response.json().await.unwrap();
        messages.push(answer["choices"][0]["message"].clone());
    }
    let compactions = metric(&metrics(&proxy.url()).await, "compactor_proxy_compactions_total");
    assert!(compactions >= 1.0, "the run compacted");
    // Shutting down exports every span still buffered.
    proxy.shutdown.take().unwrap().send(()).unwrap();
    (&mut proxy.handle).await.unwrap().unwrap();

    let bodies = seen.lock().unwrap().clone();
    assert!(!bodies.is_empty(), "the receiver got the spans");
    let raw = serde_json::to_string(&bodies).unwrap();
    assert!(!raw.contains(KEY), "no key in any span");
    assert!(!raw.contains(SECRET_TEXT), "no message text in any span");
    let spans: Vec<&Value> = bodies
        .iter()
        .flat_map(|b| b["resourceSpans"].as_array().into_iter().flatten())
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .flat_map(|s| s["spans"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(spans.len(), rounds, "one span per proxied request: {raw}");
    let mut events = 0;
    for span in &spans {
        assert_eq!(span["name"], "chat m");
        assert_eq!(span["kind"], 3, "a client span");
        let attributes = &span["attributes"];
        assert_eq!(text(attribute(attributes, "gen_ai.operation.name")), Some("chat"));
        assert_eq!(text(attribute(attributes, "gen_ai.provider.name")), Some("openai"));
        assert_eq!(text(attribute(attributes, "gen_ai.request.model")), Some("m"));
        assert_eq!(text(attribute(attributes, "gen_ai.conversation.id")), Some("traced"));
        assert!(
            int(attribute(attributes, "gen_ai.usage.input_tokens")).unwrap() > 0,
            "{span}"
        );
        assert_eq!(int(attribute(attributes, "gen_ai.usage.output_tokens")), Some(5));
        for event in span["events"].as_array().into_iter().flatten() {
            assert_eq!(event["name"], "gen_ai.conversation.compacted");
            let a = &event["attributes"];
            let (before, after) = (
                int(attribute(a, "compactor.tokens_before")).unwrap(),
                int(attribute(a, "compactor.tokens_after")).unwrap(),
            );
            assert!(after < before, "{event}");
            let replaced = int(attribute(a, "compactor.messages_replaced")).unwrap();
            let stubbed = int(attribute(a, "compactor.elisions")).unwrap();
            assert!(replaced > 0 || stubbed > 0, "{event}");
            assert!(text(attribute(a, "compactor.pass.id")).unwrap().starts_with("traced/"));
            events += 1;
        }
    }
    assert_eq!(events as f64, compactions, "one event per pass");
    eprintln!(
        "{} spans, {events} compaction events, {} export requests",
        spans.len(),
        bodies.len()
    );
}
