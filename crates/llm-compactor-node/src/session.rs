//! `Session`: a transcript (the library's [`Session`]) from Node: append, replay, the
//! originals every pass left in place, a handle expanded, a recorded pass.
//!
//! `index.js` wraps this class (`NativeSession`) into the typed `Session`: messages cross
//! as JSON text in the session's wire format. The transcript sits behind an async mutex:
//! a pass (`compact`) holds it while it awaits its summarizer on the event loop, and a
//! synchronous call made meanwhile is refused with a `BusyError` rather than blocking the
//! loop the summarizer needs.

use std::path::PathBuf;
use std::sync::Arc;

use llm_compactor::format::caller::{self, Wire, WireFormat};
use llm_compactor::session::{Expansion, Session as Transcript, SessionOptions};
use llm_compactor::{CompactOptions, Message};
use napi::Result;
use napi_derive::napi;
use serde_json::json;
use tokio::sync::{Mutex, MutexGuard};

use crate::errors;
use crate::summarizer::SummarizerFn;

/// The wire format a session or manager writes (`auto` is refused: a transcript keeps one).
pub fn session_format(name: &str) -> Result<WireFormat> {
    caller::parse_format(name)
        .map_err(|e| errors::config(e, Some("format")))?
        .ok_or_else(|| {
            errors::config(
                "a session needs a format (not auto): openai, anthropic or responses",
                Some("format"),
            )
        })
}

/// Opens the transcript at `path`, creating it when absent (a torn last line is repaired).
pub fn open_or_create(path: &PathBuf) -> Result<Transcript> {
    let opened = if path.exists() {
        Transcript::open(path, SessionOptions::new()).map(|(session, _)| session)
    } else {
        Transcript::create(path, SessionOptions::new())
    };
    opened.map_err(errors::session)
}

/// A list of messages (JSON text) in `format`.
pub fn read_list(json: &str, format: WireFormat) -> Result<Vec<Message>> {
    let value = crate::parse(json, "messages")?;
    caller::read(value, Some(format), None)
        .map(|(messages, _)| messages)
        .map_err(errors::wire)
}

/// `messages` as JSON text of a list in `format`.
pub fn write_list(format: WireFormat, messages: Vec<Message>) -> String {
    Wire::empty(format).write_list(messages).to_string()
}

/// An expansion as JSON text of `{handle, messages}` in `format` (`null` when none).
pub fn expansion_json(format: WireFormat, expansion: Option<Expansion>) -> String {
    match expansion {
        None => "null".to_owned(),
        Some(expansion) => json!({
            "handle": expansion.handle,
            "messages": Wire::empty(format).write_list(expansion.messages),
        })
        .to_string(),
    }
}

/// Every message ever appended to the transcript at `path` (what no pass deletes).
pub fn originals(path: &std::path::Path) -> Result<Vec<Message>> {
    llm_compactor::session::Transcript::read(path)
        .map(|t| t.originals())
        .map_err(errors::session)
}

/// A session transcript (JSONL, append-only, replays byte-identically).
#[napi(js_name = "NativeSession")]
pub struct Session {
    session: Arc<Mutex<Option<Transcript>>>,
    format: WireFormat,
    path: PathBuf,
}

impl Session {
    fn guard(&self) -> Result<MutexGuard<'_, Option<Transcript>>> {
        self.session.try_lock().map_err(|_| errors::busy("the session"))
    }

    fn closed(&self) -> napi::Error {
        errors::raise(
            errors::Class::Session,
            format!("{}: the session is closed", self.path.display()),
            None,
            None,
        )
    }

    fn with<R>(&self, f: impl FnOnce(&mut Transcript) -> Result<R>) -> Result<R> {
        let mut guard = self.guard()?;
        let session = guard.as_mut().ok_or_else(|| self.closed())?;
        f(session)
    }
}

#[napi]
impl Session {
    /// Opens the transcript at `path` in `format`, creating it when absent.
    #[napi(constructor)]
    pub fn new(path: String, format: String) -> Result<Self> {
        let format = session_format(&format)?;
        let path = PathBuf::from(path);
        let session = open_or_create(&path)?;
        Ok(Session {
            session: Arc::new(Mutex::new(Some(session))),
            format,
            path,
        })
    }

    /// The transcript file.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// The session's wire format.
    #[napi(getter)]
    pub fn format(&self) -> String {
        self.format.name().to_owned()
    }

    /// Appends messages (a list in the session's format) with one write; how many.
    #[napi]
    pub fn append(&self, messages: String) -> Result<u32> {
        let messages = read_list(&messages, self.format)?;
        self.with(|s| {
            s.append_messages(messages)
                .map(|m| u32::try_from(m.len()).unwrap_or(u32::MAX))
                .map_err(errors::session)
        })
    }

    /// The conversation the transcript replays to.
    #[napi]
    pub fn replay(&self) -> Result<String> {
        self.with(|s| Ok(write_list(self.format, s.messages().to_vec())))
    }

    /// Every message ever appended, as recorded: the lossless export (a pass replaces
    /// messages in the replay, never in the file).
    #[napi]
    pub fn originals(&self) -> Result<String> {
        self.with(|_| Ok(()))?;
        Ok(write_list(self.format, originals(&self.path)?))
    }

    /// The original messages behind `handle` (as a summary or stub names it, or a
    /// `#first..#last` range): `{handle, messages}`, or `null` when none carries it.
    #[napi]
    pub fn expand(&self, handle: String) -> Result<String> {
        let expansion = self.with(|s| s.expand(&handle).map_err(errors::session))?;
        Ok(expansion_json(self.format, expansion))
    }

    /// One pass over the conversation, recorded in the transcript; the result as JSON
    /// text (the `compact` result).
    #[napi]
    pub async fn compact(&self, options: Option<String>, summarizer: Option<SummarizerFn>) -> Result<String> {
        let options = crate::read_options(options)?;
        let compactor = crate::build_compactor(&options, summarizer)?;
        let mut guard = self
            .session
            .clone()
            .try_lock_owned()
            .map_err(|_| errors::busy("the session"))?;
        let session = guard.as_mut().ok_or_else(|| self.closed())?;
        let pass = CompactOptions::new().with_target(options.overlay.target);
        let result = compactor
            .compact(session.messages(), pass)
            .await
            .map_err(errors::compact)?;
        session.record_result(&result).map_err(errors::session)?;
        let value = crate::result::to_js(result, &Wire::empty(self.format))
            .map_err(|e| errors::raise(errors::Class::Compactor, e, None, None))?;
        Ok(value.to_string())
    }

    /// Releases the transcript's lock; later calls are `SessionError`s.
    #[napi]
    pub fn close(&self) -> Result<()> {
        self.guard()?.take();
        Ok(())
    }
}
