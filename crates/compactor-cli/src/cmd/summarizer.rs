//! Choosing the summarizer from the command line: an enum of backends and one factory.
//!
//! Adding a backend is adding a variant, its options, and one match arm in
//! [`SummarizerOpts::build`].

use std::path::PathBuf;
use std::sync::Arc;

use llm_compactor::Summarizer;
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::backend::http::Protocol;
use llm_compactor::options::OptionsOverlay;

use crate::error::CliError;

/// Which summarizer a pass uses.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummarizerKind {
    /// No summarizer: aging and the hard trim only (`fallback: true` when it trims).
    None,
    /// Run `--summarizer-cmd` with `sh -c`: instruction in `COMPACTOR_SYSTEM_PROMPT`,
    /// output budget in `COMPACTOR_MAX_TOKENS`, transcript on stdin, summary on stdout.
    Exec,
    /// An OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama, ...):
    /// `--model`, `--base-url`, `--api-key-env`, `--summarizer-context`.
    Openai,
    /// The Anthropic Messages API: `--model`, `--base-url`, `--api-key-env`,
    /// `--summarizer-context`.
    Anthropic,
    /// A small GGUF model run in-process on the CPU (`--model-path FILE`, default: the
    /// model `compactor model fetch` downloads).
    Local,
    /// No model: the artifact ledger of the replaced messages (files, commands, errors,
    /// the user's requests, identifiers), verbatim. Instant, deterministic, invents
    /// nothing.
    Ledger,
    /// OPENAI_API_KEY set: openai; else ANTHROPIC_API_KEY: anthropic; else the local
    /// model when it has been fetched (never for `compactor proxy`: a server's
    /// summarizer does not depend on a cache directory); else the ledger. Says which on
    /// stderr.
    Auto,
    /// `compactor proxy` only: the model of the request being compacted, through the
    /// proxy's `--upstream`, with the client's key (summaries are billed to the client's
    /// key; it is never stored or logged), reading the agent's prompt cache. No
    /// `--model`, `--base-url` or `--api-key-env`.
    Upstream,
}

/// The local summarizer's flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct LocalSummarizerArgs {
    /// The GGUF model of `--summarizer local` [default: the fetched SmolLM2-135M-Instruct].
    #[arg(long, value_name = "FILE")]
    pub model_path: Option<PathBuf>,
}

/// The model `auto` asks when it picks OpenAI and no `--model` was given.
const AUTO_OPENAI_MODEL: &str = "gpt-4o-mini";
/// The model `auto` asks when it picks Anthropic and no `--model` was given.
const AUTO_ANTHROPIC_MODEL: &str = "claude-3-5-haiku-latest";

/// The summarizer options shared by the commands that compact.
#[derive(clap::Args, Clone, Debug)]
pub struct SummarizerOpts {
    /// The summarizer backend.
    #[arg(long, value_enum, default_value_t = SummarizerKind::Auto)]
    pub summarizer: SummarizerKind,
    /// The options of `--summarizer local` (boxed, like the HTTP ones, to keep the
    /// commands that flatten these options small).
    #[command(flatten)]
    pub local: Box<LocalSummarizerArgs>,
    /// The command of `--summarizer exec`.
    #[arg(long, value_name = "CMD")]
    pub summarizer_cmd: Option<String>,
    /// Seconds before a summarizer call is abandoned (and retried), for `exec` (whose
    /// whole process group is then killed) and HTTP alike [default: 300].
    #[arg(long, value_name = "SECS", value_parser = super::ranges::seconds)]
    pub summarizer_timeout: Option<f64>,
    /// The options of `--summarizer openai|anthropic` (boxed: they would make every
    /// command that flattens these options large).
    #[command(flatten)]
    pub http: Box<super::summarizer_http::HttpSummarizerArgs>,
}

impl SummarizerOpts {
    /// The configured summarizer (`None` for `--summarizer none`).
    ///
    /// # Errors
    /// A usage error when the backend's options are missing or invalid.
    pub fn build(&self) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
        self.build_with_progress(true)
    }

    /// [`SummarizerOpts::build`], with or without progress bars for the local model
    /// (they only ever appear when stderr is a terminal).
    ///
    /// # Errors
    /// As [`SummarizerOpts::build`].
    pub fn build_with_progress(&self, progress: bool) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
        self.build_as(progress, false)
    }

    /// [`SummarizerOpts::build`] for a server (`compactor proxy`): `auto` never picks the
    /// local model there (an API key in the environment: that provider; else the
    /// ledger), so what a proxy summarizes with does not change with what was once
    /// fetched into a cache directory. `upstream` is the proxy's to build: `None` here.
    ///
    /// # Errors
    /// As [`SummarizerOpts::build`].
    pub fn build_for_server(&self) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
        self.build_as(false, true)
    }

    fn build_as(&self, progress: bool, server: bool) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
        let timeout = self
            .overlay(&self.http)
            .summarizer_timeout()
            .map_err(super::overlay_refused::refused)?;
        let (kind, http_args) = self.resolve(server)?;
        let http = matches!(kind, SummarizerKind::Openai | SummarizerKind::Anthropic);
        if self.summarizer != SummarizerKind::Auto {
            self.http.check_unused(http)?;
        }
        if self.local.model_path.is_some() && kind != SummarizerKind::Local {
            return Err(CliError::Usage("--model-path needs --summarizer local".into()));
        }
        let http_args = http_args.as_ref().unwrap_or(&self.http);
        match kind {
            SummarizerKind::None | SummarizerKind::Auto => Ok(None),
            SummarizerKind::Upstream if server => Ok(None),
            SummarizerKind::Upstream => Err(CliError::Usage(
                "--summarizer upstream is for `compactor proxy` (it summarizes through the proxy's --upstream)".into(),
            )),
            SummarizerKind::Ledger => Ok(Some(Arc::new(LedgerSummarizer))),
            SummarizerKind::Local => build_local(self.local.model_path.as_deref(), progress),
            SummarizerKind::Openai => super::summarizer_http::build(Protocol::OpenAi, http_args, timeout).map(Some),
            SummarizerKind::Anthropic => {
                super::summarizer_http::build(Protocol::Anthropic, http_args, timeout).map(Some)
            }
            SummarizerKind::Exec => {
                let exec = self
                    .overlay(&self.http)
                    .exec_summarizer()
                    .map_err(super::overlay_refused::refused)?;
                Ok(Some(Arc::new(exec)))
            }
        }
    }
}

impl SummarizerOpts {
    /// The summarizer flags the library's options overlay knows (`--summarizer-cmd`,
    /// `--summarizer-timeout` and the HTTP ones, from `http`), as one.
    pub fn overlay(&self, http: &super::summarizer_http::HttpSummarizerArgs) -> OptionsOverlay {
        let mut overlay = OptionsOverlay::new();
        overlay.summarizer_cmd = self.summarizer_cmd.clone();
        overlay.summarizer_timeout = self.summarizer_timeout;
        http.fill(&mut overlay);
        overlay
    }

    /// What `--summarizer` means here: `auto` resolved (with one line on stderr saying
    /// which and why), plus the HTTP flags with a default `--model` when auto picked a
    /// provider and none was given.
    fn resolve(
        &self,
        server: bool,
    ) -> Result<(SummarizerKind, Option<super::summarizer_http::HttpSummarizerArgs>), CliError> {
        if self.summarizer != SummarizerKind::Auto {
            return Ok((self.summarizer, None));
        }
        let key = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        let with_model = |default: &str| {
            let mut args = (*self.http).clone();
            args.model.get_or_insert_with(|| default.to_owned());
            args
        };
        let (kind, args, why) = if key("OPENAI_API_KEY") {
            let args = with_model(AUTO_OPENAI_MODEL);
            let why = format!(
                "OPENAI_API_KEY is set; model {}",
                args.model.as_deref().unwrap_or_default()
            );
            (SummarizerKind::Openai, Some(args), why)
        } else if key("ANTHROPIC_API_KEY") {
            let args = with_model(AUTO_ANTHROPIC_MODEL);
            let why = format!(
                "ANTHROPIC_API_KEY is set; model {}",
                args.model.as_deref().unwrap_or_default()
            );
            (SummarizerKind::Anthropic, Some(args), why)
        } else if server {
            (
                SummarizerKind::Ledger,
                None,
                "no API key in the environment: the model-free ledger; a proxy never picks the local model (--summarizer local asks for it, --summarizer upstream summarizes with the agent's own model)".to_owned(),
            )
        } else {
            match local_model(self.local.model_path.as_deref())? {
                Some(path) => (
                    SummarizerKind::Local,
                    None,
                    format!("no API key in the environment; local model {}", path.display()),
                ),
                None => (
                    SummarizerKind::Ledger,
                    None,
                    "no API key in the environment and no local model (`compactor model fetch` gets one): the model-free ledger".to_owned(),
                ),
            }
        };
        let name = match kind {
            SummarizerKind::Openai => "openai",
            SummarizerKind::Anthropic => "anthropic",
            SummarizerKind::Local => "local",
            SummarizerKind::Ledger => "ledger",
            _ => "none",
        };
        crate::out::stderr_line(&format!("compactor: summarizer auto: {name} ({why})"))?;
        Ok((kind, args))
    }
}

#[cfg(feature = "local")]
fn local_model(explicit: Option<&std::path::Path>) -> Result<Option<PathBuf>, CliError> {
    super::summarizer_local::model_path(explicit)
}

#[cfg(not(feature = "local"))]
fn local_model(_explicit: Option<&std::path::Path>) -> Result<Option<PathBuf>, CliError> {
    Ok(None)
}

#[cfg(feature = "local")]
fn build_local(explicit: Option<&std::path::Path>, progress: bool) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
    let local = super::summarizer_local::build(explicit, progress)?;
    Ok(Some(Arc::new(local)))
}

#[cfg(not(feature = "local"))]
fn build_local(_explicit: Option<&std::path::Path>, _progress: bool) -> Result<Option<Arc<dyn Summarizer>>, CliError> {
    Err(CliError::Usage(
        "this compactor was built without the `local` feature".into(),
    ))
}
