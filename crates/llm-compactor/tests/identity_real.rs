//! Every tool call of the real trajectories has the call identity the slowest path gives
//! it: `canonical_arguments` (which scans the usual flat objects and copies their
//! members, `src/message/flat_arguments.rs`) equals serde_json's full parse rendered
//! canonically, or the text itself where it is not JSON.

use crate::common;

use llm_compactor::format::{Document, openhands};
use llm_compactor::message::{Message, canonical_arguments, canonical_json};
use serde_json::Value;

fn full_parse(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) => canonical_json(&value),
        Err(_) => arguments.to_owned(),
    }
}

fn check(messages: &[Message], name: &str) -> usize {
    let mut calls = 0;
    for (index, message) in messages.iter().enumerate() {
        for call in &message.tool_calls {
            assert_eq!(
                canonical_arguments(&call.arguments),
                full_parse(&call.arguments),
                "{name}: message {index}, call {}",
                call.id
            );
            calls += 1;
        }
    }
    calls
}

#[test]
fn every_real_call_has_the_identity_of_the_full_parse() {
    let mut calls = 0;
    for path in common::mini_swe_agent_files() {
        let document = Document::read_path(&path, None).expect("a readable trajectory");
        calls += check(document.messages(), &path.display().to_string());
    }
    for (n, conversation) in common::tau_bench_conversations().into_iter().enumerate() {
        let name = format!("tau-bench task {n}");
        let document = Document::from_value(conversation, None, &name).expect("a readable conversation");
        calls += check(document.messages(), &name);
    }
    for path in common::trajectory_files("openhands", ".jsonl") {
        let text = std::fs::read_to_string(&path).expect("a readable file");
        for (line, record) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            let name = format!("{}:{}", path.display(), line + 1);
            let record: Value = serde_json::from_str(record).expect("a JSON record");
            let messages = openhands::import_history(&record, &name).expect("an OpenHands history");
            calls += check(&messages, &name);
        }
    }
    if common::data_dir().is_some() {
        assert!(calls > 4_000, "only {calls} calls found in the real trajectories");
    }
    eprintln!("{calls} real tool calls have the full parse's identity");
}
