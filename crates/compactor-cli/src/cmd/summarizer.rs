//! Choosing the summarizer from the command line: an enum of backends and one factory.
//!
//! Adding a backend is adding a variant, its options, and one match arm in
//! [`SummarizerOpts::build`].

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::Summarizer;
use llm_compactor::backend::ExecSummarizer;
use llm_compactor::backend::http::Protocol;

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
}

/// The summarizer options shared by the commands that compact.
#[derive(clap::Args, Clone, Debug)]
pub struct SummarizerOpts {
    /// The summarizer backend.
    #[arg(long, value_enum, default_value_t = SummarizerKind::None)]
    pub summarizer: SummarizerKind,
    /// The command of `--summarizer exec`.
    #[arg(long, value_name = "CMD")]
    pub summarizer_cmd: Option<String>,
    /// Seconds before a summarizer call is abandoned (and retried).
    #[arg(long, value_name = "SECS")]
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
        let timeout = match self.summarizer_timeout {
            None => None,
            Some(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
            Some(secs) => {
                return Err(CliError::Usage(format!(
                    "--summarizer-timeout must be positive, got {secs}"
                )));
            }
        };
        let http = matches!(self.summarizer, SummarizerKind::Openai | SummarizerKind::Anthropic);
        self.http.check_unused(http)?;
        match self.summarizer {
            SummarizerKind::None => Ok(None),
            SummarizerKind::Openai => super::summarizer_http::build(Protocol::OpenAi, &self.http, timeout).map(Some),
            SummarizerKind::Anthropic => {
                super::summarizer_http::build(Protocol::Anthropic, &self.http, timeout).map(Some)
            }
            SummarizerKind::Exec => {
                let command = self
                    .summarizer_cmd
                    .as_deref()
                    .filter(|c| !c.trim().is_empty())
                    .ok_or_else(|| CliError::Usage("--summarizer exec needs --summarizer-cmd CMD".into()))?;
                let mut exec = ExecSummarizer::new(command);
                if let Some(timeout) = timeout {
                    exec = exec.with_timeout(timeout);
                }
                Ok(Some(Arc::new(exec)))
            }
        }
    }
}
