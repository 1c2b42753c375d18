//! `compactor count`, run as the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use llm_compactor::count::counter_by_name;
use llm_compactor::format::{Document, Format};

fn compactor(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactor"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    {
        let mut pipe = child.stdin.take().expect("stdin is piped");
        if let Some(bytes) = stdin {
            // A usage error exits before reading stdin: a broken pipe is expected then.
            match pipe.write_all(bytes) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.expect("stdin takes the input"),
            }
        }
    }
    child.wait_with_output().expect("the binary finishes")
}

/// The largest mini-swe-agent trajectory of the shared data, or `None` (with a notice)
/// when the data is absent.
fn largest_trajectory() -> Option<PathBuf> {
    let dir = std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")))
        .join("trajectories/mini-swe-agent");
    let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".traj.json"))
                .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let found = files.pop().map(|(_, path)| path);
    if found.is_none() {
        eprintln!(
            "NOTICE: skipping: no mini-swe-agent trajectories at {} (set LLM_COMPACTOR_DATA)",
            dir.display()
        );
    }
    found
}

fn expected(path: &Path, counter: &str) -> (usize, usize) {
    let document = Document::read_path(path, Some(Format::MiniSweAgent)).expect("the trajectory reads");
    let counter = counter_by_name(counter).expect("a known counter");
    (document.messages().len(), counter.count_messages(document.messages()))
}

#[test]
fn counts_a_trajectory_file_with_the_default_o200k_counter() {
    let Some(path) = largest_trajectory() else { return };
    let (messages, tokens) = expected(&path, "o200k");
    let out = compactor(&["count", path.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{tokens} tokens ({messages} messages, o200k)\n")
    );
}

#[test]
fn counts_stdin_as_json_with_every_counter_and_format_option() {
    let Some(path) = largest_trajectory() else { return };
    let bytes = std::fs::read(&path).unwrap();
    for counter in ["heuristic", "o200k", "cl100k"] {
        let (messages, tokens) = expected(&path, counter);
        for format in ["auto", "mini-swe-agent"] {
            let out = compactor(
                &["count", "-", "--json", "--counter", counter, "--format", format],
                Some(&bytes),
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                format!("{{\"messages\": {messages}, \"tokens\": {tokens}, \"counter\": \"{counter}\"}}\n")
            );
            let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
            assert_eq!(value["tokens"], tokens);
        }
    }
}

#[test]
fn a_missing_file_fails_with_exit_1() {
    let out = compactor(&["count", "/nonexistent/conversation.json"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/conversation.json"));
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unknown_counter_is_a_usage_error() {
    let out = compactor(&["count", "-", "--counter", "p50k"], Some(b"[]"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("heuristic") && stderr.contains("o200k") && stderr.contains("cl100k"),
        "{stderr}"
    );
}

#[test]
fn help_lists_the_options() {
    let out = compactor(&["count", "--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for option in ["--counter", "--json", "--format", "mini-swe-agent"] {
        assert!(help.contains(option), "{help}");
    }
}
