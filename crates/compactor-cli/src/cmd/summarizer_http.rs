//! `--summarizer openai|anthropic`: an HTTP summarizer built from the command line.
//!
//! The flags live here (flattened into `compact`'s arguments) so that the HTTP backend's
//! settings are one concern in one file; the summarizer choice itself is the enum in
//! `summarizer.rs`.

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::Summarizer;
use llm_compactor::backend::http::{HttpBackend, Protocol};
use llm_compactor::options::OptionsOverlay;

use super::overlay_refused::refused;

use crate::error::CliError;

/// The HTTP summarizer's flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct HttpSummarizerArgs {
    /// The model the summarizer asks (required with --summarizer openai|anthropic).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The server's base URL; for OpenAI-compatible servers it includes `/v1`
    /// [default: `https://api.openai.com/v1` or `https://api.anthropic.com`].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key; when named it must be set
    /// [default: OPENAI_API_KEY, which may be unset for local servers, or ANTHROPIC_API_KEY].
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Input room of one summarizer request in tokens (a bigger middle is summarized in
    /// chunks) [default: by model family; 6000 for unknown models].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub summarizer_context: Option<u64>,
}

impl HttpSummarizerArgs {
    /// Sets the HTTP options of the library's options overlay from these flags.
    pub fn fill(&self, overlay: &mut OptionsOverlay) {
        overlay.model = self.model.clone();
        overlay.base_url = self.base_url.clone();
        overlay.api_key_env = self.api_key_env.clone();
        overlay.summarizer_context = self
            .summarizer_context
            .map(|room| usize::try_from(room).unwrap_or(usize::MAX));
    }

    fn overlay(&self) -> OptionsOverlay {
        let mut overlay = OptionsOverlay::new();
        self.fill(&mut overlay);
        overlay
    }

    /// A usage error when HTTP-only flags were given to another summarizer (a typo'd
    /// `--summarizer` should not silently ignore `--model`).
    ///
    /// # Errors
    /// As said.
    pub fn check_unused(&self, http_summarizer: bool) -> Result<(), CliError> {
        self.overlay().check_http_unused(http_summarizer).map_err(refused)
    }
}

/// Builds the HTTP summarizer for `protocol` from the flags (and the shared
/// `--summarizer-timeout`, already validated).
///
/// # Errors
/// A usage error for a missing `--model`, an unset key variable, a bad URL; a runtime
/// failure when the HTTP client cannot be created.
pub fn build(
    protocol: Protocol,
    args: &HttpSummarizerArgs,
    timeout: Option<Duration>,
) -> Result<Arc<dyn Summarizer>, CliError> {
    Ok(Arc::new(backend(protocol, args, timeout, false)?))
}

/// The HTTP backend the flags describe; with `keyless` it carries no key of its own
/// (`compactor proxy --summarizer-key client` gives it the client's per pass).
///
/// # Errors
/// As [`build`].
pub fn backend(
    protocol: Protocol,
    args: &HttpSummarizerArgs,
    timeout: Option<Duration>,
    keyless: bool,
) -> Result<HttpBackend, CliError> {
    let mut overlay = args.overlay();
    let key_env = overlay.api_key_env.take();
    let mut builder = overlay.http_builder(protocol).map_err(refused)?;
    if keyless {
        if key_env.is_some() {
            return Err(CliError::Usage(
                "--api-key-env names the summarizer's own key; with --summarizer-key client it uses the client's"
                    .into(),
            ));
        }
        builder = builder.no_api_key();
    } else if let Some(env) = key_env {
        builder = builder.api_key_env(env);
    }
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    let backend = builder.build().map_err(|e| refused(e.into()))?;
    tracing::debug!(backend = ?backend, "HTTP summarizer");
    Ok(backend)
}
