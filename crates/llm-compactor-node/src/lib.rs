//! The Node binding of llm-compactor: the `llm-compactor` npm package's native addon.
//!
//! Thin on purpose, as the Python binding is: every rule lives in the library. Messages
//! come in as JSON text (`index.js` calls `JSON.stringify`, V8's own serializer) and the
//! result goes back as JSON text for `JSON.parse`: measured on a 99k-token trajectory,
//! napi-rs's object-by-object conversion made a pass 7.9x the Rust call, the text 1.6-2.1x
//! (BENCHMARKS.md, "Node package"). They are read by the library's shared binding codec
//! ([`llm_compactor::format::caller`]: OpenAI chat messages, Anthropic turns with their
//! `system`, Responses items, or a whole request object); the result comes back in the
//! caller's own format and shape. A pass runs on napi-rs's tokio runtime, off the event
//! loop: `compact` returns a Promise.
//!
//! Errors are instances of `index.js`'s `CompactorError` subclasses, each with a `code`
//! (`errors.rs`): `ConfigError` for an option (naming it), `InvalidInputError` for the
//! messages (naming the index), `SessionError`, `ContextExhaustedError`, `BusyError`.
//!
//! Beside the one-shot `compact`: `ContextManager` (`manager.rs`: the library's agent loop,
//! passes prepared in the background by default when the summarizer is a model) and
//! `Session` (`session.rs`: a transcript: replay, the originals, a handle expanded).

// No `forbid(unsafe_code)` here, unlike the Python binding: napi-rs's `#[napi]` expands
// to the FFI registration code (unsafe, generated), and allows it item by item. This
// crate's own code has no `unsafe`.
#![deny(unsafe_code)]

mod errors;
mod manager;
mod options;
mod result;
mod session;
mod summarizer;

use llm_compactor::CompactOptions;
use llm_compactor::format::caller;
use napi::Result;
use napi_derive::napi;
use serde_json::Value;

use options::Options;

/// An option the caller got wrong: a `ConfigError`, naming the option when the problem
/// does (serde's "unknown field `x`").
pub(crate) fn invalid(problem: impl std::fmt::Display) -> napi::Error {
    let problem = problem.to_string();
    let field = problem
        .split_once("unknown field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(field, _)| field.to_owned());
    errors::config(problem, field.as_deref())
}

/// The caller's messages read as the library's conversation, with how to write it back.
fn read(messages: Value, options: &Options) -> Result<(Vec<llm_compactor::Message>, caller::Wire)> {
    let format = options.format().map_err(|e| errors::config(e, Some("format")))?;
    caller::read(messages, format, options.system.clone()).map_err(errors::wire)
}

/// JSON text from `index.js` as a value (`what` names it in the error).
pub(crate) fn parse(json: &str, what: &str) -> Result<Value> {
    serde_json::from_str(json).map_err(|e| errors::input(format!("{what} is not JSON: {e}")))
}

/// The options object's JSON text (absent: every default).
pub(crate) fn read_options(json: Option<String>) -> Result<Options> {
    let value = json.map(|j| parse(&j, "options")).transpose()?;
    Options::read(value).map_err(invalid)
}

/// The compactor `options` describe, with the caller's summarizer function when given
/// (both a function and `options.summarizer` is an error).
pub(crate) fn build_compactor<const WEAK: bool>(
    options: &Options,
    summarizer: Option<summarizer::SummarizerFn<WEAK>>,
) -> Result<llm_compactor::Compactor> {
    let mut compactor = options.compactor().map_err(invalid)?;
    if let Some(function) = summarizer {
        if options.overlay.summarizer.is_some() {
            return Err(errors::config(
                "pass either a summarizer function or options.summarizer, not both",
                Some("summarizer"),
            ));
        }
        compactor = compactor.with_summarizer(std::sync::Arc::new(summarizer::JsSummarizer::new(function)));
    }
    Ok(compactor)
}

/// The conversation's tokens, with `options.counter` (`o200k` unless named).
#[napi(js_name = "countTokens")]
pub fn count_tokens(messages: String, options: Option<String>) -> Result<u32> {
    let options = read_options(options)?;
    let messages = parse(&messages, "messages")?;
    let (messages, _) = read(messages, &options)?;
    let counter = options.counter().map_err(|e| errors::config(e, Some("counter")))?;
    Ok(u32::try_from(counter.count_messages(&messages)).unwrap_or(u32::MAX))
}

/// The format `messages` are read in when `format` is `auto`.
#[napi(js_name = "detectFormat")]
pub fn detect_format(messages: String) -> Result<String> {
    let (_, wire) = read(parse(&messages, "messages")?, &Options::default())?;
    Ok(wire.format().name().to_owned())
}

/// One compaction pass over `messages` (like a manual `/compact`: it compacts even below
/// the trigger), resolving to the result with the messages in the caller's format.
/// `summarizer`: a JavaScript function (wrapped by `index.js`) that writes the summary;
/// absent, `options.summarizer` names one (`ledger` by default).
#[napi]
pub async fn compact(
    messages: String,
    options: Option<String>,
    summarizer: Option<summarizer::SummarizerFn>,
) -> Result<String> {
    let options = read_options(options)?;
    let (messages, wire) = read(parse(&messages, "messages")?, &options)?;
    let compactor = build_compactor(&options, summarizer)?;
    let pass = CompactOptions::new().with_target(options.overlay.target);
    let result = compactor.compact(&messages, pass).await.map_err(errors::compact)?;
    let value = result::to_js(result, &wire).map_err(|e| errors::raise(errors::Class::Compactor, e, None, None))?;
    Ok(value.to_string())
}
