//! Configured pins on the real binary (issue 41, item 1): `compact --pin REGEX` keeps a
//! user's rule whole in the summary where the same pass without it cuts the rule; a
//! `--pin-tool` keeps a memory tool's result; a bad pattern is a usage error naming it.

use crate::support;

use serde_json::{Value, json};

use support::{run, write_json};

/// An early rule and a memory result, then forty long tool rounds, each asked with a
/// statement of its own (which the ledger weighs as it weighs the rule: newest first).
fn session() -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "RULE: never push to main; open a pull request."}),
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "m1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}
        ]}),
        json!({"role": "tool", "tool_call_id": "m1", "content": "Saved: the staging host is db-7."}),
    ];
    for i in 0..40 {
        messages.push(json!({"role": "user", "content": format!("Note {i}: part {i} handles the {i}th invoice format, keep it as it is.")}));
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function",
             "function": {"name": "bash", "arguments": format!("{{\"command\":\"cat part{i}.py\"}}")}}
        ]}));
        messages
            .push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "def f(): pass\n".repeat(40)}));
    }
    messages.push(json!({"role": "user", "content": "Now run the tests."}));
    Value::Array(messages)
}

fn compact(input: &str, extra: &[&str]) -> String {
    let args = [
        &[
            "compact",
            input,
            "--counter",
            "heuristic",
            "--budget",
            "1200",
            "--summarizer",
            "ledger",
        ][..],
        extra,
    ]
    .concat();
    let out = run(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn pins_keep_a_rule_and_a_memory_result_the_plain_pass_cuts() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &session());
    let input = input.to_str().unwrap();
    let rule = "RULE: never push to main; open a pull request.";
    let memory = "[memory result] Saved: the staging host is db-7.";
    let plain = compact(input, &[]);
    assert!(
        !plain.contains(rule),
        "the control keeps the rule: the test proves nothing"
    );
    assert!(!plain.contains(memory));
    let pinned = compact(input, &["--pin", "(?m)^RULE:", "--pin-tool", "memory"]);
    assert!(pinned.contains(rule), "{pinned}");
    assert!(pinned.contains(memory), "{pinned}");
}

#[test]
fn a_pin_pattern_that_does_not_parse_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &session());
    let out = run(&["compact", input.to_str().unwrap(), "--pin", "a("], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"a(\""), "{stderr}");
}
