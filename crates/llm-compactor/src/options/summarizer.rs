//! The summarizer knobs of an [`OptionsOverlay`]: the summarizers the library builds by
//! name, from data (`ledger`, `none`, `exec`, `openai`, `anthropic`).

use std::sync::Arc;
use std::time::Duration;

use super::{OptionsOverlay, OverlayError};
use crate::Summarizer;
use crate::backend::{ExecSummarizer, LedgerSummarizer};

impl OptionsOverlay {
    /// `summarizer_timeout` as a duration.
    ///
    /// # Errors
    /// [`OverlayError::Timeout`] unless it is a positive, finite number of seconds.
    pub fn summarizer_timeout(&self) -> Result<Option<Duration>, OverlayError> {
        match self.summarizer_timeout {
            None => Ok(None),
            Some(secs) if secs.is_finite() && secs > 0.0 => Ok(Some(Duration::from_secs_f64(secs))),
            Some(secs) => Err(OverlayError::Timeout(secs)),
        }
    }

    /// True when an HTTP-only option is given (`model`, `base_url`, `api_key_env`,
    /// `summarizer_context`).
    pub fn http_options_given(&self) -> bool {
        self.model.is_some()
            || self.base_url.is_some()
            || self.api_key_env.is_some()
            || self.summarizer_context.is_some()
    }

    /// Refuses HTTP-only options unless the summarizer is an HTTP one (a misspelt
    /// summarizer should not silently ignore `model`).
    ///
    /// # Errors
    /// [`OverlayError::HttpOptionsUnused`].
    pub fn check_http_unused(&self, http_summarizer: bool) -> Result<(), OverlayError> {
        if !http_summarizer && self.http_options_given() {
            return Err(OverlayError::HttpOptionsUnused);
        }
        Ok(())
    }

    /// The `exec` summarizer: `summarizer_cmd` run with `sh -c`, with the timeout.
    ///
    /// # Errors
    /// [`OverlayError::Missing`] without a command; [`OverlayError::Timeout`].
    pub fn exec_summarizer(&self) -> Result<ExecSummarizer, OverlayError> {
        let command = self
            .summarizer_cmd
            .as_deref()
            .filter(|c| !c.trim().is_empty())
            .ok_or(OverlayError::Missing {
                summarizer: "exec",
                option: "summarizer_cmd",
            })?;
        let mut exec = ExecSummarizer::new(command);
        if let Some(timeout) = self.summarizer_timeout()? {
            exec = exec.with_timeout(timeout);
        }
        Ok(exec)
    }

    /// The HTTP summarizer's builder for `protocol` from `model`, `base_url`,
    /// `api_key_env`, `summarizer_context` and the timeout (the caller may set more on
    /// it, then builds it).
    ///
    /// # Errors
    /// [`OverlayError::Missing`] without a model; [`OverlayError::Timeout`].
    #[cfg(feature = "http")]
    pub fn http_builder(
        &self,
        protocol: crate::backend::http::Protocol,
    ) -> Result<crate::backend::http::HttpBackendBuilder, OverlayError> {
        use crate::backend::http::{HttpBackend, Protocol};
        let model = self.model.clone().ok_or(OverlayError::Missing {
            summarizer: protocol.as_str(),
            option: "model",
        })?;
        let mut builder = match protocol {
            Protocol::OpenAi => HttpBackend::openai(model),
            Protocol::Anthropic => HttpBackend::anthropic(model),
        };
        if let Some(url) = &self.base_url {
            builder = builder.base_url(url);
        }
        if let Some(env) = &self.api_key_env {
            builder = builder.api_key_env(env);
        }
        if let Some(timeout) = self.summarizer_timeout()? {
            builder = builder.timeout(timeout);
        }
        if let Some(room) = self.summarizer_context {
            builder = builder.input_room(room);
        }
        Ok(builder)
    }

    /// The summarizer `summarizer` names (`ledger` unless named; `None` for `none`).
    ///
    /// # Errors
    /// [`OverlayError::UnknownSummarizer`]; [`OverlayError::HttpOptionsUnused`] or
    /// [`OverlayError::CommandUnused`] for options its summarizer does not read; what
    /// [`OptionsOverlay::exec_summarizer`] and the HTTP backend refuse.
    pub fn summarizer(&self) -> Result<Option<Arc<dyn Summarizer>>, OverlayError> {
        let name = self.summarizer.as_deref().unwrap_or("ledger");
        self.summarizer_timeout()?;
        self.check_http_unused(matches!(name, "openai" | "anthropic"))?;
        if self.summarizer_cmd.is_some() && name != "exec" {
            return Err(OverlayError::CommandUnused);
        }
        match name {
            "none" => Ok(None),
            "ledger" => Ok(Some(Arc::new(LedgerSummarizer))),
            "exec" => Ok(Some(Arc::new(self.exec_summarizer()?))),
            "openai" | "anthropic" => self.http_summarizer(name).map(Some),
            other => Err(OverlayError::UnknownSummarizer(other.to_owned())),
        }
    }

    #[cfg(feature = "http")]
    fn http_summarizer(&self, name: &str) -> Result<Arc<dyn Summarizer>, OverlayError> {
        use crate::backend::http::Protocol;
        let protocol = if name == "openai" {
            Protocol::OpenAi
        } else {
            Protocol::Anthropic
        };
        Ok(Arc::new(self.http_builder(protocol)?.build()?))
    }

    #[cfg(not(feature = "http"))]
    fn http_summarizer(&self, name: &str) -> Result<Arc<dyn Summarizer>, OverlayError> {
        Err(OverlayError::Unavailable(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlay(json: &str) -> OptionsOverlay {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn named_summarizers() {
        assert_eq!(OptionsOverlay::new().summarizer().unwrap().unwrap().name(), "ledger");
        assert!(overlay(r#"{"summarizer": "none"}"#).summarizer().unwrap().is_none());
        let exec = overlay(r#"{"summarizer": "exec", "summarizer_cmd": "cat"}"#)
            .summarizer()
            .unwrap();
        assert!(exec.is_some());
    }

    #[test]
    fn refusals_name_the_option() {
        let option = |json: &str| overlay(json).summarizer().err().unwrap().option();
        assert_eq!(option(r#"{"summarizer": "gpt"}"#), Some("summarizer"));
        assert_eq!(option(r#"{"summarizer": "exec"}"#), Some("summarizer_cmd"));
        assert_eq!(
            option(r#"{"summarizer": "ledger", "summarizer_cmd": "cat"}"#),
            Some("summarizer_cmd")
        );
        assert_eq!(option(r#"{"summarizer": "ledger", "model": "m"}"#), Some("summarizer"));
        assert_eq!(option(r#"{"summarizer_timeout": 0}"#), Some("summarizer_timeout"));
        #[cfg(feature = "http")]
        assert_eq!(option(r#"{"summarizer": "openai"}"#), Some("model"));
    }
}
