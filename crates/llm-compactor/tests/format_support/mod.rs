//! Shared by the format tests: validators that a converted conversation is one the
//! target API would accept (roles, keys, block kinds, tool calls answered in place).

use std::collections::HashSet;

use serde_json::Value;

fn keys_within(object: &Value, allowed: &[&str], what: &str) {
    let object = object
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {object}"));
    for key in object.keys() {
        assert!(allowed.contains(&key.as_str()), "{what}: unexpected key `{key}`");
    }
}

/// Panics unless `value` is a valid OpenAI chat-completions conversation.
pub fn assert_valid_openai(value: &Value, name: &str) {
    let messages = match value {
        Value::Array(items) => items,
        Value::Object(o) => o["messages"].as_array().expect("messages array"),
        other => panic!("{name}: not an OpenAI conversation: {other}"),
    };
    let mut open_calls: HashSet<String> = HashSet::new();
    let mut after_assistant = false;
    for (i, m) in messages.iter().enumerate() {
        let what = format!("{name}: message {i}");
        keys_within(
            m,
            &[
                "role",
                "content",
                "tool_calls",
                "tool_call_id",
                "name",
                "refusal",
                "audio",
                "annotations",
            ],
            &what,
        );
        let role = m["role"].as_str().unwrap_or_else(|| panic!("{what}: no role"));
        assert!(
            ["system", "developer", "user", "assistant", "tool"].contains(&role),
            "{what}: role {role}"
        );
        let content = m.get("content").unwrap_or_else(|| panic!("{what}: no content"));
        match content {
            Value::String(_) => {}
            Value::Null => assert_eq!(role, "assistant", "{what}: null content"),
            Value::Array(parts) => {
                for part in parts {
                    let kind = part["type"].as_str().unwrap_or_else(|| panic!("{what}: untyped part"));
                    let allowed: &[&str] = match role {
                        "user" => &["text", "image_url", "input_audio", "file"],
                        "assistant" => &["text", "refusal"],
                        _ => &["text"],
                    };
                    assert!(allowed.contains(&kind), "{what}: part {kind} in a {role} message");
                    if kind == "text" {
                        keys_within(part, &["type", "text"], &what);
                        assert!(part["text"].is_string(), "{what}");
                    }
                }
            }
            other => panic!("{what}: content {other}"),
        }
        match role {
            "assistant" => {
                open_calls.clear();
                after_assistant = true;
                if let Some(calls) = m.get("tool_calls") {
                    for call in calls.as_array().unwrap_or_else(|| panic!("{what}: tool_calls")) {
                        keys_within(call, &["id", "type", "function"], &what);
                        assert_eq!(call["type"], "function", "{what}");
                        keys_within(&call["function"], &["name", "arguments"], &what);
                        assert!(call["function"]["name"].is_string(), "{what}");
                        assert!(call["function"]["arguments"].is_string(), "{what}");
                        open_calls.insert(call["id"].as_str().expect("call id").to_owned());
                    }
                }
            }
            "tool" => {
                assert!(after_assistant, "{what}: tool message not after an assistant turn");
                let id = m["tool_call_id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{what}: no tool_call_id"));
                assert!(open_calls.remove(id), "{what}: tool_call_id {id} answers no open call");
            }
            _ => {
                after_assistant = false;
                open_calls.clear();
            }
        }
    }
}

/// Panics unless `value` is a valid Anthropic Messages conversation.
pub fn assert_valid_anthropic(value: &Value, name: &str) {
    let object = value.as_object().unwrap_or_else(|| panic!("{name}: not an object"));
    match object.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for block in blocks {
                assert_eq!(block["type"], "text", "{name}: system block");
                assert!(
                    !block["text"].as_str().unwrap_or_default().is_empty(),
                    "{name}: empty system block"
                );
            }
        }
        Some(other) => panic!("{name}: system {other}"),
    }
    let messages = object["messages"].as_array().expect("messages array");
    let mut previous_role = "";
    let mut previous_calls: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let what = format!("{name}: message {i}");
        keys_within(m, &["role", "content"], &what);
        let role = m["role"].as_str().unwrap_or_else(|| panic!("{what}: no role"));
        assert!(role == "user" || role == "assistant", "{what}: role {role}");
        if i == 0 {
            assert_eq!(role, "user", "{what}: the first turn must be the user's");
        }
        assert_ne!(role, previous_role, "{what}: two {role} turns in a row");
        let mut answered = Vec::new();
        let mut calls = Vec::new();
        match &m["content"] {
            Value::String(_) => {}
            Value::Array(blocks) => {
                assert!(!blocks.is_empty(), "{what}: empty content");
                let mut seen_other = false;
                for block in blocks {
                    let kind = block["type"]
                        .as_str()
                        .unwrap_or_else(|| panic!("{what}: untyped block"));
                    match (role, kind) {
                        (_, "text") => {
                            keys_within(block, &["type", "text"], &what);
                            assert!(!block["text"].as_str().expect("text").is_empty(), "{what}: empty text");
                            seen_other = true;
                        }
                        ("user", "image") => seen_other = true,
                        ("assistant", "tool_use") => {
                            keys_within(block, &["type", "id", "name", "input"], &what);
                            assert!(block["input"].is_object(), "{what}: tool_use input");
                            assert!(block["name"].is_string(), "{what}");
                            calls.push(block["id"].as_str().expect("id").to_owned());
                        }
                        ("user", "tool_result") => {
                            assert!(!seen_other, "{what}: tool_result after other blocks");
                            keys_within(block, &["type", "tool_use_id", "content", "is_error"], &what);
                            let id = block["tool_use_id"].as_str().expect("tool_use_id").to_owned();
                            assert!(previous_calls.contains(&id), "{what}: tool_result {id} answers no call");
                            answered.push(id);
                        }
                        ("assistant", "thinking") => assert!(block.get("signature").is_some(), "{what}"),
                        other => panic!("{what}: block {other:?}"),
                    }
                }
            }
            other => panic!("{what}: content {other}"),
        }
        if role == "user" {
            for id in &previous_calls {
                assert!(answered.contains(id), "{what}: tool_use {id} left unanswered");
            }
        }
        previous_calls = calls;
        previous_role = if role == "user" { "user" } else { "assistant" };
    }
}
