//! What every CLI integration test shares: running the real `compactor` binary, reading
//! what it printed, building a small OpenAI conversation, and finding the shared
//! trajectories (the same lookup as the library's tests, so both skip alike when the data
//! is absent).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

#[path = "../../../llm-compactor/tests/common/mod.rs"]
mod common;

#[allow(unused_imports)]
pub use common::{data_dir, largest_mini_swe_agent_file, mini_swe_agent_files};

/// The real binary, ready for arguments.
pub fn bin() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_compactor"));
    command
        // Hermetic: `--summarizer auto` (the default) must resolve to `none` here, whatever
        // keys or fetched model the machine running the tests has.
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env("LLM_COMPACTOR_MODEL_DIR", "/nonexistent/llm-compactor-models");
    command
}

/// Runs the binary with `args`, feeding `stdin` when given (otherwise stdin is empty).
/// A command that fails on its flags exits without reading stdin: the broken pipe that
/// follows is expected, not a test failure.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let Some(bytes) = stdin else {
        return bin().args(args).output().expect("the binary runs");
    };
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    match pipe.write_all(bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.expect("stdin takes the input"),
    }
    drop(pipe);
    child.wait_with_output().expect("the binary ends")
}

/// What the binary printed on stdout.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the binary printed on stderr.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Stdout parsed as JSON; a parse failure shows both streams.
pub fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(output), stderr(output)))
}

/// `trajectories/<relative>` of the shared data, or `None` (with a notice) when absent.
pub fn trajectory(relative: &str) -> Option<PathBuf> {
    let path = data_dir()?.join("trajectories").join(relative);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "NOTICE: skipping: {} not found (set LLM_COMPACTOR_DATA)",
            path.display()
        );
        None
    }
}

/// An OpenAI conversation: a system prompt, a task, then `rounds` `fs_read` tool rounds
/// whose results are `size` chars.
pub fn tool_rounds(rounds: usize, size: usize) -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the bug."}),
    ];
    for i in 0..rounds {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "fs_read", "arguments": format!("{{\"path\":\"f{i}.rs\"}}")}}
        ]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "r".repeat(size)}));
    }
    messages
}

/// [`tool_rounds`] then a last user turn, `Continue.`.
pub fn conversation(rounds: usize, size: usize) -> Value {
    let mut messages = tool_rounds(rounds, size);
    messages.push(json!({"role": "user", "content": "Continue."}));
    Value::Array(messages)
}

/// Writes `value` as compact JSON to `dir/name`.
pub fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

/// A running proxy's `/metrics` text.
pub async fn metrics_text(client: &reqwest::Client, proxy: &str) -> String {
    client
        .get(format!("{proxy}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}
