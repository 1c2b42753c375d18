//! A Python callable as the library's [`Summarizer`].
//!
//! The callable receives the instruction, the transcript and the output budget in tokens
//! and returns the summary text (or a dict with `text`, and optionally `truncated` and
//! `usage`). The Python layer wraps an `async` callable so that this side always calls a
//! plain function (see `llm_compactor._summarizer`). Its failures are classified like any
//! backend's: a `ValueError` or `TypeError` is a bug in the callable or its input and
//! will not heal on retry, so it is abort-class ([`FailureKind::Unavailable`]: straight to
//! the hard trim); any other exception is retried after a backoff
//! ([`FailureKind::Other`]); an answer that is neither text nor such a dict is a parse
//! failure.

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use tokio_util::sync::CancellationToken;

/// A summarizer that calls a Python function.
pub struct CallableSummarizer {
    callable: Py<PyAny>,
    name: String,
}

impl CallableSummarizer {
    /// Wraps `callable` (its `__name__` names it in reports).
    pub fn new(callable: Py<PyAny>) -> Self {
        let name = Python::attach(|py| {
            callable
                .bind(py)
                .getattr("__name__")
                .and_then(|n| n.extract::<String>())
                .unwrap_or_else(|_| "callable".to_owned())
        });
        CallableSummarizer {
            callable,
            name: format!("python:{name}"),
        }
    }
}

/// Calls the callable with the GIL held and reads its answer.
fn call(callable: &Py<PyAny>, request: &SummaryRequest) -> Result<SummaryReply, SummarizerError> {
    Python::attach(|py| {
        let answer = callable
            .bind(py)
            .call1((&request.system, &request.transcript, request.max_output_tokens))
            .map_err(|e| classify(py, &e))?;
        read_answer(&answer)
    })
}

fn classify(py: Python<'_>, error: &PyErr) -> SummarizerError {
    let kind = if error.is_instance_of::<PyValueError>(py) || error.is_instance_of::<PyTypeError>(py) {
        FailureKind::Unavailable
    } else {
        FailureKind::Other
    };
    let type_name = error
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".to_owned());
    SummarizerError::new(kind, format!("the summarizer raised {type_name}: {}", error.value(py)))
}

fn read_answer(answer: &Bound<'_, PyAny>) -> Result<SummaryReply, SummarizerError> {
    let parse = |what: &str| SummarizerError::new(FailureKind::Parse, what.to_owned());
    if let Ok(text) = answer.cast::<PyString>() {
        return Ok(SummaryReply::new(
            text.to_string(),
            StopReason::Complete,
            Usage::default(),
        ));
    }
    let dict = answer
        .cast::<PyDict>()
        .map_err(|_| parse("the summarizer must return a str or a dict with `text`"))?;
    let text: String = dict
        .get_item("text")
        .ok()
        .flatten()
        .and_then(|t| t.extract().ok())
        .ok_or_else(|| parse("the summarizer's dict has no str `text`"))?;
    let truncated = dict
        .get_item("truncated")
        .ok()
        .flatten()
        .map(|t| t.is_truthy().unwrap_or(false))
        .unwrap_or(false);
    let mut usage = Usage::default();
    if let Some(u) = dict.get_item("usage").ok().flatten() {
        let u = u
            .cast::<PyDict>()
            .map_err(|_| parse("the summarizer's `usage` must be a dict"))?;
        for (key, slot) in [
            ("input_tokens", &mut usage.input_tokens),
            ("output_tokens", &mut usage.output_tokens),
            ("cache_read_tokens", &mut usage.cache_read_tokens),
            ("cache_write_tokens", &mut usage.cache_write_tokens),
        ] {
            if let Some(v) = u.get_item(key).ok().flatten() {
                *slot = v
                    .extract()
                    .map_err(|_| parse("usage counts must be non-negative ints"))?;
            }
        }
    }
    Ok(SummaryReply::new(
        text,
        if truncated {
            StopReason::Truncated
        } else {
            StopReason::Complete
        },
        usage,
    ))
}

#[async_trait]
impl Summarizer for CallableSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let callable = Python::attach(|py| self.callable.clone_ref(py));
        // The call holds the GIL on a blocking thread; the pass's runtime thread stays free
        // to notice a cancellation (the Python call then finishes on its own, unread).
        let task = tokio::task::spawn_blocking(move || call(&callable, &request));
        tokio::select! {
            joined = task => joined.unwrap_or_else(|e| Err(SummarizerError::new(FailureKind::Other, format!("the summarizer thread failed: {e}")))),
            () = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "the compaction was cancelled")),
        }
    }
}
