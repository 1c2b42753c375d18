//! `_core.Compactor`: the library's [`Compactor`] with Python's messages in and out.
//!
//! Every method takes the conversation as JSON text (the Python layer serializes what
//! the SDK produced) and releases the GIL while Rust parses, counts, plans, compacts and
//! waits; a Python summarizer takes the GIL back only for its own call.

use std::sync::Arc;

use llm_compactor::count::{CalibratedCounter, TokenCounter};
use llm_compactor::{CompactOptions, CompactionResult, Compactor, Message, Usage};
use pyo3::prelude::*;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::errors;
use crate::options::Options;
use crate::runtime;
use crate::wire::{self, Wire, WireError};

/// Parses JSON text from Python.
pub fn parse_json(json: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(json).map_err(|e| {
        errors::wire(WireError {
            index: None,
            problem: format!("{what} is not JSON: {e}"),
            unsupported: false,
        })
    })
}

/// Reads a conversation: JSON text, a format name, Anthropic's `system` as JSON text.
pub fn read_messages(json: &str, format: &str, system: Option<&str>) -> PyResult<(Vec<Message>, Wire)> {
    let format = wire::parse_format(format).map_err(|e| errors::setting("format", e))?;
    let value = parse_json(json, "messages")?;
    let system = system.map(|s| parse_json(s, "system")).transpose()?;
    wire::read(value, format, system).map_err(errors::wire)
}

/// The caller's conversation (or `system`) as a JSON value: JSON text is parsed, Python
/// objects are read directly ([`crate::pyjson`]).
pub fn input_value(object: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    match object.cast::<pyo3::types::PyString>() {
        Ok(text) => parse_json(&text.to_cow()?, what),
        Err(_) => crate::pyjson::to_value(object),
    }
}

/// Reads a conversation already held as JSON values.
pub fn read_value(value: Value, format: &str, system: Option<Value>) -> PyResult<(Vec<Message>, Wire)> {
    let format = wire::parse_format(format).map_err(|e| errors::setting("format", e))?;
    wire::read(value, format, system).map_err(errors::wire)
}

/// The caller's messages and `system`, converted with the GIL held. Messages given as a
/// `str` are JSON text; a `system` given as a `str` is the system prompt itself (its
/// blocks, a list, are read as objects).
fn inputs(messages: &Bound<'_, PyAny>, system: Option<&Bound<'_, PyAny>>) -> PyResult<(Value, Option<Value>)> {
    let value = input_value(messages, "messages")?;
    let system = system
        .map(|s| match s.cast::<pyo3::types::PyString>() {
            Ok(text) => Ok(Value::String(text.to_cow()?.into_owned())),
            Err(_) => crate::pyjson::to_value(s),
        })
        .transpose()?;
    Ok((value, system))
}

/// A pass's result as JSON text, its messages written in the caller's format and shape.
pub fn result_json(mut result: CompactionResult, wire: &Wire) -> PyResult<String> {
    let (messages, request) = wire.write(std::mem::take(&mut result.messages));
    let mut value =
        serde_json::to_value(&result).map_err(|e| errors::raise("CompactorError", e.to_string(), None, None))?;
    if let Value::Object(object) = &mut value {
        object.insert("messages".into(), messages);
        object.insert("request".into(), request.unwrap_or(Value::Null));
        object.insert("format".into(), Value::String(wire.format().name().to_owned()));
    }
    Ok(value.to_string())
}

/// A cancellation handle: `cancel()` makes a running pass stop waiting and calling its
/// summarizer and end in the hard trim.
#[pyclass(module = "llm_compactor._core", frozen)]
#[derive(Clone, Default)]
pub struct CancelToken {
    pub(crate) token: CancellationToken,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> Self {
        CancelToken::default()
    }

    /// Cancels the passes this token was given to.
    fn cancel(&self) {
        self.token.cancel();
    }

    /// True once cancelled.
    fn cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// The library's compactor, configured from the keyword options.
#[pyclass(name = "Compactor", module = "llm_compactor._core", frozen)]
pub struct PyCompactor {
    pub(crate) inner: Arc<Compactor>,
    pub(crate) counter: Arc<dyn TokenCounter>,
    pub(crate) calibrated: Option<Arc<CalibratedCounter>>,
}

impl PyCompactor {
    /// Builds from the options JSON and an optional Python summarizer.
    pub fn build(options: &str, summarizer: Option<Py<PyAny>>) -> PyResult<PyCompactor> {
        let options = Options::from_json(options)?;
        let base = options.base_counter()?;
        let calibrated = options
            .calibrated
            .unwrap_or(false)
            .then(|| Arc::new(CalibratedCounter::with_fallback(base.clone())));
        // The calibrated counter is the very instance the compactor counts with.
        let counter: Arc<dyn TokenCounter> = match &calibrated {
            Some(c) => c.clone(),
            None => base,
        };
        let compactor = options.compactor(counter.clone(), summarizer)?;
        Ok(PyCompactor {
            inner: Arc::new(compactor),
            counter,
            calibrated,
        })
    }
}

#[pymethods]
impl PyCompactor {
    #[new]
    #[pyo3(signature = (options, summarizer=None))]
    fn new(options: &str, summarizer: Option<Py<PyAny>>) -> PyResult<Self> {
        PyCompactor::build(options, summarizer)
    }

    /// The configuration, as JSON text.
    fn config_json(&self) -> String {
        serde_json::to_string(self.inner.config()).unwrap_or_default()
    }

    /// The counter's name.
    fn counter_name(&self) -> String {
        self.counter.name().to_owned()
    }

    /// The summarizer's name (`None` without one).
    fn summarizer_name(&self) -> Option<String> {
        self.inner.summarizer().map(|s| s.name().to_owned())
    }

    /// The conversation's tokens with this compactor's counter.
    #[pyo3(signature = (messages, format="auto", system=None))]
    fn count(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        format: &str,
        system: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (value, system) = inputs(messages, system)?;
        py.detach(move || {
            let (messages, _) = read_value(value, format, system)?;
            Ok(self.counter.count_messages(&messages))
        })
    }

    /// True when a pass is due.
    #[pyo3(signature = (messages, format="auto", system=None))]
    fn needs_compaction(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        format: &str,
        system: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let (value, system) = inputs(messages, system)?;
        py.detach(move || {
            let (messages, _) = read_value(value, format, system)?;
            Ok(self.inner.needs_compaction(&messages))
        })
    }

    /// A dry run (the library's `PlanReport`), as JSON text.
    #[pyo3(signature = (messages, format="auto", system=None, target=None))]
    fn plan(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        format: &str,
        system: Option<&Bound<'_, PyAny>>,
        target: Option<usize>,
    ) -> PyResult<String> {
        let (value, system) = inputs(messages, system)?;
        py.detach(move || {
            let (messages, _) = read_value(value, format, system)?;
            let options = CompactOptions::new().with_target(target);
            let report = self.inner.plan(&messages, &options);
            serde_json::to_string(&report).map_err(|e| errors::raise("CompactorError", e.to_string(), None, None))
        })
    }

    /// One pass; the result as JSON text, its messages in the format and shape given.
    #[pyo3(signature = (messages, format="auto", system=None, target=None, focus=None, cancel=None))]
    fn compact(
        &self,
        messages: &Bound<'_, PyAny>,
        format: &str,
        system: Option<&Bound<'_, PyAny>>,
        target: Option<usize>,
        focus: Option<String>,
        cancel: Option<Py<CancelToken>>,
    ) -> PyResult<String> {
        // The objects are read with the GIL held; the pass runs without it.
        let py = messages.py();
        let (value, system) = inputs(messages, system)?;
        py.detach(move || {
            let (messages, wire) = read_value(value, format, system)?;
            let options = CompactOptions::new()
                .with_target(target)
                .with_focus(focus)
                .with_cancel(cancel.map(|c| c.get().token.clone()).unwrap_or_default());
            let result = runtime()
                .block_on(self.inner.compact(&messages, options))
                .map_err(errors::compact)?;
            result_json(result, &wire)
        })
    }

    /// Feeds what a provider billed for `messages` (the conversation the request carried)
    /// to the calibrated counter; a `ConfigError` when the compactor is not calibrated.
    #[pyo3(signature = (messages, usage, model, format="auto", system=None))]
    fn record_usage(
        &self,
        py: Python<'_>,
        messages: &Bound<'_, PyAny>,
        usage: &str,
        model: &str,
        format: &str,
        system: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let Some(calibrated) = &self.calibrated else {
            return Err(errors::setting(
                "calibrated",
                "record_usage needs a compactor built with calibrated=True",
            ));
        };
        let (value, system) = inputs(messages, system)?;
        py.detach(move || {
            let (messages, _) = read_value(value, format, system)?;
            let usage: Usage =
                serde_json::from_str(usage).map_err(|e| errors::setting("usage", format!("invalid usage: {e}")))?;
            calibrated.record_usage(&messages, model, &usage);
            Ok(())
        })
    }

    /// The calibration record, as JSON text (`None` before the first bill or when not
    /// calibrated).
    fn calibration_json(&self) -> Option<String> {
        let record = self.calibrated.as_ref()?.calibration()?;
        serde_json::to_string(&record).ok()
    }
}

/// The format a conversation is read as (`auto` resolved).
#[pyfunction]
#[pyo3(signature = (messages, format="auto", system=None))]
pub fn detect_format(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    format: &str,
    system: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let (value, system) = inputs(messages, system)?;
    py.detach(move || {
        let (_, wire) = read_value(value, format, system)?;
        Ok(wire.format().name().to_owned())
    })
}

/// A conversation's tokens with the named counter.
#[pyfunction]
#[pyo3(signature = (messages, counter="o200k", format="auto", system=None))]
pub fn count_tokens(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    counter: &str,
    format: &str,
    system: Option<&Bound<'_, PyAny>>,
) -> PyResult<usize> {
    let counter = crate::options::counter_named(counter)?;
    let (value, system) = inputs(messages, system)?;
    py.detach(move || {
        let (messages, _) = read_value(value, format, system)?;
        Ok(counter.count_messages(&messages))
    })
}
