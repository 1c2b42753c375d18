//! Budgets at the door on the real binary: `compact --door` caps a 2 MB tool output to a
//! preview whose handle `session expand` reads back from the same file, byte for byte;
//! off by default; unworkable numbers are a usage error.

use crate::support;

use serde_json::{Value, json};

use support::{run, stdout_json, write_json};

fn with_big_output(output: &str) -> Value {
    json!([
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Build it."},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"make\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": output}
    ])
}

#[test]
fn a_session_compacted_with_the_door_caps_a_two_megabyte_output_and_expands_it_back() {
    let output: String = (0..52_000)
        .map(|i| format!("line {i:06} of a 2 MB build log ......\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &with_big_output(&output));
    let session = dir.path().join("s.jsonl");
    let s = session.to_str().unwrap();
    let import = run(&["session", "import", input.to_str().unwrap(), "-o", s], None);
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let engine = ["--counter", "heuristic", "--budget", "32000", "--summarizer", "ledger"];
    let on = run(
        &[
            &["session", "compact", s][..],
            &engine,
            &["--door", "--door-tool-cap-for", "bash=5000"],
        ]
        .concat(),
        None,
    );
    assert!(on.status.success(), "{}", String::from_utf8_lossy(&on.stderr));
    let replay = run(&["session", "replay", s, "--json"], None);
    assert!(replay.status.success());
    let messages = stdout_json(&replay)["messages"].clone();
    let last = messages.as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        last.len() < 2_500 && last.starts_with("line 000000"),
        "{}",
        &last[..last.len().min(300)]
    );
    assert!(last.contains("capped by the harness"), "{last}");
    let handle = llm_compactor::plan::handles_in(&last)[0].clone();
    let expanded = run(&["session", "expand", s, &handle, "--json"], None);
    assert!(
        expanded.status.success(),
        "{}",
        String::from_utf8_lossy(&expanded.stderr)
    );
    let back = stdout_json(&expanded);
    let messages = back["expansions"][0]["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"].as_str().unwrap(),
        output,
        "byte for byte"
    );
}

#[test]
fn the_door_is_off_by_default_in_compact() {
    let output: String = "y".repeat(200_000);
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &with_big_output(&output));
    let out = run(
        &[
            "compact",
            input.to_str().unwrap(),
            "--counter",
            "heuristic",
            "--budget",
            "128000",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("capped by the harness"));
    let on = run(
        &[
            "compact",
            input.to_str().unwrap(),
            "--counter",
            "heuristic",
            "--budget",
            "128000",
            "--door",
        ],
        None,
    );
    assert!(String::from_utf8_lossy(&on.stdout).contains("capped by the harness"));
}

#[test]
fn an_unworkable_door_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &with_big_output("x"));
    let out = run(
        &[
            "compact",
            input.to_str().unwrap(),
            "--door-tool-cap",
            "100",
            "--door-preview-chars",
            "5000",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("preview"));
    let out = run(
        &["compact", input.to_str().unwrap(), "--door-tool-cap-for", "bash"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
}
