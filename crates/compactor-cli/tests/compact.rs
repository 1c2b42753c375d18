//! `compactor compact` on the real binary.

use crate::support;

use std::process::{Command, Stdio};

use serde_json::Value;
use support::{conversation, mini_swe_agent_files, run, stdout_json, write_json};

const BASE: &[&str] = &["--counter", "heuristic", "--budget", "2000", "--keep-recent", "3"];

#[test]
fn help_lists_the_options() {
    let out = run(&["compact", "--help"], None);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--budget",
        "--target",
        "--keep-recent",
        "--age-observations",
        "--summarizer-cmd",
        "--focus",
        "--json",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}

#[test]
fn without_a_summarizer_it_hard_trims_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    // `auto` would pick the model-free ledger here: `none` is no summarizer at all.
    let mut args = vec!["compact", input.to_str().unwrap(), "--summarizer", "none"];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let messages = stdout_json(&out);
    let messages = messages.as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(messages.len() < 24);
    assert_eq!(messages.last().unwrap()["content"], "Continue.");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("HARD TRIM"), "{stderr}");
}

#[test]
fn json_result_has_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let mut args = vec!["compact", input.to_str().unwrap(), "--json", "--summarizer", "none"];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success());
    let r = stdout_json(&out);
    for key in [
        "messages",
        "summary",
        "dropped",
        "cut_index",
        "tokens_before",
        "tokens_after",
        "fallback",
        "exhausted",
        "elisions",
        "usage",
        "attempts",
        "repairs",
        "truncations",
        "receipt",
    ] {
        assert!(r.get(key).is_some(), "{key}");
    }
    assert_eq!(r["repairs"], serde_json::json!([]));
    assert_eq!(r["receipt"]["tokens_before"], r["tokens_before"]);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    assert_eq!(r["fallback"], true);
    assert!(r["messages"].is_array());
    assert!(r["summary"].as_str().unwrap().contains("dropped unsummarized"));
    // The notice sits right after the system prompt.
    assert_eq!(r["messages"][1]["content"], r["summary"]);
}

/// A broken input is repaired before the pass, and the user is told what was removed or
/// added: the JSON result lists the repairs, and the report names each one (it said
/// "summarized 0 messages" and nothing else, for a conversation that lost a message).
#[test]
fn repairs_are_reported_in_the_json_and_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(
        dir.path(),
        "broken.json",
        &serde_json::json!([
            {"role": "user", "content": "a"},
            {"role": "tool", "tool_call_id": "ghost", "content": "an orphan"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "asked", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ]},
            {"role": "user", "content": "go on"},
        ]),
    );
    let out = run(
        &[
            "compact",
            input.to_str().unwrap(),
            "--json",
            "--summarizer",
            "none",
            "--counter",
            "heuristic",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = stdout_json(&out);
    let kinds: Vec<&str> = r["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["dropped-orphan", "synthetic-answer"]);
    assert_eq!(r["repairs"][0]["index"], 1);
    assert_eq!(r["repairs"][1]["tool_call_id"], "asked");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("repaired the conversation; nothing to compact"),
        "{stderr}"
    );
    assert!(!stderr.contains("summarized 0 messages"), "{stderr}");
    assert!(stderr.contains("the input was repaired first (2 changes)"), "{stderr}");
    assert!(
        stderr.contains("dropped #1: a tool result that answers no call before it (tool_call_id ghost)"),
        "{stderr}"
    );
    assert!(stderr.contains("answered call asked after #2"), "{stderr}");
}

#[test]
fn exec_summarizer_from_stdin_to_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("out.json");
    let mut args = vec![
        "compact",
        "-",
        "-o",
        out_path.to_str().unwrap(),
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        "cat >/dev/null; echo \"## Goals\"; echo \"$COMPACTOR_MAX_TOKENS\"",
        "--focus",
        "tests",
    ];
    args.extend(BASE);
    let out = run(&args, Some(conversation(10, 400).to_string().as_bytes()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let summary = written[1]["content"].as_str().unwrap();
    // The model's text, then the ledger the CLI appends to every summary.
    assert!(summary.contains("\n## Goals\n2048\n\n## Ledger"), "{summary}");
    // The human report: what happened, a bar before and after, the summary, the time.
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("summarized"), "{report}");
    assert!(
        report.contains("  before [") && report.contains("  after  ["),
        "{report}"
    );
    assert!(report.contains("  | ## Goals\n  | 2048\n"), "{report}");
    assert!(report.contains("compactor: took "), "{report}");
}

#[test]
fn invalid_configuration_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(2, 10));
    let path = input.to_str().unwrap();
    for bad in [
        vec!["compact", path, "--target-ratio", "0.9"],
        vec!["compact", path, "--budget", "0"],
        vec!["compact", path, "--target", "0"],
        vec!["compact", path, "--summarizer", "exec"],
        vec![
            "compact",
            path,
            "--summarizer-timeout",
            "-1",
            "--summarizer",
            "exec",
            "--summarizer-cmd",
            "cat",
        ],
        vec!["compact", path, "--counter", "gpt2"],
    ] {
        let out = run(&bad, None);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A missing file is a runtime failure.
    assert_eq!(
        run(&["compact", "/nonexistent/x.json", "--counter", "heuristic"], None)
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn a_real_trajectory_keeps_its_format() {
    let Some(file) = mini_swe_agent_files().into_iter().next() else {
        return;
    };
    let args = [
        "compact",
        file.to_str().unwrap(),
        "--counter",
        "heuristic",
        "--budget",
        "8000",
    ];
    let out = run(&[&args[..], &["--json"]].concat(), None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = stdout_json(&out);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    let out = run(&args, None);
    let doc = stdout_json(&out);
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["info"], original["info"], "the trajectory envelope survives");
    assert!(doc["messages"].as_array().unwrap().len() < original["messages"].as_array().unwrap().len());
}

#[test]
fn the_default_counter_is_o200k() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let out = run(
        &[
            "compact",
            input.to_str().unwrap(),
            "--budget",
            "2000",
            "--keep-recent",
            "3",
            "--json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(o200k)"));
    let r = stdout_json(&out);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
}

#[test]
fn ctrl_c_cancels_the_summarizer_and_the_pass_still_ends_in_a_trim() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("started");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let input = write_json(dir.path(), "conv.json", &conversation(10, 400));
    // The summarizer says it has started (through the fifo), then hangs.
    let cmd = format!("echo started > '{}'; sleep 60", fifo.display());
    let mut args = vec![
        "compact",
        input.to_str().unwrap(),
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        &cmd,
    ];
    args.extend(BASE);
    let child = support::bin()
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the fifo for reading blocks until the summarizer opens it for writing.
    let started = std::fs::read_to_string(&fifo).unwrap();
    assert_eq!(started.trim(), "started");
    let interrupted = std::time::Instant::now();
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stderr);
    // The result is written, and the exit status says a signal cut the pass short
    // (issue 16 item 1: 128 + SIGINT; this test used to pin exit 0).
    assert_eq!(out.status.code(), Some(130), "{report}");
    assert!(
        report.contains("interrupted") && report.contains("HARD TRIM"),
        "{report}"
    );
    assert!(interrupted.elapsed() < std::time::Duration::from_secs(10), "{report}");
    let compacted: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(compacted.as_array().unwrap().len() < 23);
}

#[test]
fn auto_without_keys_or_model_writes_the_ledger_summary() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let mut args = vec!["compact", input.to_str().unwrap(), "--json"];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("summarizer auto: ledger"), "{stderr}");
    let r = stdout_json(&out);
    assert_eq!(r["fallback"], false);
    let summary = r["summary"].as_str().unwrap();
    assert!(
        summary.contains("### Last user request (verbatim)\n- Fix the bug."),
        "{summary}"
    );
    assert!(
        summary.contains("f0.rs (read)") || summary.contains("older omitted"),
        "{summary}"
    );
    assert_eq!(r["attempts"][0]["kind"], "ledger");
    assert_eq!(r["attempts"][0]["outcome"], "accepted");
}

/// Issue 16 item 4: the report names the messages actually replaced, not `0..=N` when
/// message 0 (the system prompt) is kept.
#[test]
fn the_report_names_the_range_actually_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let mut args = vec![
        "compact",
        input.to_str().unwrap(),
        "--json",
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        "cat >/dev/null; printf '## Goals\\nfix it\\n## Decisions\\nnone\\n## Files and commands\\nnone\\n## Unresolved\\nnone'",
    ];
    args.extend(BASE);
    let out = run(&args, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result = stdout_json(&out);
    assert_eq!(result["fallback"], false, "{stderr}");
    let cut = result["cut_index"].as_i64().unwrap();
    assert!(cut > 0);
    assert!(
        stderr.contains(&format!("summary inserted for messages 1..={cut}:")),
        "{stderr}"
    );
    assert!(!stderr.contains("messages 0..="), "{stderr}");
}

/// The README's example (`scripts/first-run.sh`): the report lists only the stubs still
/// in the output, and says how many the summary then replaced (it listed stubs of
/// messages the summary had replaced, which the agent never reads).
#[test]
fn the_report_lists_only_the_stubs_the_output_keeps() {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/long-agent-session.json");
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.json");
    let out = run(
        &[
            "compact",
            example.to_str().unwrap(),
            "--budget",
            "16000",
            "--summarizer",
            "ledger",
            "-o",
            output.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("compactor: 14 tool results stubbed (14 of them then replaced by the summary)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("elided #"),
        "no stub of a replaced message is listed:\n{stderr}"
    );
    let compacted = std::fs::read_to_string(&output).unwrap();
    assert!(
        !compacted.contains("[elided by the harness"),
        "and none is in the output"
    );
}
