//! The keyword options of `compact` / `Compactor(...)`: the library's options overlay
//! ([`OptionsOverlay`], the CLI's flags by the same names, underscored), plus
//! `calibrated`, this binding's own.
//!
//! Python collects the keywords into one JSON object; this module reads it (unknown keys
//! refused, naming them) and builds the library's [`Compactor`] through the overlay.

use std::sync::Arc;

use llm_compactor::count::{TokenCounter, counter_by_name};
use llm_compactor::options::{OptionsOverlay, OverlayError};
use llm_compactor::{Compactor, CompactorConfig, Summarizer};
use pyo3::prelude::*;
use serde_json::Value;

use crate::errors;
use crate::summarizer::CallableSummarizer;

/// Every option: the overlay's, and whether to count with the calibrated counter.
#[derive(Debug, Default)]
pub struct Options {
    /// The library's options.
    pub overlay: OptionsOverlay,
    /// Anchor counts on what the provider billed (`record_usage`).
    pub calibrated: Option<bool>,
}

impl Options {
    /// Reads the options object Python sent.
    pub fn from_json(json: &str) -> PyResult<Options> {
        let invalid = |e: serde_json::Error| errors::setting("options", format!("invalid option: {e}"));
        let mut object: serde_json::Map<String, Value> = serde_json::from_str(json).map_err(invalid)?;
        let calibrated = match object.remove("calibrated") {
            None | Some(Value::Null) => None,
            Some(value) => Some(serde_json::from_value(value).map_err(invalid)?),
        };
        let overlay = serde_json::from_value(Value::Object(object)).map_err(invalid)?;
        Ok(Options { overlay, calibrated })
    }

    /// The validated configuration.
    pub fn config(&self) -> PyResult<CompactorConfig> {
        self.overlay.config().map_err(refused)
    }

    /// The named counter (`o200k` unless named).
    pub fn base_counter(&self) -> PyResult<Arc<dyn TokenCounter>> {
        self.overlay.counter().map_err(refused)
    }

    /// The compactor these options describe, counting with `counter`, with `callable`
    /// as its summarizer when the caller passed a Python callable.
    pub fn compactor(&self, counter: Arc<dyn TokenCounter>, callable: Option<Py<PyAny>>) -> PyResult<Compactor> {
        let config = self.config()?;
        let summarizer = match callable {
            Some(callable) => {
                self.overlay.check_http_unused(false).map_err(refused)?;
                Some(Arc::new(CallableSummarizer::new(callable)) as Arc<dyn Summarizer>)
            }
            None => self.overlay.summarizer().map_err(refused)?,
        };
        Ok(self.overlay.compactor_of(config, counter, summarizer))
    }
}

/// An option the overlay refused, as a `ConfigError` naming it.
fn refused(error: OverlayError) -> PyErr {
    match error {
        OverlayError::Config(error) => errors::config(error),
        other => errors::setting(other.option().unwrap_or("options"), other),
    }
}

/// A counter by name (`heuristic`, `o200k`, `cl100k`).
pub fn counter_named(name: &str) -> PyResult<Arc<dyn TokenCounter>> {
    counter_by_name(name).map_err(|e| errors::setting("counter", e))
}
