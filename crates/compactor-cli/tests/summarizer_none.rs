//! `--summarizer none` behaves as an unreachable summarizer of the abort class: one
//! failed attempt recorded, no retry, no wait, and the hard trim with `fallback: true`.

use std::process::Command;

use serde_json::{Value, json};

#[test]
fn summarizer_none_is_one_abort_class_attempt_then_the_hard_trim() {
    let mut m = vec![json!({"role": "system", "content": "rules"})];
    for i in 0..10 {
        m.push(json!({"role": "user", "content": format!("q{i} {}", "x".repeat(400))}));
        m.push(json!({"role": "assistant", "content": format!("a{i}")}));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    std::fs::write(&path, Value::Array(m).to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_compactor"))
        .args(["compact", path.to_str().unwrap(), "--json", "--summarizer", "none"])
        .args(["--counter", "heuristic", "--budget", "1000", "--keep-recent", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["fallback"], true);
    let attempts = r["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["class"], "abort");
    assert_eq!(attempts[0]["wait_ms"], 0);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    assert_eq!(r["messages"][0]["content"], "rules");
}
