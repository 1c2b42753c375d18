//! `compactor convert` as a user runs it: the real binary on real files and stdin.

use crate::support;

use serde_json::Value;
use support::{run, stderr};

/// One real mini-swe-agent trajectory, when the shared data is there.
fn trajectory() -> Option<std::path::PathBuf> {
    support::trajectory("mini-swe-agent/deepseek_chat_dev__pydicom__pydicom-901.traj.json")
}

const CHAT: &str = r#"{"model": "gpt-4o", "messages": [
  {"role": "system", "content": "Be careful."},
  {"role": "user", "content": "List the files."},
  {"role": "assistant", "content": null, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "a.rs\nb.rs"},
  {"role": "assistant", "content": "Two files."}
]}"#;

#[test]
fn a_real_trajectory_converts_to_anthropic_in_a_file_and_to_openai_on_stdout() {
    let Some(path) = trajectory() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.anthropic.json");
    let output = run(
        &[
            "convert",
            path.to_str().unwrap(),
            "--to",
            "anthropic",
            "-o",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    let anthropic: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(anthropic["system"].as_str().unwrap().contains("helpful assistant"));
    let turns = anthropic["messages"].as_array().unwrap();
    assert_eq!(turns[0]["role"], "user");
    assert_eq!(turns[1]["content"][1]["type"], "tool_use");
    assert_eq!(turns[2]["content"][0]["type"], "tool_result");
    // Only the output file is left in the directory: the temporary file was renamed.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);

    // The converted file converts back, detected as Anthropic.
    let output = run(&["convert", out.to_str().unwrap(), "--to", "openai"], None);
    assert!(output.status.success(), "{}", stderr(&output));
    let openai: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(openai[0]["role"], "system");
    assert_eq!(openai[2]["tool_calls"][0]["type"], "function");
    assert_eq!(openai[3]["role"], "tool");
}

#[test]
fn stdin_converts_and_the_same_format_gives_the_input_back() {
    let output = run(&["convert", "-", "--to", "anthropic"], Some(CHAT.as_bytes()));
    assert!(output.status.success(), "{}", stderr(&output));
    let anthropic: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        anthropic,
        serde_json::json!({
            "model": "gpt-4o",
            "system": "Be careful.",
            "messages": [
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "a.rs\nb.rs"}]},
                {"role": "assistant", "content": "Two files."}
            ]
        })
    );
    let same = run(
        &["convert", "-", "--to", "openai", "--from", "openai"],
        Some(CHAT.as_bytes()),
    );
    assert!(same.status.success(), "{}", stderr(&same));
    let back: Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(CHAT).unwrap());
}

#[test]
fn a_malformed_file_fails_with_exit_1_naming_the_file_and_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"[{"role": "user", "content": "hi"}, {"content": "no role"}]"#).unwrap();
    let output = run(&["convert", bad.to_str().unwrap(), "--to", "anthropic"], None);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("bad.json: message 1: the message has no role"), "{err}");
    assert!(output.stdout.is_empty());

    std::fs::write(&bad, "[{\"role\": \"user\",\n  \"content\": }]").unwrap();
    let output = run(&["convert", bad.to_str().unwrap(), "--to", "openai"], None);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.contains("bad.json: invalid JSON at line 2, column 14"), "{err}");

    let output = run(&["convert", "-", "--to", "openai"], Some(b"\xff\xfe"));
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("<stdin>: not valid UTF-8"),
        "{}",
        stderr(&output)
    );

    let missing = dir.path().join("missing.json");
    let output = run(&["convert", missing.to_str().unwrap(), "--to", "openai"], None);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("missing.json"));
}

#[test]
fn a_failed_conversion_leaves_no_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let output = run(
        &["convert", "-", "--to", "openai", "-o", out.to_str().unwrap()],
        Some(b"{}"),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(!out.exists());
}

#[test]
fn bad_flags_are_usage_errors_and_help_works() {
    let output = run(&["convert", "-", "--to", "gemini"], Some(CHAT.as_bytes()));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("gemini"));
    let output = run(&["convert", "-"], Some(CHAT.as_bytes()));
    assert_eq!(output.status.code(), Some(2), "--to is required");
    let output = run(&["convert", "--help"], None);
    assert_eq!(output.status.code(), Some(0));
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--to") && help.contains("mini-swe-agent"), "{help}");
}
