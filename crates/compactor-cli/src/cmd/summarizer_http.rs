//! `--summarizer openai|anthropic`: an HTTP summarizer built from the command line.
//!
//! The flags live here (flattened into `compact`'s arguments) so that the HTTP backend's
//! settings are one concern in one file; the summarizer choice itself is the enum in
//! `summarizer.rs`.

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::Summarizer;
use llm_compactor::backend::http::{HttpBackend, HttpConfigError, Protocol};

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
    /// True when any HTTP-only flag was given (an error without an HTTP summarizer).
    pub fn any_given(&self) -> bool {
        self.model.is_some()
            || self.base_url.is_some()
            || self.api_key_env.is_some()
            || self.summarizer_context.is_some()
    }

    /// A usage error when HTTP-only flags were given to another summarizer (a typo'd
    /// `--summarizer` should not silently ignore `--model`).
    ///
    /// # Errors
    /// As said.
    pub fn check_unused(&self, http_summarizer: bool) -> Result<(), CliError> {
        if !http_summarizer && self.any_given() {
            return Err(CliError::Usage(
                "--model, --base-url, --api-key-env and --summarizer-context need --summarizer openai|anthropic".into(),
            ));
        }
        Ok(())
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
    let flag = match protocol {
        Protocol::OpenAi => "openai",
        Protocol::Anthropic => "anthropic",
    };
    let model = args
        .model
        .clone()
        .ok_or_else(|| CliError::Usage(format!("--summarizer {flag} needs --model")))?;
    let mut builder = match protocol {
        Protocol::OpenAi => HttpBackend::openai(model),
        Protocol::Anthropic => HttpBackend::anthropic(model),
    };
    if let Some(url) = &args.base_url {
        builder = builder.base_url(url);
    }
    if keyless {
        if args.api_key_env.is_some() {
            return Err(CliError::Usage(
                "--api-key-env names the summarizer's own key; with --summarizer-key client it uses the client's"
                    .into(),
            ));
        }
        builder = builder.no_api_key();
    } else if let Some(env) = &args.api_key_env {
        builder = builder.api_key_env(env);
    }
    if let Some(timeout) = timeout {
        builder = builder.timeout(timeout);
    }
    if let Some(room) = args.summarizer_context {
        builder = builder.input_room(usize::try_from(room).unwrap_or(usize::MAX));
    }
    let backend = builder.build().map_err(|error| match error {
        HttpConfigError::Client(_) => CliError::failed(error),
        HttpConfigError::MissingApiKey { .. } => {
            CliError::Usage(format!("{error} (set it, or name another variable with --api-key-env)"))
        }
        other => CliError::Usage(other.to_string()),
    })?;
    tracing::debug!(backend = ?backend, "HTTP summarizer");
    Ok(backend)
}
