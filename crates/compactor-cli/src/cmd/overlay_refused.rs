//! The library's options overlay refusing an option, said in the CLI's words: the flag
//! (`--summarizer-cmd`), not the overlay's field (`summarizer_cmd`). Its own file so that
//! the option modules (`compact_opts`, `summarizer`, `summarizer_http`) all use it without
//! importing each other.

use llm_compactor::backend::http::HttpConfigError;
use llm_compactor::options::OverlayError;

use crate::error::CliError;

/// An option the library's overlay refused, as a usage error naming its flag (a runtime
/// failure when the HTTP client cannot be created).
pub fn refused(error: OverlayError) -> CliError {
    let usage = |text: String| CliError::Usage(text);
    match error {
        OverlayError::ZeroTarget => usage("invalid configuration: --target must be greater than 0".into()),
        OverlayError::Missing { summarizer, option } => {
            let value = if option == "summarizer_cmd" { " CMD" } else { "" };
            usage(format!(
                "--summarizer {summarizer} needs --{}{value}",
                option.replace('_', "-")
            ))
        }
        OverlayError::Timeout(secs) => usage(format!("--summarizer-timeout must be positive, got {secs}")),
        OverlayError::HttpOptionsUnused => usage(
            "--model, --base-url, --api-key-env and --summarizer-context need --summarizer openai|anthropic".into(),
        ),
        OverlayError::Http(error @ HttpConfigError::Client(_)) => CliError::failed(error),
        OverlayError::Http(error @ HttpConfigError::MissingApiKey { .. }) => {
            usage(format!("{error} (set it, or name another variable with --api-key-env)"))
        }
        other => usage(other.to_string()),
    }
}
