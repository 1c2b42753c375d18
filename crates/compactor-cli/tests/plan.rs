//! `compactor plan` on the real binary: it reports and changes nothing.

use crate::support;

use serde_json::{Value, json};
use support::{run, tool_rounds, write_json};

fn conversation(rounds: usize, size: usize) -> Value {
    let mut m = tool_rounds(rounds, size);
    m.push(json!({"role": "user", "content": "x".repeat(60_000)}));
    m.push(json!({"role": "assistant", "content": "ok"}));
    Value::Array(m)
}

#[test]
fn json_plan_reports_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(5, 3000));
    let out = run(
        &[
            "plan",
            input.to_str().unwrap(),
            "--json",
            "--counter",
            "heuristic",
            "--budget",
            "10000",
            "--keep-recent",
            "2",
            // Aging is on by default since issue 12; this pins the summarizing plan.
            "--age-observations=false",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["trigger"], 7000);
    assert_eq!(r["target"], 4000);
    assert_eq!(r["needs_compaction"], true);
    assert_eq!(r["reason"], "over-trigger");
    assert_eq!(r["cut_index"], 11);
    assert_eq!(r["recent_start"], 12);
    assert_eq!(r["eligible"].as_array().unwrap().len(), 0, "aging is off");
    assert!(r["tokens"].as_u64().unwrap() > 7000);
}

#[test]
fn aging_shows_eligible_elisions_and_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(5, 3000));
    let args = [
        "plan",
        input.to_str().unwrap(),
        "--counter",
        "heuristic",
        "--budget",
        "1000000",
        "--keep-recent",
        "2",
        "--age-observations",
        // The seed's absolute epoch (an explicit value turns the budget-relative one off).
        "--age-reclaim-min",
        "49152",
    ];
    let out = run(&[&args[..], &["--json"]].concat(), None);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["eligible"].as_array().unwrap().len(), 5);
    assert_eq!(r["reclaimable_pool"], 15_000);
    assert_eq!(
        r["eligible"][0]["stub"],
        "[elided by the harness: 3000-char fs_read result; re-run the call if you need it again]"
    );
    assert_eq!(r["needs_compaction"], false, "15000 chars is below the 49152 epoch");
    let out = run(&args, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("eligible elisions: 5 (reclaimable pool 15000 chars)"),
        "{text}"
    );
    assert!(text.contains("needs compaction:  no"), "{text}");
}

#[test]
fn plan_calls_nothing_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(5, 3000));
    let before = std::fs::read(&input).unwrap();
    let marker = dir.path().join("called");
    let cmd = format!("touch {}", marker.display());
    let out = run(
        &[
            "plan",
            input.to_str().unwrap(),
            "--counter",
            "heuristic",
            "--budget",
            "10000",
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            &cmd,
        ],
        None,
    );
    assert!(out.status.success());
    assert!(!marker.exists());
    assert_eq!(std::fs::read(&input).unwrap(), before);
    assert_eq!(
        run(&["plan", input.to_str().unwrap(), "--trigger-ratio", "0.3"], None)
            .status
            .code(),
        Some(2)
    );
}
