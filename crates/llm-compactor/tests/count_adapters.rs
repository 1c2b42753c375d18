//! The complete-request adapter and the counter factory.

use std::sync::Arc;

use llm_compactor::Message;
use llm_compactor::count::{
    BpeCounter, COUNTER_NAMES, CalibratedCounter, CounterByNameError, HeuristicCounter, RequestCounter, TokenCounter,
    counter_by_name,
};
use llm_compactor::message::ToolCall;
use serde_json::json;

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the failing test in parser.rs"),
        Message::assistant("Reading it.").with_tool_calls(vec![ToolCall::new(
            "c1",
            "fs_read",
            r#"{"path":"parser.rs"}"#,
        )]),
        Message::tool("c1", "fn parse() { todo!() }"),
    ]
}

fn tools() -> Vec<serde_json::Value> {
    vec![
        json!({"type": "function", "function": {"name": "fs_read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}),
        json!({"type": "function", "function": {"name": "bash", "description": "Run a command"}}),
    ]
}

#[test]
fn the_adapter_counts_the_complete_request() {
    let m = conversation();
    for inner in [
        Arc::new(HeuristicCounter) as Arc<dyn TokenCounter>,
        Arc::new(BpeCounter::o200k()),
    ] {
        let adapter = RequestCounter::new(inner.clone(), tools(), "cwd: /repo\nbranch: main");
        assert_eq!(
            adapter.count_messages(&m),
            inner.count_request(&m, &tools(), "cwd: /repo\nbranch: main")
        );
        // Every candidate the compactor supplies carries the same tools and context.
        assert_eq!(
            adapter.count_messages(&m[..2]),
            inner.count_request(&m[..2], &tools(), "cwd: /repo\nbranch: main")
        );
        assert!(adapter.count_messages(&m) > inner.count_messages(&m));
        assert_eq!(adapter.count_message(&m[1]), inner.count_message(&m[1]));
        assert_eq!(adapter.count_text("hello"), inner.count_text("hello"));
        assert_eq!(adapter.name(), inner.name());
        assert!(!adapter.additive());
        assert_eq!(
            (adapter.tools().len(), adapter.context()),
            (2, "cwd: /repo\nbranch: main")
        );
    }
}

#[test]
fn the_adapter_adds_further_tools_and_context() {
    let inner: Arc<dyn TokenCounter> = Arc::new(BpeCounter::o200k());
    let adapter = RequestCounter::new(inner.clone(), tools()[..1].to_vec(), "a");
    let m = conversation();
    assert_eq!(
        adapter.count_request(&m, &tools()[1..], "b"),
        inner.count_request(&m, &tools(), "a\nb")
    );
    assert_eq!(adapter.count_request(&m, &[], ""), adapter.count_messages(&m));
}

#[test]
fn the_adapter_over_a_calibrated_counter_anchors_on_the_bill() {
    let calibrated = Arc::new(CalibratedCounter::new());
    let adapter = RequestCounter::new(calibrated.clone(), tools(), "ctx");
    let m = conversation();
    calibrated.record(&m[..3], "gpt-4o", Some(2_500));
    // The bill already paid for the tools and context.
    assert_eq!(
        adapter.count_messages(&m),
        2_500 + HeuristicCounter.count_message(&m[3])
    );
    // A candidate that rewrote the prefix falls back to the whole request.
    let candidate = vec![m[0].clone(), Message::user("[summary]"), m[3].clone()];
    assert_eq!(
        adapter.count_messages(&candidate),
        HeuristicCounter.count_request(&candidate, &tools(), "ctx")
    );
}

#[test]
fn an_empty_adapter_is_the_inner_request_count() {
    let inner: Arc<dyn TokenCounter> = Arc::new(BpeCounter::cl100k());
    let adapter = RequestCounter::new(inner.clone(), Vec::new(), "");
    let m = conversation();
    assert_eq!(adapter.count_messages(&m), inner.count_request(&m, &[], ""));
    assert_eq!(adapter.count_messages(&m), inner.count_messages(&m) + 3);
}

#[test]
fn counters_by_name() {
    let m = conversation();
    let heuristic = counter_by_name("heuristic").unwrap();
    assert_eq!(heuristic.name(), "heuristic");
    assert_eq!(heuristic.count_messages(&m), HeuristicCounter.count_messages(&m));
    for (name, plain) in [
        ("o200k", BpeCounter::o200k()),
        ("o200k_base", BpeCounter::o200k()),
        ("cl100k", BpeCounter::cl100k()),
    ] {
        let counter = counter_by_name(name).unwrap();
        assert_eq!(counter.name(), plain.name());
        assert_eq!(counter.count_messages(&m), plain.count_messages(&m));
        assert_eq!(
            counter.count_request(&m, &tools(), "x"),
            plain.count_request(&m, &tools(), "x")
        );
    }
    assert_ne!(
        counter_by_name("o200k").unwrap().count_text("数据 naïve 🤖"),
        counter_by_name("cl100k").unwrap().count_text("数据 naïve 🤖")
    );
    assert_eq!(COUNTER_NAMES, ["heuristic", "o200k", "cl100k"]);
}

#[test]
fn an_unknown_name_is_a_typed_error_listing_the_valid_names() {
    let err = counter_by_name("p50k").map(|_| ()).unwrap_err();
    assert_eq!(err, CounterByNameError::Unknown { name: "p50k".into() });
    let text = err.to_string();
    for name in COUNTER_NAMES {
        assert!(text.contains(name), "{text}");
    }
    assert!(counter_by_name("").is_err());
    assert!(counter_by_name("O200K").is_err());
}
