//! `compactor compact --summarizer openai|anthropic` on the real binary against a real
//! HTTP server on 127.0.0.1 started by the test (a small blocking server on a thread:
//! each request is recorded and answered with the next canned reply).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::support;

/// What the server saw: the request line, lower-cased headers, the JSON body.
#[derive(Clone, Debug)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    /// Answers every request with `status` and `body`.
    fn start(status: u16, body: Value) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                if let Some(request) = serve(stream, status, &body) {
                    record.lock().unwrap().push(request);
                }
            }
        });
        Server { port, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, status: u16, body: &Value) -> Option<Seen> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut bytes = vec![0; length];
    reader.read_exact(&mut bytes).ok()?;
    let text = body.to_string();
    let reply = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    );
    (&stream).write_all(reply.as_bytes()).ok()?;
    Some(Seen {
        line: line.trim_end().to_owned(),
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    })
}

fn input(dir: &Path) -> PathBuf {
    support::write_json(dir, "conversation.json", &support::conversation(10, 400))
}

const KEY: &str = "sk-cli-SECRET-42";

fn compact(input: &Path, extra: &[&str]) -> Output {
    let mut command = support::bin();
    command
        .args(["compact", input.to_str().unwrap(), "--json", "--counter", "heuristic"])
        .args(["--budget", "2000", "--keep-recent", "3", "--summarizer-timeout", "20"])
        .args(extra)
        .env("COMPACTOR_TEST_KEY", KEY)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    command.output().unwrap()
}

fn json_out(output: &Output) -> Value {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "exit {:?}: {stderr}", output.status.code());
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

#[test]
fn openai_compatible_server_summarizes() {
    let server = Server::start(
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": "CLI SUMMARY: reading files f0..f6."},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 900, "completion_tokens": 12}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let extra = ["--summarizer", "openai", "--base-url", &base, "--model", "qwen2.5:7b"];
    let output = compact(
        &input(dir.path()),
        &[&extra[..], &["--api-key-env", "COMPACTOR_TEST_KEY"]].concat(),
    );
    let result = json_out(&output);
    assert_eq!(result["fallback"], false);
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .contains("CLI SUMMARY: reading files f0..f6.")
    );
    assert_eq!(result["usage"]["input_tokens"], 900);
    let messages = result["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages
            .iter()
            .any(|m| m["content"].as_str().is_some_and(|c| c.contains("CLI SUMMARY")))
    );
    assert_eq!(messages.last().unwrap()["content"], "Continue.");

    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(seen[0].header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(seen[0].body["model"], "qwen2.5:7b");
    assert_eq!(seen[0].body["messages"][0]["role"], "system");
    assert!(
        seen[0].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("fs_read")
    );
    assert!(seen[0].body["max_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn anthropic_server_summarizes() {
    let server = Server::start(
        200,
        json!({"type": "message", "content": [{"type": "text", "text": "CLI SUMMARY via messages."}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 50, "output_tokens": 9,
               "cache_read_input_tokens": 800, "cache_creation_input_tokens": 0}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}", server.port);
    let extra = [
        "--summarizer",
        "anthropic",
        "--base-url",
        &base,
        "--model",
        "claude-haiku-4-5",
    ];
    let output = compact(
        &input(dir.path()),
        &[&extra[..], &["--api-key-env", "COMPACTOR_TEST_KEY"]].concat(),
    );
    let result = json_out(&output);
    assert_eq!(result["fallback"], false);
    assert_eq!(result["usage"]["input_tokens"], 850);
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].line, "POST /v1/messages HTTP/1.1");
    assert_eq!(seen[0].header("x-api-key"), Some(KEY));
    assert_eq!(seen[0].header("anthropic-version"), Some("2023-06-01"));
    assert!(seen[0].body["system"].as_str().is_some_and(|s| !s.is_empty()));
}

#[test]
fn a_rejected_key_hard_trims_without_retrying_or_leaking() {
    let server = Server::start(
        401,
        json!({"error": {"message": format!("Incorrect API key provided: {KEY}"), "type": "invalid_request_error", "code": "invalid_api_key"}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let output = compact(
        &input(dir.path()),
        &[
            "--summarizer",
            "openai",
            "--base-url",
            &base,
            "--model",
            "gpt-4o-mini",
            "--api-key-env",
            "COMPACTOR_TEST_KEY",
        ],
    );
    let result = json_out(&output);
    // No model summary: the ledger summary instead of the hard trim.
    assert_eq!(result["fallback"], false);
    assert_eq!(result["attempts"].as_array().unwrap().len(), 2);
    assert_eq!(result["attempts"][0]["class"], "abort");
    assert_eq!(result["attempts"][0]["status"], 401);
    assert_eq!(result["attempts"][1]["kind"], "ledger");
    assert_eq!(result["attempts"][1]["outcome"], "accepted");
    assert_eq!(server.seen().len(), 1, "an abort-class failure is not retried");
    let everything = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(everything.contains("The summarizer could not produce a summary"));
    assert!(!everything.contains("SECRET"), "the key leaked: {everything}");
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = input(dir.path());
    let cases: [&[&str]; 4] = [
        &["--summarizer", "openai"],
        &["--summarizer", "none", "--model", "gpt-4o-mini"],
        &[
            "--summarizer",
            "anthropic",
            "--model",
            "claude-x",
            "--api-key-env",
            "COMPACTOR_UNSET_VARIABLE",
        ],
        &[
            "--summarizer",
            "openai",
            "--model",
            "m",
            "--base-url",
            "ftp://127.0.0.1/v1",
        ],
    ];
    for extra in cases {
        let output = compact(&path, extra);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.starts_with("compactor: "), "{stderr}");
    }
    let unset = compact(&path, cases[2]);
    assert!(String::from_utf8_lossy(&unset.stderr).contains("COMPACTOR_UNSET_VARIABLE"));
}

#[test]
fn help_lists_the_http_options() {
    let output = support::run(&["compact", "--help"], None);
    let help = String::from_utf8_lossy(&output.stdout);
    for flag in [
        "openai",
        "anthropic",
        "--model",
        "--base-url",
        "--api-key-env",
        "--summarizer-timeout",
        "--summarizer-context",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}

#[test]
fn a_small_summarizer_context_splits_the_middle_into_chunks() {
    let server = Server::start(
        200,
        json!({"choices": [{"message": {"content": "CHUNK SUMMARY."}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
    );
    let dir = tempfile::tempdir().unwrap();
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let output = compact(
        &input(dir.path()),
        &[
            "--summarizer",
            "openai",
            "--base-url",
            &base,
            "--model",
            "m",
            "--summarizer-context",
            "1000",
        ],
    );
    let result = json_out(&output);
    let seen = server.seen();
    assert!(
        seen.len() > 1,
        "a 1000-token room (less the instruction) cannot take the whole middle at once: {result}"
    );
    assert_eq!(result["attempts"].as_array().unwrap().len(), seen.len());
    assert!(
        seen.iter().all(|s| s.header("authorization").is_none()),
        "no key variable set: no key sent"
    );
}
