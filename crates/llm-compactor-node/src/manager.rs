//! `ContextManager`: the library's agent loop ([`LibManager`]) from Node.
//!
//! Before each model request `prepare` counts the request (conversation, tools, context)
//! and compacts when needed, recording the pass in the transcript; after each response
//! `recordResponse` appends the new messages. As in the library and the Python binding,
//! a model summarizer (a JavaScript function) gets its passes prepared in the background
//! by default, so that a request below the hard limit never waits for a summary;
//! `prepare: false` runs every pass inline, `prepare: true` prepares with any summarizer.
//!
//! `prepare` returns a Promise: the pass runs on napi-rs's tokio runtime, and a
//! JavaScript summarizer is called on the event loop through a weak thread-safe function
//! (the manager does not keep the process alive). The manager sits behind an async
//! mutex: a synchronous call while a `prepare` is still running is a `BusyError`.

use std::path::PathBuf;
use std::sync::Arc;

use llm_compactor::Usage;
use llm_compactor::format::caller::{Wire, WireFormat};
use llm_compactor::session::{
    BackendRoom, ContextManager as LibManager, PrepareOptions, Prepared, RequestShape, Transcript,
};
use llm_compactor::session::{answer_expand, expand_in};
use napi::Result;
use napi_derive::napi;
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::{Mutex, MutexGuard};
use tokio_util::sync::CancellationToken;

use crate::errors;
use crate::session::{expansion_json, open_or_create, read_list, session_format, write_list};
use crate::summarizer::SummarizerFn;

/// What the manager is told besides the compactor's options.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Settings {
    /// The backend's context window (its usable room decides a `Room` pass).
    window: Option<usize>,
    #[serde(default)]
    completion_reserve: usize,
    #[serde(default)]
    safety_margin: usize,
    max_forced_compactions: Option<u32>,
    /// `None`: the library's default (prepared when the summarizer is a model).
    prepare: Option<bool>,
}

/// The most chars of an expansion answer unless told.
const DEFAULT_EXPAND_CHARS: u32 = 40_000;

/// The agent-loop glue.
#[napi(js_name = "NativeContextManager")]
pub struct ContextManager {
    manager: Arc<Mutex<LibManager>>,
    format: WireFormat,
    path: PathBuf,
}

fn settings(json: Option<String>) -> Result<Settings> {
    match json {
        None => Ok(Settings::default()),
        Some(json) => serde_json::from_str(&json).map_err(crate::invalid),
    }
}

fn tools(json: Option<String>) -> Result<Vec<Value>> {
    match json.map(|j| crate::parse(&j, "tools")).transpose()? {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(tools)) => Ok(tools),
        Some(_) => Err(errors::config(
            "tools must be a list of tool declarations",
            Some("tools"),
        )),
    }
}

/// `prepared` as JSON text: `{messages, requestTokens, staleThinking, pass: {reason, result} | null}`.
fn prepared_json(prepared: Prepared, format: WireFormat) -> Result<String> {
    let mut object = Map::new();
    object.insert("messages".into(), Wire::empty(format).write_list(prepared.messages));
    object.insert("requestTokens".into(), Value::from(prepared.request_tokens));
    object.insert("staleThinking".into(), Value::from(prepared.stale_thinking));
    let pass = match prepared.pass {
        Some(pass) => {
            let reason = serde_json::to_value(pass.reason).unwrap_or(Value::Null);
            let result = crate::result::to_js(pass.result, &Wire::empty(format))
                .map_err(|e| errors::raise(errors::Class::Compactor, e, None, None))?;
            serde_json::json!({ "reason": reason, "result": result })
        }
        None => Value::Null,
    };
    object.insert("pass".into(), pass);
    Ok(Value::Object(object).to_string())
}

impl ContextManager {
    fn guard(&self) -> Result<MutexGuard<'_, LibManager>> {
        self.manager.try_lock().map_err(|_| errors::busy("the context manager"))
    }
}

#[napi]
impl ContextManager {
    /// A manager over the transcript at `path` (created when absent, resumed otherwise).
    /// `options`: the compactor's (as `compact`'s); `settings`: the manager's own;
    /// `summarizer`: the caller's function, if any.
    #[napi(constructor)]
    pub fn new(
        path: String,
        format: String,
        options: Option<String>,
        settings_json: Option<String>,
        summarizer: Option<SummarizerFn<true>>,
    ) -> Result<Self> {
        let format = session_format(&format)?;
        let options = crate::read_options(options)?;
        let settings = settings(settings_json)?;
        let compactor = crate::build_compactor(&options, summarizer)?;
        let path = PathBuf::from(path);
        let session = open_or_create(&path)?;
        let mut manager = LibManager::new(Arc::new(compactor), session);
        if let Some(window) = settings.window {
            manager = manager.with_room(BackendRoom {
                window,
                completion_reserve: settings.completion_reserve,
                safety_margin: settings.safety_margin,
            });
        }
        if let Some(max) = settings.max_forced_compactions {
            manager = manager.with_max_forced_compactions(max);
        }
        match settings.prepare {
            Some(false) => manager = manager.without_preparation(),
            Some(true) if !manager.prepares() => manager = manager.with_preparation(PrepareOptions::default()),
            _ => {}
        }
        Ok(ContextManager {
            manager: Arc::new(Mutex::new(manager)),
            format,
            path,
        })
    }

    /// The transcript file.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// True when passes are prepared in the background.
    #[napi(getter)]
    pub fn prepares(&self) -> Result<bool> {
        Ok(self.guard()?.prepares())
    }

    /// Appends messages (the user's, the harness's) to the conversation and transcript.
    #[napi]
    pub fn push(&self, messages: String) -> Result<()> {
        let messages = read_list(&messages, self.format)?;
        let mut manager = self.guard()?;
        for message in messages {
            manager.push(message).map_err(errors::manager)?;
        }
        Ok(())
    }

    /// Starts a run (renews the forced-pass allowance).
    #[napi(js_name = "beginRun")]
    pub fn begin_run(&self) -> Result<()> {
        self.guard()?.begin_run();
        Ok(())
    }

    /// Before a request: the conversation to send, compacted first when needed.
    #[napi]
    pub async fn prepare(&self, tools_json: Option<String>, context: Option<String>) -> Result<String> {
        let tools = tools(tools_json)?;
        let context = context.unwrap_or_default();
        let request = RequestShape::new().with_tools(&tools).with_context(&context);
        let mut manager = self.manager.lock().await;
        let prepared = manager
            .prepare(request, CancellationToken::new())
            .await
            .map_err(errors::manager)?;
        prepared_json(prepared, self.format)
    }

    /// After the provider refused the request as too long: a forced pass; as `prepare`.
    #[napi(js_name = "onContextLengthExceeded")]
    pub async fn on_context_length_exceeded(
        &self,
        tools_json: Option<String>,
        context: Option<String>,
    ) -> Result<String> {
        let tools = tools(tools_json)?;
        let context = context.unwrap_or_default();
        let request = RequestShape::new().with_tools(&tools).with_context(&context);
        let mut manager = self.manager.lock().await;
        let prepared = manager
            .on_context_length_exceeded(request, CancellationToken::new())
            .await
            .map_err(errors::manager)?;
        prepared_json(prepared, self.format)
    }

    /// After a response: records its billed usage (JSON of `{input_tokens, ...}`) and
    /// appends the new messages (the assistant turn, then its tool results).
    #[napi(js_name = "recordResponse")]
    pub fn record_response(&self, messages: String, usage: Option<String>, model: Option<String>) -> Result<()> {
        let usage: Option<Usage> = usage
            .map(|u| serde_json::from_str(&u).map_err(|e| errors::config(format!("invalid usage: {e}"), Some("usage"))))
            .transpose()?;
        let messages = read_list(&messages, self.format)?;
        self.guard()?
            .record_response(usage, model.as_deref().unwrap_or(""), messages)
            .map_err(errors::manager)
    }

    /// The conversation as it stands.
    #[napi]
    pub fn messages(&self) -> Result<String> {
        Ok(write_list(self.format, self.guard()?.messages().to_vec()))
    }

    /// Every message ever appended to the transcript, as recorded (the lossless export).
    #[napi]
    pub fn originals(&self) -> Result<String> {
        drop(self.guard()?);
        Ok(write_list(self.format, crate::session::originals(&self.path)?))
    }

    /// The original messages behind `handle`: `{handle, messages}` or `null`.
    #[napi]
    pub fn expand(&self, handle: String) -> Result<String> {
        drop(self.guard()?);
        let originals = Transcript::read(&self.path).map_err(errors::session)?.originals();
        Ok(expansion_json(self.format, expand_in(&originals, &handle)))
    }

    /// The `compactor_expand` tool's declaration (OpenAI chat shape), as JSON text.
    #[napi(js_name = "expandTool")]
    pub fn expand_tool(&self) -> Result<String> {
        Ok(self.guard()?.expand_tool().to_string())
    }

    /// The answer to a `compactor_expand` call with `arguments` (its JSON text), at most
    /// `max_chars` chars (40,000 unless told).
    #[napi(js_name = "answerExpand")]
    pub fn answer_expand(&self, arguments: String, max_chars: Option<u32>) -> Result<String> {
        drop(self.guard()?);
        let originals = Transcript::read(&self.path).map_err(errors::session)?.originals();
        let max = max_chars.unwrap_or(DEFAULT_EXPAND_CHARS) as usize;
        Ok(answer_expand(&originals, &arguments, max))
    }

    /// Stops a background preparation (awaits its end); the manager stays usable.
    #[napi]
    pub async fn shutdown(&self) -> Result<()> {
        self.manager.lock().await.shutdown().await;
        Ok(())
    }
}
