//! Issue 44: the guides' shell recipes run as written. Every `sh` block of
//! `docs/guide/*.md` that `docs_blocks.rs` assigns here (all but the Claude Code and Codex
//! pages', which `readme_proxy.rs` runs, Getting started's `cargo install`, which
//! `scripts/install-check.sh` runs, and blocks marked `<!-- not run: ... -->`) runs
//! under bash, in page order, in one scratch directory per page, with the built
//! `compactor` first on PATH and the client stand-ins of `readme_proxy.rs` (`claude`,
//! `codex`, `sdk-client`) beside it, against a scripted upstream on 127.0.0.1.
//!
//! What is substituted, and nothing else:
//! - origins: `https://api.anthropic.com`, `https://api.openai.com` and the local model
//!   servers' `http://127.0.0.1:{8000,8080,11434}` become the scripted upstream;
//!   `127.0.0.1:8787` / `0.0.0.0:8787` a free port on 127.0.0.1 (the proxy is given
//!   `--listen` on it when the block names none); `127.0.0.1:4318` an OTLP receiver;
//!   `postgres://agent:secret@db:5432/sessions` a throwaway PostgreSQL cluster's database;
//! - a `compactor proxy` left in the foreground goes to the background, and, as after a
//!   block that ends by exporting a base URL, an SDK request is sent through it (the
//!   official `openai` or `anthropic` package of `target/py-sdks` when installed, else
//!   curl), which reads the base URL from the environment as the page says;
//! - `curl` waits (bounded) for the proxy the block started (`--retry-connrefused`);
//! - `HOME` is the scratch directory's;
//! - files a page names but does not make: the repo's example session
//!   (`examples/sessions/long-agent-session.json`, at that path as in a clone), and
//!   `conv.json` and `run.traj.json` are copies of it, `run.jsonl` its
//!   transcript; a session named `SESSION` or `auto-0123abcd` is the first the store
//!   lists (the page's `run.jsonl` imported as `auto-0123abcd` when the store is empty),
//!   and the handle `#00dc1d9d5b` the first handle of `compactor session replay run.jsonl`.
//!
//! A block passes when bash exits 0; a block that ran a client must have got the
//! upstream's answer through the proxy, and a block that set `OTEL_EXPORTER_OTLP_ENDPOINT`
//! must have exported a GenAI span.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::routing::post;

use crate::docs_blocks::{fenced, guide_pages, runner};
use crate::readme_proxy::{CURL, free_port, harness_bin, script, start_upstream};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// An OTLP/HTTP receiver on 127.0.0.1: the bodies posted to `/v1/traces`.
async fn start_otlp() -> (String, Arc<Mutex<Vec<String>>>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(
                |State(seen): State<Arc<Mutex<Vec<String>>>>, body: axum::body::Bytes| async move {
                    seen.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
                    "{}"
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// The `compactor` the blocks run: the built binary; `compactor proxy` followed by a flag
/// (serving) listens on `port` unless the block names an address, and does not see the
/// client's keys (its `auto` summarizer is then the ledger, never a network provider).
fn compactor_wrapper(bin: &Path, port: u16) {
    let compactor = env!("CARGO_BIN_EXE_compactor");
    script(
        &bin.join("compactor"),
        &format!(
            "if [ \"${{1:-}}\" = proxy ] && {{ [ -z \"${{2:-}}\" ] || [ \"${{2#-}}\" != \"$2\" ]; }}; then\n\
             shift; unset OPENAI_API_KEY ANTHROPIC_API_KEY\n\
             case \" $* \" in *' --listen '*) exec '{compactor}' proxy \"$@\";; esac\n\
             exec '{compactor}' proxy --listen 127.0.0.1:{port} \"$@\"\n\
             fi\n\
             exec '{compactor}' \"$@\"\n"
        ),
    );
}

/// `anthropic-client`: an application on Anthropic's SDK, which reads its base URL from
/// `ANTHROPIC_BASE_URL` (the official package in `target/py-sdks` when installed, else curl).
fn anthropic_client(bin: &Path) {
    let python = root().join("target/py-sdks/bin/python");
    let body = if python.is_file() {
        format!(
            "exec '{}' -c 'import anthropic; print(anthropic.Anthropic(max_retries=8).messages.create(model=\"claude-sonnet-4-5\", max_tokens=64, messages=[{{\"role\": \"user\", \"content\": \"guide: sdk\"}}]).content[0].text)'\n",
            python.display()
        )
    } else {
        eprintln!("NOTICE: target/py-sdks absent (scripts/python-sdks.sh): the Anthropic SDK stand-in is curl");
        format!(
            "{CURL} -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'anthropic-version: 2023-06-01' \
             -d '{{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64,\"messages\":[{{\"role\":\"user\",\"content\":\"guide: sdk\"}}]}}' \
             \"$ANTHROPIC_BASE_URL/v1/messages\"\n"
        )
    };
    script(&bin.join("anthropic-client"), &body);
}

/// Runs a command of the harness (not of the page) in `dir`, returning its stdout.
fn harness(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_compactor"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "harness: compactor {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What a page's blocks share: its scratch directory and the servers.
struct Page {
    dir: tempfile::TempDir,
    bin: PathBuf,
    upstream: String,
    otlp: String,
    postgres: Option<String>,
}

impl Page {
    /// Makes the files and sessions `block` names that the page has not made.
    fn fixtures(&self, block: &str) {
        let dir = self.dir.path();
        let example = root().join("examples/sessions/long-agent-session.json");
        if block.contains("examples/sessions/long-agent-session.json") && !dir.join("examples").exists() {
            std::fs::create_dir_all(dir.join("examples/sessions")).unwrap();
            std::fs::copy(&example, dir.join("examples/sessions/long-agent-session.json")).unwrap();
        }
        for name in ["conv.json", "run.traj.json"] {
            if block.contains(name) && !dir.join(name).exists() {
                std::fs::copy(&example, dir.join(name)).unwrap();
            }
        }
        if block.contains("run.jsonl") && !block.contains("-o run.jsonl") && !dir.join("run.jsonl").exists() {
            harness(
                dir,
                &["session", "import", example.to_str().unwrap(), "-o", "run.jsonl"],
            );
        }
    }

    /// The first session the store lists (the page's `run.jsonl` imported when it has none).
    fn session(&self) -> String {
        let dir = self.dir.path();
        let list = |d: &Path| harness(d, &["proxy", "sessions"]);
        if list(dir).trim().is_empty() {
            self.fixtures("run.jsonl");
            let store = "sqlite:compactor-sessions.db";
            harness(
                dir,
                &[
                    "session",
                    "import",
                    "run.jsonl",
                    "--store",
                    store,
                    "--session",
                    "auto-0123abcd",
                ],
            );
        }
        let listed = list(dir);
        listed
            .split_whitespace()
            .next()
            .expect("a session in the store")
            .to_owned()
    }

    /// The first handle a replay of `run.jsonl` names.
    fn handle(&self) -> String {
        let replay = harness(self.dir.path(), &["session", "replay", "run.jsonl"]);
        let at = replay
            .find("[#")
            .expect("a handle in the replay (compacted with --expand)");
        replay[at + 1..at + 12].to_owned()
    }

    /// The block as bash runs it (the module's substitutions), and whether it runs a client.
    fn prepared(&self, block: &str, port: u16) -> (String, bool) {
        let listen = format!("127.0.0.1:{port}");
        let mut text = block.replace("\\\n", " ");
        for origin in [
            "https://api.anthropic.com",
            "https://api.openai.com",
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8080",
            "http://127.0.0.1:11434",
        ] {
            text = text.replace(origin, &self.upstream);
        }
        text = text
            .replace("127.0.0.1:8787", &listen)
            .replace("0.0.0.0:8787", &listen)
            .replace("http://127.0.0.1:4318", &self.otlp);
        if let Some(url) = &self.postgres {
            text = text.replace("postgres://agent:secret@db:5432/sessions", url);
        }
        if text.contains("SESSION") || text.contains("auto-0123abcd") {
            let key = self.session();
            text = text.replace("SESSION", &key).replace("auto-0123abcd", &key);
        }
        if text.contains("#00dc1d9d5b") {
            text = text.replace("#00dc1d9d5b", &self.handle());
        }
        let mut client = false;
        let mut lines = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().filter(|w| !w.contains('=')).collect();
            let serving = line.find("compactor proxy").is_some_and(|at| {
                let next = line[at + "compactor proxy".len()..].split_whitespace().next();
                next.is_none_or(|w| w.starts_with('-'))
            });
            if serving && !line.trim_end().ends_with('&') {
                lines.push(format!("{line} &"));
                lines.push(format!("OPENAI_BASE_URL=http://{listen}/v1 sdk-client"));
                client = true;
            } else if let Some(rest) = line.trim_start().strip_prefix("curl ") {
                lines.push(format!(
                    "curl --retry 30 --retry-connrefused --retry-delay 1 --max-time 60 {rest}"
                ));
            } else {
                client |= ["claude", "codex"].contains(&words.first().copied().unwrap_or_default());
                lines.push(line.to_owned());
            }
        }
        let last = block
            .lines()
            .map(str::trim)
            .rev()
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        if last.starts_with("export ANTHROPIC_BASE_URL") {
            lines.push("anthropic-client".to_owned());
            client = true;
        } else if last.starts_with("export ") && last.contains("BASE_URL") {
            lines.push("sdk-client".to_owned());
            client = true;
        }
        (lines.join("\n") + "\n", client)
    }
}

/// Waits (bounded) until no process of the group `pgid` is left.
fn wait_group(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let alive = std::process::Command::new("kill")
            .args(["-0", "--", &format!("-{pgid}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the block's processes did not stop within 30 s of SIGTERM");
}

/// Runs the page's `sh` blocks assigned to this test, in order.
async fn run_page(name: &str, text: &str) {
    let blocks: Vec<_> = fenced(text)
        .into_iter()
        .filter(|b| runner(name, b, &[]) == Ok("docs_recipes.rs"))
        .collect();
    if blocks.is_empty() {
        return;
    }
    let cluster = if text.contains("postgres://agent:secret@db") {
        match crate::pg::PgCluster::start() {
            Some(cluster) => Some(cluster),
            None => return, // the notice is printed (and CI=true fails) by PgCluster::start
        }
    } else {
        None
    };
    let (upstream, up) = start_upstream().await;
    let (otlp, spans) = start_otlp().await;
    let dir = tempfile::tempdir().unwrap();
    let bin = harness_bin(dir.path(), 0);
    anthropic_client(&bin);
    std::fs::create_dir(dir.path().join("home")).unwrap();
    let page = Page {
        postgres: cluster.as_ref().map(|c| c.database("sessions")),
        dir,
        bin,
        upstream,
        otlp,
    };
    for block in &blocks {
        let port = free_port();
        compactor_wrapper(&page.bin, port);
        page.fixtures(&block.body);
        let (text, client) = page.prepared(&block.body, port);
        let before = up.seen.lock().unwrap().len();
        let dir = page.dir.path();
        let (out_log, err_log) = (dir.join("out.log"), dir.join("err.log"));
        let mut child = std::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &text])
            .current_dir(dir)
            .env(
                "PATH",
                format!("{}:{}", page.bin.display(), std::env::var("PATH").unwrap()),
            )
            .env("HOME", dir.join("home"))
            .env("CODEX_HOME", dir.join("home"))
            .env("ANTHROPIC_API_KEY", "sk-ant-readme")
            .env("OPENAI_API_KEY", "sk-readme")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out_log).unwrap())
            .stderr(std::fs::File::create(&err_log).unwrap())
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
            .stderr(Stdio::null())
            .status();
        tokio::task::spawn_blocking(move || wait_group(pgid)).await.unwrap();
        let out = std::fs::read_to_string(&out_log).unwrap();
        let err = std::fs::read_to_string(&err_log).unwrap();
        let at = format!("docs/guide/{name}:{}", block.line);
        assert!(
            status.success(),
            "{at}: the block failed ({status}):\n{text}\nstdout:\n{out}\nstderr:\n{err}"
        );
        if client {
            assert!(
                out.contains("upstream says hi"),
                "{at}: the answer came back through the proxy:\n{text}\n{out}\n{err}"
            );
            assert!(up.seen.lock().unwrap().len() > before, "{at}: the upstream was asked");
            assert!(
                err.contains(&format!("listening on http://127.0.0.1:{port}")),
                "{at}: the block's own proxy served it:\n{err}"
            );
        }
        if text.contains("OTEL_EXPORTER_OTLP_ENDPOINT") {
            let exported = spans.lock().unwrap().join("\n");
            assert!(
                exported.contains("gen_ai.conversation.id"),
                "{at}: a GenAI span reached the OTLP receiver: {exported}"
            );
        }
        println!("{at}: ran");
    }
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_shell_recipes_run_as_written() {
    assert!(
        std::process::Command::new("curl").arg("--version").output().is_ok(),
        "curl runs the client stand-ins"
    );
    let pages = guide_pages();
    for (name, text) in &pages {
        run_page(name, text).await;
    }
}
