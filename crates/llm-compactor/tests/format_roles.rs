//! Conversion never drops a message silently (issue 10, item 4): the library's
//! `Document::to_format` maps roles the target lacks to a faithful form or refuses with
//! the message index; `to_format_lossy` drops them and says which.

use llm_compactor::format::{Document, DroppedMessage, Format};
use serde_json::{Value, json};

fn doc(value: Value) -> Document {
    Document::from_value(value, Some(Format::OpenAi), "t.json").unwrap()
}

#[test]
fn a_function_message_answering_a_call_becomes_its_tool_result() {
    let d = doc(json!([
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "function", "name": "weather", "content": "rain"},
        {"role": "assistant", "content": "It rains."}
    ]));
    for target in [Format::Anthropic, Format::MiniSweAgent] {
        let value = d.to_format(target).unwrap();
        let back = Document::from_value(value, Some(target), "back.json").unwrap();
        let result = back.messages().iter().find(|m| m.tool_call_id.as_deref() == Some("c1"));
        assert_eq!(result.map(|m| m.text()), Some("rain".to_owned()), "{target}");
        assert_eq!(back.messages().len(), 4, "{target}");
    }
}

#[test]
fn other_roles_become_labelled_user_messages_or_are_refused() {
    let d = doc(json!([
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": "Done."},
        {"role": "function", "name": "orphan", "content": "late"},
        {"role": "exit", "content": "submitted"}
    ]));
    let value = d.to_format(Format::MiniSweAgent).unwrap();
    let messages = value["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"],
        "[message of role \"function\", name \"orphan\"]\nlate"
    );
    assert_eq!(messages[3]["content"], "[message of role \"exit\"]\nsubmitted");

    let (lossy, dropped) = d.to_format_lossy(Format::Anthropic).unwrap();
    assert_eq!(
        dropped,
        vec![
            DroppedMessage {
                index: 2,
                role: "function".into()
            },
            DroppedMessage {
                index: 3,
                role: "exit".into()
            },
        ]
    );
    assert!(!lossy.to_string().contains("submitted"));

    let refused = doc(json!([
        {"role": "user", "content": "Go."},
        {"role": "planner", "content": "plan", "tool_calls": [
            {"id": "p1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}
    ]));
    let err = refused.to_format(Format::Anthropic).unwrap_err();
    assert_eq!(err.index, Some(1), "{err}");
    assert!(err.to_string().contains("planner"), "{err}");
}
