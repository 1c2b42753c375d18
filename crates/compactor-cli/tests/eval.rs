//! `compactor eval`: the sanity bounds rank correctly (an "echo the middle" summarizer
//! above a "say nothing useful" one), the ledger finds its probes and invents nothing,
//! and the JSON form carries the totals.

use crate::support;

use serde_json::{Value, json};
use support::{run, stdout, stdout_json, write_json};

/// An agent run with paths, commands, errors and a user request in the middle, and fat
/// results (so that echoing the capped transcript still shrinks the conversation).
fn session() -> Value {
    let mut m = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Please fix the crash in src/parser.py when the header is empty"}),
    ];
    for i in 0..8 {
        let command = format!("python -m pytest tests/test_parser_{i}.py -x");
        m.push(json!({"role": "assistant", "content": format!("Now checking `parse_header_{i}`."), "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}
        ]}));
        let out = format!(
            "<returncode>1</returncode>\n<output>\nFAILED tests/test_parser_{i}.py::test_empty_{i} - KeyError: 'h{i}'\n{}\n</output>",
            "collected 12 items\n".repeat(300)
        );
        m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": out}));
    }
    for i in 0..3 {
        m.push(json!({"role": "user", "content": format!("Keep going {i}")}));
        m.push(json!({"role": "assistant", "content": format!("Working {i}.")}));
    }
    Value::Array(m)
}

fn eval(path: &str, extra: &[&str]) -> Value {
    let mut args = vec!["eval", path, "--json", "--counter", "heuristic", "--keep-recent", "4"];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", support::stderr(&out));
    stdout_json(&out)
}

#[test]
fn echo_bound_outranks_the_useless_bound_and_the_ledger_invents_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_json(dir.path(), "s.json", &session());
    let path = path.to_str().unwrap();
    let echo = eval(
        path,
        &[
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            "cat",
            "--ledger-max-tokens",
            "0",
        ],
    );
    let useless = eval(
        path,
        &[
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            "echo 'The agent worked on the task.'",
            "--ledger-max-tokens",
            "0",
        ],
    );
    let ledger = eval(path, &["--summarizer", "ledger"]);
    let recall = |v: &Value| v["total"]["recall"].as_f64().unwrap();
    assert_eq!(echo["files"][0]["outcome"], "summary", "{echo}");
    assert_eq!(useless["files"][0]["outcome"], "summary", "{useless}");
    assert!(echo["total"]["probes"].as_u64().unwrap() >= 20, "{echo}");
    assert!(recall(&echo) > 0.9, "{echo}");
    assert_eq!(recall(&useless), 0.0, "{useless}");
    assert!(recall(&echo) > recall(&useless));
    assert_eq!(ledger["summarizer"], "ledger");
    assert_eq!(ledger["files"][0]["outcome"], "ledger", "{ledger}");
    assert!(recall(&ledger) >= 0.9, "{ledger}");
    for v in [&echo, &useless, &ledger] {
        assert_eq!(v["total"]["hallucinations"], 0, "{v}");
        assert!(v["total"]["ratio"].as_f64().unwrap() > 1.0, "{v}");
    }
}

#[test]
fn a_summary_that_invents_a_path_counts_as_a_hallucination_unless_gated() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_json(dir.path(), "s.json", &session());
    let path = path.to_str().unwrap();
    let cmd = "echo 'The agent edited src/invented_module.py and called made_up_helper.'";
    let raw = eval(
        path,
        &[
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            cmd,
            "--ledger-max-tokens",
            "0",
        ],
    );
    assert_eq!(raw["total"]["hallucinations"], 2, "{raw}");
    // With the ledger (the CLI default) the grounding gate flags both.
    let gated = eval(path, &["--summarizer", "exec", "--summarizer-cmd", cmd]);
    assert_eq!(gated["total"]["hallucinations"], 0, "{gated}");
    assert_eq!(gated["total"]["flagged"], 2, "{gated}");
    assert!(gated["total"]["recall"].as_f64().unwrap() > raw["total"]["recall"].as_f64().unwrap());
}

#[test]
fn the_table_names_the_summarizer_and_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_json(dir.path(), "s.json", &session());
    let out = run(
        &[
            "eval",
            path.to_str().unwrap(),
            "--summarizer",
            "ledger",
            "--counter",
            "heuristic",
        ],
        None,
    );
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("summarizer: ledger\n"), "{text}");
    assert!(text.contains("s.json") && text.contains("TOTAL (1 files)"), "{text}");
}

/// Beside raw recall, the eval reports the recall of the path/command/error probes
/// that fit the ledger's cap: at a cap too small for the whole middle, raw recall falls
/// but every probe of the newest facts that fit is found (the ledger's goal), and with
/// the cap not binding every probe fits.
#[test]
fn the_recall_of_the_probes_that_fit_the_cap_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_json(dir.path(), "s.json", &session());
    let path = path.to_str().unwrap();
    let small = eval(path, &["--summarizer", "ledger", "--ledger-max-tokens", "500"]);
    let large = eval(path, &["--summarizer", "ledger", "--ledger-max-tokens", "16000"]);
    let total = |v: &Value, k: &str| v["total"][k].as_f64().unwrap();
    assert!(total(&small, "fit_probes") >= 1.0, "{small}");
    assert!(
        total(&small, "fit_probes") < total(&large, "fit_probes"),
        "a small cap fits fewer probes: {small}"
    );
    assert_eq!(total(&small, "fit_recall"), 1.0, "{small}");
    assert!(total(&small, "recall") < total(&large, "recall"), "{small}");
    assert_eq!(total(&large, "fit_recall"), 1.0, "{large}");
    // The summary's identifiers, all grounded, are listed (none) for inspection.
    assert_eq!(small["files"][0]["hallucinated"], json!([]), "{small}");
    // Without the ledger nothing can fit its cap.
    let off = eval(
        path,
        &[
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            "cat",
            "--ledger-max-tokens",
            "0",
        ],
    );
    assert_eq!(off["total"]["fit_probes"], 0, "{off}");
    assert!(off["total"]["fit_recall"].is_null(), "{off}");
}

#[test]
fn aging_does_not_turn_the_scored_pass_into_an_elision_epoch() {
    // Results fat enough for a whole epoch (the default budget's 49k chars) and a
    // conversation far under the target: with aging on the pass would stub them and
    // write no summary, so there would be nothing to score.
    let mut m = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Please fix the crash in src/parser.py"}),
    ];
    for i in 0..8 {
        m.push(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "bash",
             "arguments": json!({"command": format!("cat src/mod_{i}.py")}).to_string()}}
        ]}));
        m.push(
            json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": format!("line {i}\n").repeat(1_500)}),
        );
    }
    m.push(json!({"role": "user", "content": "Keep going"}));
    m.push(json!({"role": "assistant", "content": "Working."}));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fat.json");
    std::fs::write(&path, Value::Array(m).to_string()).unwrap();
    let path = path.to_str().unwrap();
    let scored = eval(path, &["--summarizer", "ledger"]);
    assert_eq!(scored["files"][0]["outcome"], "ledger", "{scored}");
    assert!(scored["total"]["recall"].as_f64().unwrap() > 0.9, "{scored}");
    // Asked for, aging is on: the epoch, and nothing to score.
    let aged = eval(path, &["--summarizer", "ledger", "--age-observations=true"]);
    assert_eq!(aged["files"][0]["outcome"], "aged", "{aged}");
}
