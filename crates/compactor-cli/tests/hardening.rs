//! The CLI's on-disk and I/O hardening (issue 10), on the real binary: atomic
//! `session import`, no silent drops in `convert`, stale temp files swept, `-o` never
//! widens a file's mode, numeric flags range-checked, every write fallible (a full
//! disk is exit 1, a closed pipe a quiet exit), terminal escapes in echoed text escaped.

use crate::support;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use support::{bin, conversation, run, stderr, write_json};

const BASE: &[&str] = &["--counter", "heuristic", "--budget", "2000", "--keep-recent", "3"];

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `compactor ARGS` under `ulimit -f BLOCKS` (512-byte blocks): a write past the
/// limit kills it with SIGXFSZ, like a disk filling up midway.
fn run_file_size_limited(args: &[&str], blocks: u64) -> std::process::Output {
    let exe = env!("CARGO_BIN_EXE_compactor");
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit -f {blocks}; exec \"$0\" \"$@\""))
        .arg(exe)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    command.output().unwrap()
}

#[test]
fn an_import_cut_short_leaves_no_transcript_and_a_retry_works() {
    let dir = tempfile::tempdir().unwrap();
    // ~400 KB of messages: the limit (64 KB) is hit midway through the import.
    let input = write_json(dir.path(), "c.json", &conversation(100, 4000));
    let target = dir.path().join("run.jsonl");
    let args = [
        "session",
        "import",
        input.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ];
    let out = run_file_size_limited(&args, 128);
    assert!(!out.status.success(), "the import must be cut short: {}", stderr(&out));
    assert!(
        !target.exists(),
        "a cut-short import must not leave a transcript that replays a prefix"
    );
    // The retry works, and sweeps the dead import's temp file.
    let out = run(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&target), 0o600);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "only the input and the transcript: {names:?}");
    let replay = run(&["session", "replay", target.to_str().unwrap(), "--json"], None);
    assert!(replay.status.success(), "{}", stderr(&replay));
    let replayed: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(replayed["messages"].as_array().unwrap().len(), 203);
}

const LEGACY: &str = r#"[
  {"role": "system", "content": "Be careful."},
  {"role": "user", "content": "Weather?"},
  {"role": "assistant", "content": null, "function_call": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
  {"role": "function", "name": "weather", "content": "rain"},
  {"role": "assistant", "content": "It rains."},
  {"role": "exit", "content": "submitted"}
]"#;

#[test]
fn convert_never_drops_a_message_silently() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("legacy.json");
    std::fs::write(&input, LEGACY).unwrap();
    let path = input.to_str().unwrap();

    let out = run(&["convert", path, "--to", "anthropic"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let turns = doc["messages"].as_array().unwrap();
    let text = doc.to_string();
    // The function call became a tool_use, and its answer the matching tool_result.
    let call = &turns[1]["content"][0];
    assert_eq!(call["type"], "tool_use", "{text}");
    assert_eq!(call["name"], "weather");
    assert_eq!(call["input"], json!({"city": "Oslo"}));
    let result = &turns[2]["content"][0];
    assert_eq!(result["type"], "tool_result", "{text}");
    assert_eq!(result["tool_use_id"], call["id"]);
    // The exit message is a labelled user turn.
    assert!(text.contains("[message of role \\\"exit\\\"]\\nsubmitted"), "{text}");

    let out = run(&["convert", path, "--to", "mini-swe-agent"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let messages = doc["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 6, "{doc}");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], messages[2]["tool_calls"][0]["id"]);

    // --lossy drops them, with a warning per message.
    let out = run(&["convert", path, "--to", "anthropic", "--lossy"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let warnings = stderr(&out);
    assert!(warnings.contains("message 3: dropped"), "{warnings}");
    assert!(warnings.contains("message 5: dropped"), "{warnings}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("submitted"));
}

#[test]
fn stale_output_temp_files_are_swept_and_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(4, 100));
    let output = dir.path().join("out.json");
    let dead = dir.path().join(".out.json.tmp-4294967");
    let live = dir.path().join(format!(".out.json.tmp-{}", std::process::id()));
    std::fs::write(&dead, "partial").unwrap();
    std::fs::write(&live, "partial").unwrap();
    let mut args = vec!["compact", input.to_str().unwrap(), "-o", output.to_str().unwrap()];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!dead.exists(), "the dead process's temp file is swept");
    assert!(live.exists(), "a live process's temp file is kept");
    assert!(output.exists());
}

#[test]
fn dash_o_keeps_a_private_file_private() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(4, 100));
    let path = input.to_str().unwrap();
    set_mode(&input, 0o600);

    // In place: the mode of the file it replaces.
    let mut args = vec!["compact", path, "-o", path];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&input), 0o600, "compact F -o F");
    let out = run(&["convert", path, "--to", "openai", "-o", path], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&input), 0o600, "convert F -o F");

    // A new file from a private input stays private; from a public one it is 0644.
    let fresh = dir.path().join("fresh.json");
    let out = run(
        &["convert", path, "--to", "anthropic", "-o", fresh.to_str().unwrap()],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&fresh), 0o600);
    set_mode(&input, 0o644);
    let public = dir.path().join("public.json");
    let out = run(
        &["convert", path, "--to", "anthropic", "-o", public.to_str().unwrap()],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&public), 0o644);
    // An existing group-readable target keeps its 0640.
    set_mode(&public, 0o640);
    let out = run(
        &["convert", path, "--to", "anthropic", "-o", public.to_str().unwrap()],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&public), 0o640);
}

#[test]
fn numeric_flags_out_of_range_are_usage_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(2, 10));
    let path = input.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "compact",
                path,
                "--summarizer",
                "exec",
                "--summarizer-cmd",
                "cat",
                "--summarizer-timeout",
                "1e20",
            ],
            "--summarizer-timeout",
        ),
        (
            vec!["compact", path, "--summarizer-timeout", "NaN"],
            "--summarizer-timeout",
        ),
        (vec!["compact", path, "--trigger-ratio", "NaN"], "--trigger-ratio"),
        (vec!["compact", path, "--trigger-ratio", "1.5"], "--trigger-ratio"),
        (vec!["compact", path, "--target-ratio", "inf"], "--target-ratio"),
        (vec!["compact", path, "--budget", "0"], "--budget"),
        (vec!["compact", path, "--budget", "99999999999999999999"], "--budget"),
        (vec!["plan", path, "--target", "0"], "--target"),
        (vec!["compact", path, "--age-min-chars", "0"], "--age-min-chars"),
        (vec!["compact", path, "--age-reclaim-min", "0"], "--age-reclaim-min"),
        (vec!["compact", path, "--tool-result-cap", "0"], "--tool-result-cap"),
        (vec!["compact", path, "--max-attempts", "0"], "--max-attempts"),
        (
            vec!["compact", path, "--summary-max-tokens", "0"],
            "--summary-max-tokens",
        ),
        (vec!["compact", path, "--keep-recent", "100000000000"], "--keep-recent"),
        (vec!["simulate", path, "--window", "0"], "--window"),
    ];
    for (args, flag) in cases {
        let out = run(&args, None);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: the error names the flag: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

fn run_to_dev_full(args: &[&str]) -> std::process::Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    bin()
        .args(args)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_full_stdout_is_exit_1_with_a_message_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(4, 100));
    let path = input.to_str().unwrap();
    let models = dir.path().join("models");
    let mut compact = vec!["compact", path];
    compact.extend(BASE);
    for args in [
        vec!["model", "path", "--dir", models.to_str().unwrap()],
        vec!["simulate", path, "--window", "2000"],
        vec!["simulate", path, "--window", "2000", "--json"],
        compact,
        vec!["convert", path, "--to", "anthropic"],
        vec!["count", path],
        vec!["--help"],
    ] {
        let out = run_to_dev_full(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args[0] != "--help" {
            assert!(err.contains("cannot write to <stdout>"), "{args:?}: {err}");
        }
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    // Megabytes of output: far more than a pipe holds, so the writer meets the closed end.
    let input = write_json(dir.path(), "c.json", &conversation(200, 10_000));
    let mut compact = vec![
        "compact",
        input.to_str().unwrap(),
        "--budget",
        "10000000",
        "--summarizer",
        "none",
    ];
    compact.extend(&BASE[..2]);
    for args in [vec!["convert", input.to_str().unwrap(), "--to", "anthropic"], compact] {
        let mut child = bin()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout); // `| head -c1`
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), None, "{args:?}: {err}");
        assert_eq!(status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet, but said: {err}");
    }
}

#[test]
fn terminal_escapes_in_a_summary_are_escaped_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(dir.path(), "c.json", &conversation(10, 400));
    let output = dir.path().join("out.json");
    let mut args = vec![
        "compact",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        r"cat >/dev/null; printf '## Goals\n\033]0;pwned\007\033[2Jdone\n'",
    ];
    args.extend(BASE);
    let out = run(&args, None);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = stderr(&out);
    assert!(!report.contains('\u{1b}') && !report.contains('\u{7}'), "{report:?}");
    assert!(report.contains(r"\x1b]0;pwned\x07\x1b[2Jdone"), "{report}");
    // The written conversation keeps the summary as the model gave it.
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(written.contains(r"\u001b]0;pwned"), "{written}");
}
