//! The unmodified agent CLIs, as `scripts/agent-clients.sh` installs them from npm
//! (`$COMPACTOR_AGENT_CLIENTS`, default `target/agent-clients`: `bin/claude`,
//! `bin/codex`, `bin/opencode`), and how a user runs each headless against a base URL.
//!
//! Each run is hermetic: a cleared environment with a throwaway HOME (and CODEX_HOME),
//! a dummy key, and everything that would phone home turned off; the network beyond
//! 127.0.0.1 is never needed. Under `CI=true` a missing install fails the test instead
//! of skipping it (as the Python SDK venv of the proxy's tests does).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

/// The installed clients.
pub struct Clients {
    pub claude: PathBuf,
    pub codex: PathBuf,
    pub opencode: PathBuf,
}

/// The clients, or `None` after a notice (a panic under `CI=true`).
pub fn find() -> Option<Clients> {
    let dir = std::env::var_os("COMPACTOR_AGENT_CLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/agent-clients"));
    let clients = Clients {
        claude: dir.join("bin/claude"),
        codex: dir.join("bin/codex"),
        opencode: dir.join("bin/opencode"),
    };
    if clients.claude.exists() && clients.codex.exists() && clients.opencode.exists() {
        return Some(clients);
    }
    let notice = format!(
        "the agent CLIs are missing at {} (run scripts/agent-clients.sh)",
        dir.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{notice}");
    }
    eprintln!("SKIPPED: {notice}");
    None
}

/// The task every client is given (the scripted model ignores it).
const TASK: &str = "Run each command the model asks for and report when the model says it is done.";

/// The most a client run may take before it is killed (a hang must fail, not stall CI).
const TIMEOUT: Duration = Duration::from_secs(240);

/// A hermetic command: cleared environment, its own HOME, in `work`.
fn hermetic(program: &Path, home: &Path, work: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("LANG", "C.UTF-8")
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn finish(mut command: tokio::process::Command, what: &str) -> Output {
    let child = command.spawn().unwrap_or_else(|e| panic!("{what} starts: {e}"));
    match tokio::time::timeout(TIMEOUT, child.wait_with_output()).await {
        Ok(output) => output.unwrap(),
        Err(_) => panic!("{what} did not finish within {TIMEOUT:?}"),
    }
}

/// How Claude Code runs: its agent turns, thinking (its default: on), the model it asks for.
pub struct ClaudeOptions {
    /// Agent turns at most.
    pub turns: usize,
    /// Thinking on (Claude Code's default).
    pub thinking: bool,
    /// The model asked for.
    pub model: &'static str,
}

/// Claude Code, headless (`claude -p`), against `base_url` (the Anthropic origin), for
/// up to `turns` agent turns, with its defaults otherwise: thinking on (and with it its
/// `context_management` edit), unless `thinking` is false (`CLAUDE_CODE_DISABLE_THINKING`).
pub async fn claude(clients: &Clients, base_url: &str, dir: &Path, options: ClaudeOptions) -> Output {
    let ClaudeOptions { turns, thinking, model } = options;
    let (home, work) = (dir.join("home"), dir.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let mut command = hermetic(&clients.claude, &home, &work);
    command
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-dummy")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        // `--dangerously-skip-permissions` is refused as root outside a sandbox; the
        // throwaway HOME and work directory are the sandbox here.
        .env("IS_SANDBOX", "1")
        .envs((!thinking).then_some(("CLAUDE_CODE_DISABLE_THINKING", "1")))
        .args(["-p", TASK, "--dangerously-skip-permissions", "--output-format", "json"])
        .args(["--max-turns", &turns.to_string(), "--model", model]);
    finish(command, "claude").await
}

/// Codex CLI, headless (`codex exec`), with a custom provider on the Responses API at
/// `base_url` (`…/v1`). With `remote_compaction`, the provider declares Codex's remote
/// compaction (`capabilities.remote_compaction = "v2"`: Codex then asks it to compact with
/// a `compaction_trigger` item) and Codex compacts when its context reaches that many
/// tokens.
pub async fn codex(clients: &Clients, base_url: &str, dir: &Path, remote_compaction: Option<usize>) -> Output {
    let (home, work) = (dir.join("home"), dir.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let (limit, capabilities) = match remote_compaction {
        Some(auto_compact) => (
            format!("model_auto_compact_token_limit = {auto_compact}\n"),
            "\n[model_providers.scripted.capabilities]\nremote_compaction = \"v2\"\n",
        ),
        None => (String::new(), ""),
    };
    let config = format!(
        "model = \"gpt-5-codex\"\nmodel_provider = \"scripted\"\n{limit}\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{base_url}\"\n\
         env_key = \"SCRIPTED_API_KEY\"\nwire_api = \"responses\"\n{capabilities}"
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    let mut command = hermetic(&clients.codex, &home, &work);
    command
        .env("CODEX_HOME", &home)
        .env("SCRIPTED_API_KEY", "sk-scripted-dummy")
        .args([
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            TASK,
        ]);
    finish(command, "codex").await
}

/// opencode, headless (`opencode run`), with its Anthropic provider (`@ai-sdk/anthropic`)
/// pointed at `base_url` (`…/v1`) and its shell allowed.
pub async fn opencode(clients: &Clients, base_url: &str, dir: &Path) -> Output {
    let (home, work) = (dir.join("home"), dir.join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let config = serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5",
        "small_model": "anthropic/claude-sonnet-4-5",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow"},
        "provider": {"anthropic": {"options": {"baseURL": base_url, "apiKey": "sk-ant-scripted-dummy"}}}
    });
    let file = home.join("opencode.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let mut command = hermetic(&clients.opencode, &home, &work);
    command
        .env("OPENCODE_CONFIG", &file)
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        // It installs its plugin package from npm at start-up: no plugins, and npm offline
        // (the install fails at once instead of reaching for the registry).
        .env("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1")
        .env("OPENCODE_PURE", "1")
        .env("npm_config_offline", "true")
        .args(["run", TASK]);
    finish(command, "opencode").await
}
