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

/// `--instructions` on `n` generated chat sessions at `budgets`, with `extra` flags.
fn instructions(n: &str, budgets: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "eval",
        "--instructions",
        "--chat-sessions",
        n,
        "--budgets",
        budgets,
        "--json",
        "--counter",
        "heuristic",
    ];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", support::stderr(&out));
    stdout_json(&out)
}

/// (survived after the first pass, after the last, planted) of `kind` in `totals`.
fn kind(totals: &Value, kind: &str) -> (u64, u64, u64) {
    let row = totals["by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == kind)
        .unwrap_or_else(|| panic!("{kind} in {totals}"));
    (
        row[2].as_u64().unwrap(),
        row[3].as_u64().unwrap(),
        row[1].as_u64().unwrap(),
    )
}

const KINDS: [&str; 6] = ["rule", "constraint", "fact", "task", "preference", "reminder"];

/// The ledger keeps every planted instruction of the generated chats at 20% and 30% of
/// their size through five passes, every result within its budget, the replaced value
/// never presented as current; the same run twice gives the same report.
#[test]
fn the_ledger_keeps_every_planted_instruction_of_a_chat_through_five_passes() {
    let report = instructions("3", "20%,30%", &["--summarizer", "ledger"]);
    assert_eq!(report["passes"], 5);
    let budgets = report["budgets"].as_array().unwrap();
    assert_eq!(budgets.len(), 2, "{report}");
    for totals in budgets {
        assert_eq!(totals["set"], "chat");
        assert_eq!(totals["conversations"], 3);
        for k in KINDS {
            let (one, five, planted) = kind(totals, k);
            assert!(planted >= 3, "{k}: {totals}");
            assert_eq!((one, five), (planted, planted), "{k} at {}: {totals}", totals["budget"]);
        }
        assert_eq!(totals["passes"], 15);
        assert_eq!(totals["passes_without_new"], 0, "{totals}");
        assert_eq!(totals["within"], 15, "{totals}");
        assert_eq!(totals["needless"], 0, "{totals}");
        assert_eq!(totals["superseded_as_current"], json!([0, 0]), "{totals}");
        assert_eq!(totals["duplicates"], json!([0, 0]), "{totals}");
    }
    // Each conversation's budget is its share of the planted session, every pass under it.
    for c in report["conversations"].as_array().unwrap() {
        let budget = c["budget"].as_u64().unwrap();
        let share = if c["label"] == "20%" { 20 } else { 30 };
        assert_eq!(budget, (c["tokens"].as_u64().unwrap() * share / 100).max(256), "{c}");
        for p in c["passes"].as_array().unwrap() {
            assert!(p["tokens_after"].as_u64().unwrap() <= budget, "{c}");
            assert!(p["new_messages"].as_u64().unwrap() > 0, "{c}");
        }
        assert_eq!(c["lost"], json!([]), "{c}");
    }
    assert_eq!(report, instructions("3", "20%,30%", &["--summarizer", "ledger"]));
}

/// The measure can fail: with no summarizer a pass is the hard trim, which drops the
/// user's earlier lines, and survival falls below 100%; a summarizer that drops every
/// line with `Rule:` (the ledger off) loses the rules and keeps the rest.
#[test]
fn a_summarizer_that_drops_user_lines_scores_below_100_percent() {
    let none = instructions("2", "20%", &["--summarizer", "none"]);
    let totals = &none["budgets"][0];
    let (one, five, planted) = kind(totals, "rule");
    assert!(one < planted && five < planted, "{totals}");
    for k in ["fact", "task", "preference", "reminder"] {
        assert_eq!(kind(totals, k).0, 0, "{k}: {totals}");
    }
    assert!(!none["conversations"][0]["lost"].as_array().unwrap().is_empty());

    // One pass (an echo of the transcript is no summary to carry through five: it
    // nests and outgrows its output budget).
    let echo = |cmd: &str| {
        instructions(
            "2",
            "default",
            &[
                "--summarizer",
                "exec",
                "--summarizer-cmd",
                cmd,
                "--ledger-max-tokens",
                "0",
                "--passes",
                "1",
            ],
        )
    };
    let whole = echo("cat");
    let dropping = echo("grep -v 'Rule:'");
    for k in ["rule", "fact", "task", "preference"] {
        let (one, _, planted) = kind(&whole["budgets"][0], k);
        assert_eq!(one, planted, "{k}: {whole}");
    }
    let totals = &dropping["budgets"][0];
    let (one, _, planted) = kind(totals, "rule");
    assert_eq!((one, planted), (2, 4), "the two `Rule:` lines are gone: {totals}");
    for k in ["fact", "task", "preference"] {
        let (one, _, planted) = kind(totals, k);
        assert_eq!(one, planted, "{k}: {totals}");
    }
}

/// The table names the set, the budgets, both pass counts and the budget check; budgets
/// that are not shares, counts or `default`, and `--chat-sessions` without
/// `--instructions`, are usage errors.
#[test]
fn the_instruction_table_and_its_usage_errors() {
    let out = run(
        &[
            "eval",
            "--instructions",
            "--chat-sessions",
            "1",
            "--budgets",
            "25%,4000",
            "--passes",
            "3",
            "--summarizer",
            "ledger",
            "--counter",
            "heuristic",
        ],
        None,
    );
    assert!(out.status.success(), "{}", support::stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("summarizer: ledger; 3 passes each"), "{text}");
    for needle in ["chat", "25%", "4000", "reminder", "as-current", "needless"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert!(
        text.lines().any(|l| l.starts_with("chat") && l.contains(" 3 ")),
        "{text}"
    );
    for bad in [
        &["eval", "--instructions", "--chat-sessions", "1", "--budgets", "0%"][..],
        &["eval", "--instructions", "--chat-sessions", "1", "--budgets", "lots"],
        &["eval", "--chat-sessions", "1"],
        &["eval", "--instructions"],
    ] {
        let out = run(bad, None);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", support::stderr(&out));
    }
}

/// A tool-calling conversation (OpenAI tool calls) and a results file of runs (tau-bench's
/// shape) are planted without parting a call from its result, and scored run by run.
#[test]
fn a_results_file_is_scored_run_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<Value> = (0..2).map(|_| json!({"task_id": 1, "traj": session()})).collect();
    let path = write_json(dir.path(), "runs.json", &Value::Array(runs));
    let out = run(
        &[
            "eval",
            "--instructions",
            path.to_str().unwrap(),
            "--budgets",
            "30%",
            "--summarizer",
            "ledger",
            "--counter",
            "heuristic",
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", support::stderr(&out));
    let report = stdout_json(&out);
    let names: Vec<&str> = report["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["conversation"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{report}");
    assert!(
        names[0].ends_with("runs.json#0") && names[1].ends_with("runs.json#1"),
        "{names:?}"
    );
    let totals = &report["budgets"][0];
    assert_eq!(totals["needless"], 0, "{totals}");
    assert_eq!(kind(totals, "reminder").2, 2, "{totals}");
}

/// The shared trajectories (skipped with a notice when absent): the runs of the
/// mini-swe-agent set and the first tau-bench conversations are planted and scored; the
/// ledger keeps every planted instruction of the mini-swe-agent runs after one pass at
/// 20%, and no pass there is exhausted or over its budget.
#[test]
fn real_trajectories_are_planted_and_scored() {
    let Some(tau) = support::trajectory("tau-bench/gpt-4o-airline.json") else {
        return;
    };
    let files: Vec<String> = support::mini_swe_agent_files()
        .into_iter()
        .take(8)
        .map(|p| p.display().to_string())
        .collect();
    if files.is_empty() {
        eprintln!("NOTICE: skipping: no mini-swe-agent trajectories (set LLM_COMPACTOR_DATA)");
        return;
    }
    let mut args = vec![
        "eval",
        "--instructions",
        "--budgets",
        "20%",
        "--summarizer",
        "ledger",
        "--json",
    ];
    args.extend(files.iter().map(String::as_str));
    let tau = tau.display().to_string();
    args.push(&tau);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", support::stderr(&out));
    let report = stdout_json(&out);
    let budgets = report["budgets"].as_array().unwrap();
    let mini = budgets
        .iter()
        .find(|t| t["set"] == "mini-swe-agent")
        .expect("mini-swe-agent");
    let tau = budgets.iter().find(|t| t["set"] == "tau-bench").expect("tau-bench");
    assert_eq!(tau["conversations"], 200, "{tau}");
    for k in KINDS {
        let (one, _, planted) = kind(mini, k);
        assert_eq!(one, planted, "{k}: {mini}");
    }
    assert_eq!(mini["within"], mini["passes"], "{mini}");
    assert_eq!(mini["exhausted"], 0, "{mini}");
}
