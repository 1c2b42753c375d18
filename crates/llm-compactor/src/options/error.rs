//! [`OverlayError`]: why an [`super::OptionsOverlay`] was refused, naming the option.

use crate::ConfigError;
use crate::count::CounterByNameError;

/// An option the overlay refuses. [`OverlayError::option`] names it (the overlay's
/// field name, snake_case); the message names options the same way.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OverlayError {
    /// The numbers do not make a valid configuration.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// `target` is 0.
    #[error("invalid configuration: target must be greater than 0")]
    ZeroTarget,
    /// The door's numbers make no door.
    #[error("invalid configuration: {0}")]
    Door(String),
    /// A pin pattern does not parse.
    #[error("invalid configuration: {0}")]
    Pin(#[from] crate::plan::ledger::PinRuleError),
    /// The counter is unknown or not built in.
    #[error("{0}")]
    Counter(#[from] CounterByNameError),
    /// `summarizer` names no summarizer the library builds by name.
    #[error("unknown summarizer `{0}` (expected ledger, openai, anthropic, exec, none, or a callable)")]
    UnknownSummarizer(String),
    /// `summarizer` names one this build leaves out (the `http` feature).
    #[error("summarizer `{0}` needs llm-compactor's `http` feature")]
    Unavailable(String),
    /// The summarizer needs an option that was not given.
    #[error("summarizer=\"{summarizer}\" needs {option}")]
    Missing {
        /// The summarizer's name.
        summarizer: &'static str,
        /// The option it needs.
        option: &'static str,
    },
    /// HTTP-only options given to a summarizer that is not an HTTP one.
    #[error("model, base_url, api_key_env and summarizer_context need summarizer=\"openai\" or \"anthropic\"")]
    HttpOptionsUnused,
    /// `summarizer_cmd` given to a summarizer that is not `exec`.
    #[error("summarizer_cmd needs summarizer=\"exec\"")]
    CommandUnused,
    /// `summarizer_timeout` is not a positive number of seconds.
    #[error("summarizer_timeout must be positive, got {0}")]
    Timeout(f64),
    /// The HTTP summarizer could not be built (key, URL, client).
    #[cfg(feature = "http")]
    #[error("{0}")]
    Http(#[from] crate::backend::http::HttpConfigError),
}

impl OverlayError {
    /// The option at fault (the overlay's field name), where one is.
    pub fn option(&self) -> Option<&'static str> {
        Some(match self {
            OverlayError::Config(error) => match error {
                ConfigError::ZeroBudget => "budget",
                ConfigError::RatioOutOfRange { name, .. } | ConfigError::Zero { name } => name,
                ConfigError::TargetNotBelowTrigger { .. } => "target_ratio",
                _ => return None,
            },
            OverlayError::ZeroTarget => "target",
            OverlayError::Door(_) => "door",
            OverlayError::Pin(_) => "pin_patterns",
            OverlayError::Counter(_) => "counter",
            OverlayError::UnknownSummarizer(_) | OverlayError::Unavailable(_) | OverlayError::HttpOptionsUnused => {
                "summarizer"
            }
            OverlayError::Missing { option, .. } => option,
            OverlayError::CommandUnused => "summarizer_cmd",
            OverlayError::Timeout(_) => "summarizer_timeout",
            #[cfg(feature = "http")]
            OverlayError::Http(error) => match error {
                crate::backend::http::HttpConfigError::MissingApiKey { .. } => "api_key_env",
                _ => "summarizer",
            },
        })
    }
}
