//! Issue 39 on the real binary: a one-shot `compact` says when its pass moved signed
//! thinking onto a changed prefix (`stale_thinking` in `--json`, a line in the report);
//! the proxy and the `ContextManager` act on the same rule themselves.

use crate::support;

use serde_json::{Value, json};

use support::{run, write_json};

/// Issue 39: `compact` says when the pass moved signed thinking onto a changed prefix
/// (the one-shot report; the proxy and the `ContextManager` act on it themselves).
#[test]
fn compact_reports_the_thinking_a_pass_left_stale() {
    let mut messages = vec![json!({"role": "user", "content": "Find the failure in the log."})];
    for n in 0..24 {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("round {n}"), "signature": format!("sig-{n}")},
            {"type": "text", "text": format!("Reading part {n}.")},
            {"type": "tool_use", "id": format!("t{n}"), "name": "read", "input": {"part": n}}
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{n}"), "content": "log line ".repeat(160)}
        ]}));
    }
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "t.json", &Value::Array(messages));
    let args = [
        "compact",
        input.to_str().unwrap(),
        "--counter",
        "heuristic",
        "--budget",
        "6000",
        "--summarizer",
        "ledger",
        "--json",
    ];
    let out = run(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let stale = result["stale_thinking"].as_array().expect("stale_thinking listed");
    assert!(!stale.is_empty());
    assert!(stale.iter().all(|s| s.as_str().unwrap().starts_with("sig-")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{} signed thinking blocks now sit on a changed prefix",
            stale.len()
        )),
        "{stderr}"
    );
}
