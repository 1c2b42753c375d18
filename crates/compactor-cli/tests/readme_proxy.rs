//! Issue 44: the README's proxy section runs as written, and so do the proxy commands of
//! the guides (Claude Code, Codex CLI). Each `sh` block of the README's
//! "Way in 1" (and of those pages) runs under bash, in a scratch directory, with the built `compactor` on PATH, against a
//! scripted upstream on 127.0.0.1. Only two things are substituted: the provider's origin
//! (`https://api.anthropic.com`, `https://api.openai.com`) becomes the scripted upstream,
//! and the default port 8787 a free one (`compactor proxy` is given `--listen` on it).
//! The agent CLIs are stand-ins on PATH that send what the client sends to the base URL
//! the block's environment gives them (`claude`: `ANTHROPIC_BASE_URL` + `/v1/messages`;
//! `codex`: the `base_url` of the README's `config.toml` + `/responses`); the real CLIs
//! through the proxy are `real_clients.rs`. A block that ends by exporting an SDK's
//! variable is followed by a request from that SDK (the official `openai` package in
//! `target/py-sdks` when installed, else curl), which reads its base URL from the
//! environment exactly as the README says. A command the harness does not know fails
//! the test, so a new line in the section cannot go untested.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::routing::post;
use serde_json::{Value, json};

/// The README's proxy section: from "## Way in 1" to the next `## ` heading.
pub fn proxy_section(readme: &str) -> &str {
    let start = readme.find("\n## Way in 1").expect("the README has a proxy section") + 1;
    let end = readme[start + 3..]
        .find("\n## ")
        .map_or(readme.len(), |i| start + 3 + i + 1);
    &readme[start..end]
}

/// The fenced blocks of `text` whose info string is `lang`.
pub(crate) fn blocks(text: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line.trim_end() == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line.trim_end() == "```" => out.push(current.take().unwrap()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    out
}

/// One request the upstream received.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) key: String,
    pub(crate) body: Value,
}

#[derive(Default)]
pub(crate) struct Upstream {
    pub(crate) seen: Mutex<Vec<Seen>>,
}

/// Answers each route with the smallest valid reply and records the request.
async fn answer(
    State(up): State<Arc<Upstream>>,
    uri: Uri,
    headers: HeaderMap,
    body: axum::Json<Value>,
) -> axum::Json<Value> {
    let key = ["x-api-key", "authorization"]
        .iter()
        .find_map(|h| headers.get(*h))
        .map(|v| v.to_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let path = uri.path().to_owned();
    up.seen.lock().unwrap().push(Seen {
        path: path.clone(),
        key,
        body: body.0,
    });
    axum::Json(match path.as_str() {
        "/v1/messages" => json!({"id":"msg_1","type":"message","role":"assistant","model":"m",
            "content":[{"type":"text","text":"upstream says hi"}],"stop_reason":"end_turn",
            "stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}),
        "/v1/responses" => json!({"id":"resp_1","object":"response","created_at":1,"status":"completed",
            "model":"m","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant",
            "content":[{"type":"output_text","text":"upstream says hi","annotations":[]}]}],
            "usage":{"input_tokens":10,"output_tokens":3,"total_tokens":13}}),
        _ => json!({"id":"c","object":"chat.completion","created":1,"model":"m",
            "choices":[{"index":0,"message":{"role":"assistant","content":"upstream says hi"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}),
    })
}

pub(crate) async fn start_upstream() -> (String, Arc<Upstream>) {
    let up = Arc::new(Upstream::default());
    let app = Router::new()
        .route("/v1/messages", post(answer))
        .route("/v1/chat/completions", post(answer))
        .route("/v1/responses", post(answer))
        .with_state(up.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, up)
}

/// A port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// curl, waiting (bounded) for the proxy the block started in the background to listen.
pub(crate) const CURL: &str = "curl -sS --fail-with-body --retry 30 --retry-connrefused --retry-delay 1 --max-time 60 -H 'content-type: application/json'";

/// Writes an executable script.
pub(crate) fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/usr/bin/env bash\nset -euo pipefail\n{body}")).unwrap();
    let mut mode = std::fs::metadata(path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(path, mode).unwrap();
}

/// The bin directory put first on PATH: `compactor` (the built binary, listening on
/// `port`), and the stand-ins for the clients.
pub(crate) fn harness_bin(dir: &Path, port: u16) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let compactor = env!("CARGO_BIN_EXE_compactor");
    script(
        &bin.join("compactor"),
        &format!(
            "if [ \"${{1:-}}\" = proxy ]; then shift; unset OPENAI_API_KEY ANTHROPIC_API_KEY; exec '{compactor}' proxy --listen 127.0.0.1:{port} \"$@\"; fi\n\
             exec '{compactor}' \"$@\"\n"
        ),
    );
    script(
        &bin.join("claude"),
        &format!(
            "{CURL} -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'anthropic-version: 2023-06-01' \
             -d '{{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64,\"messages\":[{{\"role\":\"user\",\"content\":\"readme: claude\"}}]}}' \
             \"$ANTHROPIC_BASE_URL/v1/messages\"\n"
        ),
    );
    script(
        &bin.join("codex"),
        &format!(
            "config=\"$CODEX_HOME/config.toml\"\n\
             base=$(sed -n 's/^base_url = \"\\(.*\\)\"$/\\1/p' \"$config\")\n\
             key_var=$(sed -n 's/^env_key = \"\\(.*\\)\"$/\\1/p' \"$config\")\n\
             grep -qx 'wire_api = \"responses\"' \"$config\"\n\
             {CURL} -H \"authorization: Bearer ${{!key_var}}\" \
             -d '{{\"model\":\"gpt-5-codex\",\"store\":false,\"input\":[{{\"role\":\"user\",\"content\":\"readme: codex\"}}]}}' \
             \"$base/responses\"\n"
        ),
    );
    // An application built on an OpenAI SDK: the official Python package when installed.
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-sdks/bin/python");
    let sdk = if python.is_file() {
        format!(
            "exec '{}' -c 'from openai import OpenAI; print(OpenAI(max_retries=8).chat.completions.create(model=\"gpt-4o-mini\", messages=[{{\"role\": \"user\", \"content\": \"readme: sdk\"}}]).choices[0].message.content)'\n",
            python.display()
        )
    } else {
        eprintln!("NOTICE: target/py-sdks absent (scripts/python-sdks.sh): the SDK stand-in is curl");
        format!(
            "{CURL} -H \"authorization: Bearer $OPENAI_API_KEY\" \
             -d '{{\"model\":\"gpt-4o-mini\",\"messages\":[{{\"role\":\"user\",\"content\":\"readme: sdk\"}}]}}' \
             \"$OPENAI_BASE_URL/chat/completions\"\n"
        )
    };
    script(&bin.join("sdk-client"), &sdk);
    bin
}

/// The commands a line of the section may start with (after `VAR=value` assignments).
const KNOWN: &[&str] = &["compactor", "claude", "codex", "export"];

/// The block as the harness runs it: the origins and the port substituted, and an SDK
/// request appended when the block ends by exporting a base URL.
fn prepared(block: &str, upstream: &str, port: u16) -> String {
    let mut text = block
        .replace("https://api.anthropic.com", upstream)
        .replace("https://api.openai.com", upstream)
        .replace("127.0.0.1:8787", &format!("127.0.0.1:{port}"));
    for line in block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let command = line
            .split_whitespace()
            .find(|word| !word.contains('='))
            .unwrap_or_default();
        assert!(
            KNOWN.contains(&command),
            "the README's proxy section runs `{command}`, which this test does not know how to check: {line}"
        );
    }
    let last = block
        .lines()
        .map(str::trim)
        .rev()
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if last.starts_with("export ") {
        text.push_str("sdk-client\n");
    }
    text
}

/// A page of the repository, read.
pub(crate) fn page(relative: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_proxy_section_runs_as_written() {
    let readme = page("README.md");
    let section = proxy_section(&readme);
    assert!(
        blocks(section, "sh").len() >= 3,
        "the proxy section's shell blocks: {section}"
    );
    assert_eq!(blocks(section, "toml").len(), 1, "one config.toml for Codex: {section}");
    run_blocks(section, &blocks(section, "toml")[0]).await;
}

/// The same for the guides' proxy commands: Claude Code and Codex CLI (the getting
/// started page's agent through the proxy runs in `docs_recipes.rs`, with the page's other
/// commands, in order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_proxy_commands_run_as_written() {
    let readme = page("README.md");
    let readme_toml = blocks(proxy_section(&readme), "toml").remove(0);
    let codex = page("docs/guide/codex.md");
    // The guide's config.toml is its blocks together: the provider, then the remote
    // compaction capability it adds to it.
    let codex_toml = blocks(&codex, "toml");
    assert_eq!(codex_toml.len(), 2, "the Codex guide's config.toml and its capability");
    run_blocks(&codex, &codex_toml.join("\n")).await;
    run_blocks(&page("docs/guide/claude-code.md"), &readme_toml).await;
}

/// Runs every `sh` block of `text` as the module's docs say, with `toml` as Codex's
/// `config.toml`.
async fn run_blocks(text: &str, toml: &str) {
    let shell = blocks(text, "sh");
    assert!(!shell.is_empty(), "no shell block in {text}");
    assert!(
        std::process::Command::new("curl").arg("--version").output().is_ok(),
        "curl runs the client stand-ins"
    );
    for block in &shell {
        let (upstream, up) = start_upstream().await;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let bin = harness_bin(dir.path(), port);
        let codex_home = dir.path().join("codex");
        std::fs::create_dir(&codex_home).unwrap();
        std::fs::write(
            codex_home.join("config.toml"),
            toml.replace("127.0.0.1:8787", &format!("127.0.0.1:{port}")),
        )
        .unwrap();
        let text = prepared(block, &upstream, port);
        let log = dir.path().join("out.log");
        let mut child = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &text])
            .current_dir(dir.path())
            .env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()))
            .env("CODEX_HOME", &codex_home)
            .env("ANTHROPIC_API_KEY", "sk-ant-readme")
            .env("OPENAI_API_KEY", "sk-readme")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_BASE_URL")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(dir.path().join("err.log")).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap();
        // The proxy the block left in the background: stopped with its process group.
        let _ = std::process::Command::new("kill")
            .args(["-TERM", "--", &format!("-{pgid}")])
            .status();
        let out = std::fs::read_to_string(&log).unwrap();
        let err = std::fs::read_to_string(dir.path().join("err.log")).unwrap();
        assert!(
            status.success(),
            "the block failed ({status}):\n{text}\nstdout:\n{out}\nstderr:\n{err}"
        );
        assert!(
            out.contains("upstream says hi"),
            "the answer came back through the proxy:\n{text}\n{out}\n{err}"
        );
        let seen = up.seen.lock().unwrap().clone();
        let marker = if block.contains("claude") {
            ("/v1/messages", "readme: claude", "sk-ant-readme")
        } else if block.contains("codex") {
            ("/v1/responses", "readme: codex", "Bearer sk-readme")
        } else {
            ("/v1/chat/completions", "readme: sdk", "Bearer sk-readme")
        };
        assert!(
            seen.iter()
                .any(|s| s.path == marker.0 && s.key == marker.2 && s.body.to_string().contains(marker.1)),
            "the upstream received the client's request on {} with its key: {seen:#?}\n{text}",
            marker.0
        );
        assert!(
            err.contains(&format!("listening on http://127.0.0.1:{port}")),
            "the block's own proxy served it:\n{err}"
        );
    }
}
