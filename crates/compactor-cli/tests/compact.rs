//! `compactor compact` on the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactor"));
    command
        // Hermetic: `--summarizer auto` (the default) must resolve to `none` here.
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("LLM_COMPACTOR_MODEL_DIR", "/nonexistent/llm-compactor-models");
    command
}

/// An OpenAI conversation: system, task, `rounds` tool rounds of `size` chars, a last user turn.
fn conversation(rounds: usize, size: usize) -> Value {
    let mut m = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the bug."}),
    ];
    for i in 0..rounds {
        m.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "fs_read", "arguments": format!("{{\"path\":\"f{i}.rs\"}}")}}
        ]}));
        m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "r".repeat(size)}));
    }
    m.push(json!({"role": "user", "content": "Continue."}));
    Value::Array(m)
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string(value).unwrap()).unwrap();
    path
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().unwrap()
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

const BASE: &[&str] = &["--counter", "heuristic", "--budget", "2000", "--keep-recent", "3"];

#[test]
fn help_lists_the_options() {
    let out = run(&["compact", "--help"]);
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
    let input = write(dir.path(), "c.json", &conversation(10, 400));
    let mut args = vec!["compact", input.to_str().unwrap()];
    args.extend(BASE);
    let out = run(&args);
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
    let input = write(dir.path(), "c.json", &conversation(10, 400));
    let mut args = vec!["compact", input.to_str().unwrap(), "--json"];
    args.extend(BASE);
    let out = run(&args);
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
    ] {
        assert!(r.get(key).is_some(), "{key}");
    }
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    assert_eq!(r["fallback"], true);
    assert!(r["messages"].is_array());
    assert!(r["summary"].as_str().unwrap().contains("dropped unsummarized"));
    // The notice sits right after the system prompt.
    assert_eq!(r["messages"][1]["content"], r["summary"]);
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
    let mut child = bin()
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&conversation(10, 400)).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    let summary = written[1]["content"].as_str().unwrap();
    assert!(summary.ends_with("## Goals\n2048"), "{summary}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("summarized"));
}

#[test]
fn invalid_configuration_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "c.json", &conversation(2, 10));
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
        let out = run(&bad);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A missing file is a runtime failure.
    assert_eq!(
        run(&["compact", "/nonexistent/x.json", "--counter", "heuristic"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn a_real_trajectory_keeps_its_format() {
    let data = std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")));
    let dir = data.join("trajectories/mini-swe-agent");
    let Some(file) = std::fs::read_dir(&dir).ok().and_then(|d| {
        let mut files: Vec<PathBuf> = d
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
            .collect();
        files.sort();
        files.into_iter().next()
    }) else {
        eprintln!(
            "NOTICE: skipping: no trajectories at {} (set LLM_COMPACTOR_DATA)",
            dir.display()
        );
        return;
    };
    let out = run(&[
        "compact",
        file.to_str().unwrap(),
        "--counter",
        "heuristic",
        "--budget",
        "8000",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = stdout_json(&out);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
    let out = run(&[
        "compact",
        file.to_str().unwrap(),
        "--counter",
        "heuristic",
        "--budget",
        "8000",
    ]);
    let doc = stdout_json(&out);
    let original: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(doc["info"], original["info"], "the trajectory envelope survives");
    assert!(doc["messages"].as_array().unwrap().len() < original["messages"].as_array().unwrap().len());
}

#[test]
fn the_default_counter_is_o200k() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "c.json", &conversation(10, 400));
    let out = run(&[
        "compact",
        input.to_str().unwrap(),
        "--budget",
        "2000",
        "--keep-recent",
        "3",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(o200k)"));
    let r = stdout_json(&out);
    assert!(r["tokens_after"].as_u64() < r["tokens_before"].as_u64());
}
