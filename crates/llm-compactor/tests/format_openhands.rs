//! OpenHands event streams (import only) on the real file.

use crate::common;
use crate::format_support;

use llm_compactor::format::{Document, Format, openhands};
use llm_compactor::message::Role;
use serde_json::{Value, json};

#[test]
fn every_real_openhands_record_becomes_a_valid_conversation() {
    let files = common::trajectory_files("openhands", ".jsonl");
    let mut records = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (line, record) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let name = format!("{}:{}", path.display(), line + 1);
            let record: Value = serde_json::from_str(record).unwrap();
            let messages = openhands::import_history(&record, &name).unwrap();
            let actions_with_calls = record["history"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e.get("action").is_some() && e.get("tool_call_metadata").is_some())
                .count();
            assert_eq!(messages[0].role, Role::System, "{name}");
            assert!(messages[0].sysprompt);
            assert_eq!(messages[1].role, Role::User, "{name}");
            assert_eq!(
                messages.iter().map(|m| m.tool_calls.len()).sum::<usize>(),
                actions_with_calls,
                "{name}"
            );
            let doc = Document::from_messages(Format::OpenAi, messages);
            format_support::assert_valid_openai(&doc.to_value(), &name);
            format_support::assert_valid_anthropic(&doc.to_format(Format::Anthropic).unwrap(), &name);
            records += 1;
        }
    }
    eprintln!("{records} OpenHands records imported");
}

#[test]
fn malformed_records_are_errors() {
    let err = openhands::import_history(&json!({"instance_id": "x"}), "oh.jsonl").unwrap_err();
    assert_eq!(err.to_string(), "oh.jsonl: an OpenHands record has no `history`");
    let err = openhands::import_history(&json!({"history": [{"id": 0}, 3]}), "oh.jsonl").unwrap_err();
    assert_eq!(
        err.to_string(),
        "oh.jsonl: message 1: an event must be an object, not a number"
    );
}
