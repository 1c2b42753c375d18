//! Model `expander` of the scripted upstream: a model that uses `compactor_expand` when
//! the proxy offers it (`--expand-tool`), and the helpers its tests read requests with.
use llm_compactor::Message;
use serde_json::{Value, json};

/// The tool the proxy offers with `--expand-tool`.
pub const EXPAND_TOOL: &str = "compactor_expand";

/// True when a request declares `compactor_expand`, in any route's shape.
pub fn offers_expand(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|tool| tool["name"] == EXPAND_TOOL || tool["function"]["name"] == EXPAND_TOOL)
}

/// The handle model `expander` asks for: the one the last user message names after
/// "expand ", else the first elision stub's, else the first the ledger names.
pub fn wanted_handle(messages: &[Message]) -> Option<String> {
    let handle_at = |text: &str, at: usize| -> Option<String> {
        let candidate = text.get(at..at + 11)?;
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (candidate.starts_with('#') && candidate[1..].bytes().all(hex)).then(|| candidate.to_owned())
    };
    let find_after = |texts: Vec<String>, marker: &str| {
        texts.into_iter().find_map(|text| {
            text.match_indices(marker)
                .find_map(|(at, _)| handle_at(&text, at + marker.len() - 1))
        })
    };
    let last_user = messages.iter().rev().find(|m| m.role == llm_compactor::Role::User);
    let texts = || messages.iter().map(|m| m.content.text()).collect::<Vec<_>>();
    find_after(last_user.map(|m| m.content.text()).into_iter().collect(), "expand #")
        .or_else(|| find_after(texts(), "with \"#"))
        .or_else(|| find_after(texts(), "[#"))
}

/// Model `expander`: once offered `compactor_expand`, it asks for [`wanted_handle`]; once
/// answered, it says what it read; told `tool_choice` none, it answers in text. `None`:
/// it answers as model `echo` does. Its variants: `expander-chatty` says a sentence
/// before its call, `expander-mixed` also calls `bash` in the same turn,
/// `expander-greedy` asks again after every answer.
pub(super) fn expander_reply(model: &str, body: &Value, messages: &[Message]) -> Option<Value> {
    let greedy = model == "expander-greedy";
    let last = messages.last()?;
    if !greedy && last.role == llm_compactor::Role::Tool && last.content.text().starts_with("=== #") {
        let text = last.content.text();
        let read: String = text.chars().take(400).collect();
        return Some(json!({"role": "assistant", "content": format!("read back: {read}")}));
    }
    if !offers_expand(body) {
        return None;
    }
    if body["tool_choice"] == "none" || body["tool_choice"]["type"] == "none" {
        return Some(json!({"role": "assistant", "content": "answered without reading more"}));
    }
    let read_before = messages
        .iter()
        .any(|m| m.role == llm_compactor::Role::Tool && m.content.text().starts_with("=== #"));
    let asked = last.role == llm_compactor::Role::User && last.content.text().contains("expand #");
    if read_before && !asked && !greedy {
        return None;
    }
    let handle = wanted_handle(messages)?;
    let arguments = json!({"handles": [handle]}).to_string();
    let mut calls = vec![json!({"id": "call_expand_1", "type": "function",
                                "function": {"name": EXPAND_TOOL, "arguments": arguments}})];
    if model == "expander-mixed" {
        calls.insert(
            0,
            json!({"id": "call_bash_1", "type": "function",
                               "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}),
        );
    }
    let content = if model == "expander-chatty" {
        json!("Let me check the earlier output. ")
    } else {
        Value::Null
    };
    Some(json!({"role": "assistant", "content": content, "tool_calls": calls}))
}
