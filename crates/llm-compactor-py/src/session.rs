//! `_core.Session` (the replayable transcript) and `_core.ContextManager` (the agent-loop
//! glue), over the library's [`Session`] and [`ContextManager`].
//!
//! Both hold their transcript behind a mutex (a Python object may be shared between
//! threads) and release the GIL while they write, replay or compact. Messages go in and
//! out in the session's wire format, as lists.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use llm_compactor::session::{BackendRoom, ContextManager, Prepared, RequestShape, Session, SessionOptions};
use llm_compactor::{CompactOptions, Message, Usage};
use pyo3::prelude::*;
use serde_json::Value;

use crate::compactor::{CancelToken, PyCompactor, parse_json, read_messages, result_json};
use crate::errors;
use crate::runtime;
use crate::wire::{self, Wire, WireFormat};

fn session_format(format: &str) -> PyResult<WireFormat> {
    wire::parse_format(format)
        .map_err(|e| errors::setting("format", e))?
        .ok_or_else(|| {
            errors::setting(
                "format",
                "a session needs a format (not auto): openai, anthropic or responses",
            )
        })
}

/// Opens the transcript at `path`, creating it when absent.
fn open_or_create(path: &PathBuf) -> PyResult<Session> {
    if path.exists() {
        Session::open(path, SessionOptions::new())
            .map(|(session, _)| session)
            .map_err(errors::session)
    } else {
        Session::create(path, SessionOptions::new()).map_err(errors::session)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn read_list(json: &str, format: WireFormat) -> PyResult<Vec<Message>> {
    read_messages(json, format.name(), None).map(|(messages, _)| messages)
}

fn write_list(format: WireFormat, messages: &[Message]) -> String {
    Wire::empty(format).write_list(messages.to_vec()).to_string()
}

/// A session transcript (JSONL, append-only, replays byte-identically).
#[pyclass(name = "Session", module = "llm_compactor._core", frozen)]
pub struct PySession {
    session: Mutex<Option<Session>>,
    format: WireFormat,
    path: PathBuf,
}

impl PySession {
    fn with<R>(&self, f: impl FnOnce(&mut Session) -> PyResult<R>) -> PyResult<R> {
        let mut guard = lock(&self.session);
        let session = guard.as_mut().ok_or_else(|| {
            errors::raise(
                "SessionError",
                format!("{}: the session is closed", self.path.display()),
                None,
                None,
            )
        })?;
        f(session)
    }
}

#[pymethods]
impl PySession {
    #[new]
    #[pyo3(signature = (path, format="openai"))]
    fn new(py: Python<'_>, path: PathBuf, format: &str) -> PyResult<Self> {
        let format = session_format(format)?;
        let session = py.detach(|| open_or_create(&path))?;
        Ok(PySession {
            session: Mutex::new(Some(session)),
            format,
            path,
        })
    }

    /// The transcript file.
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The session's wire format.
    fn format(&self) -> &'static str {
        self.format.name()
    }

    /// Appends messages (a list in the session's format) with one write.
    fn append(&self, py: Python<'_>, messages: &str) -> PyResult<usize> {
        py.detach(|| {
            let messages = read_list(messages, self.format)?;
            self.with(|s| {
                s.append_messages(messages)
                    .map(<[Message]>::len)
                    .map_err(errors::session)
            })
        })
    }

    /// The conversation the transcript replays to, as a list in the session's format.
    fn replay(&self, py: Python<'_>) -> PyResult<String> {
        py.detach(|| self.with(|s| Ok(write_list(self.format, s.messages()))))
    }

    /// Runs one pass of `compactor` over the conversation and records it; the result as
    /// JSON text.
    #[pyo3(signature = (compactor, target=None, focus=None, cancel=None))]
    fn compact(
        &self,
        py: Python<'_>,
        compactor: &PyCompactor,
        target: Option<usize>,
        focus: Option<String>,
        cancel: Option<Py<CancelToken>>,
    ) -> PyResult<String> {
        let inner = compactor.inner.clone();
        py.detach(|| {
            self.with(|s| {
                let options = CompactOptions::new()
                    .with_target(target)
                    .with_focus(focus)
                    .with_cancel(cancel.map(|c| c.get().token.clone()).unwrap_or_default());
                let result = runtime()
                    .block_on(inner.compact(s.messages(), options))
                    .map_err(errors::compact)?;
                s.record_result(&result).map_err(errors::session)?;
                result_json(result, &Wire::empty(self.format))
            })
        })
    }

    /// Closes the transcript (releases its lock).
    fn close(&self) {
        lock(&self.session).take();
    }
}

/// The agent-loop glue: count each request, compact when needed (recording the pass),
/// feed billed usage to the calibrated counter, append each response.
#[pyclass(name = "ContextManager", module = "llm_compactor._core", frozen)]
pub struct PyContextManager {
    manager: Mutex<ContextManager>,
    format: WireFormat,
}

fn prepared_json(prepared: Prepared, format: WireFormat) -> PyResult<String> {
    let mut object = serde_json::Map::new();
    object.insert("messages".into(), Wire::empty(format).write_list(prepared.messages));
    object.insert("request_tokens".into(), Value::from(prepared.request_tokens));
    object.insert("stale_thinking".into(), Value::from(prepared.stale_thinking));
    let pass = match prepared.pass {
        Some(pass) => {
            let reason = serde_json::to_value(pass.reason).unwrap_or(Value::Null);
            let result: Value =
                serde_json::from_str(&result_json(pass.result, &Wire::empty(format))?).unwrap_or(Value::Null);
            serde_json::json!({ "reason": reason, "result": result })
        }
        None => Value::Null,
    };
    object.insert("pass".into(), pass);
    Ok(Value::Object(object).to_string())
}

fn request_parts(tools: Option<&str>) -> PyResult<Vec<Value>> {
    match tools {
        None => Ok(Vec::new()),
        Some(json) => match parse_json(json, "tools")? {
            Value::Array(tools) => Ok(tools),
            _ => Err(errors::setting("tools", "tools must be a list of tool declarations")),
        },
    }
}

#[pymethods]
impl PyContextManager {
    #[new]
    #[pyo3(signature = (compactor, path, format="openai", window=None, completion_reserve=0, safety_margin=0, max_forced_compactions=None, prepare=None))]
    // Python's keyword arguments, one parameter each (the idiom there, not a builder).
    #[allow(clippy::too_many_arguments)]
    fn new(
        compactor: &PyCompactor,
        path: PathBuf,
        format: &str,
        window: Option<usize>,
        completion_reserve: usize,
        safety_margin: usize,
        max_forced_compactions: Option<u32>,
        prepare: Option<bool>,
    ) -> PyResult<Self> {
        let format = session_format(format)?;
        let session = Python::attach(|py| py.detach(|| open_or_create(&path)))?;
        let mut manager = ContextManager::new(compactor.inner.clone(), session);
        if let Some(window) = window {
            manager = manager.with_room(BackendRoom {
                window,
                completion_reserve,
                safety_margin,
            });
        }
        if let Some(max) = max_forced_compactions {
            manager = manager.with_max_forced_compactions(max);
        }
        // `None`: the library's default (prepared when the summarizer is a model).
        match prepare {
            Some(false) => manager = manager.without_preparation(),
            Some(true) if !manager.prepares() => {
                manager = manager.with_preparation(llm_compactor::session::PrepareOptions::default());
            }
            _ => {}
        }
        if let Some(calibrated) = compactor.calibrated.clone() {
            manager = manager.with_usage_recorder(calibrated);
        }
        Ok(PyContextManager {
            manager: Mutex::new(manager),
            format,
        })
    }

    /// Appends messages (the user's, the harness's) to the conversation and transcript.
    fn push(&self, py: Python<'_>, messages: &str) -> PyResult<()> {
        py.detach(|| {
            let messages = read_list(messages, self.format)?;
            let mut manager = lock(&self.manager);
            for message in messages {
                manager.push(message).map_err(errors::manager)?;
            }
            Ok(())
        })
    }

    /// Starts a run (renews the forced-pass allowance).
    fn begin_run(&self) {
        lock(&self.manager).begin_run();
    }

    /// Before a request: the conversation to send (compacted when needed), as JSON text
    /// `{messages, request_tokens, pass}`.
    #[pyo3(signature = (tools=None, context="", cancel=None))]
    fn prepare(
        &self,
        py: Python<'_>,
        tools: Option<&str>,
        context: &str,
        cancel: Option<Py<CancelToken>>,
    ) -> PyResult<String> {
        py.detach(|| {
            let tools = request_parts(tools)?;
            let request = RequestShape::new().with_tools(&tools).with_context(context);
            let mut manager = lock(&self.manager);
            let token = cancel.map(|c| c.get().token.clone()).unwrap_or_default();
            let prepared = runtime()
                .block_on(manager.prepare(request, token))
                .map_err(errors::manager)?;
            prepared_json(prepared, self.format)
        })
    }

    /// After the provider refused the request as too long: a forced pass; as `prepare`.
    #[pyo3(signature = (tools=None, context="", cancel=None))]
    fn on_context_length_exceeded(
        &self,
        py: Python<'_>,
        tools: Option<&str>,
        context: &str,
        cancel: Option<Py<CancelToken>>,
    ) -> PyResult<String> {
        py.detach(|| {
            let tools = request_parts(tools)?;
            let request = RequestShape::new().with_tools(&tools).with_context(context);
            let mut manager = lock(&self.manager);
            let token = cancel.map(|c| c.get().token.clone()).unwrap_or_default();
            let prepared = runtime()
                .block_on(manager.on_context_length_exceeded(request, token))
                .map_err(errors::manager)?;
            prepared_json(prepared, self.format)
        })
    }

    /// After a response: records its usage (JSON text of `{input_tokens, ...}`, or
    /// `None`) and appends the new messages.
    #[pyo3(signature = (usage, model, messages))]
    fn record_response(&self, py: Python<'_>, usage: Option<&str>, model: &str, messages: &str) -> PyResult<()> {
        py.detach(|| {
            let usage: Option<Usage> = usage
                .map(|u| serde_json::from_str(u).map_err(|e| errors::setting("usage", format!("invalid usage: {e}"))))
                .transpose()?;
            let messages = read_list(messages, self.format)?;
            lock(&self.manager)
                .record_response(usage, model, messages)
                .map_err(errors::manager)
        })
    }

    /// The conversation as it stands, as a list in the manager's format.
    fn messages(&self, py: Python<'_>) -> String {
        py.detach(|| write_list(self.format, lock(&self.manager).messages()))
    }
}
