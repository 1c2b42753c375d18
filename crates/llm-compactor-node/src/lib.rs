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
//! Errors are JavaScript `Error`s whose `code` says whose fault it is:
//! `InvalidArg` for the caller's input or options (the message names the message index
//! or option), `GenericFailure` for the library's own failure.

// No `forbid(unsafe_code)` here, unlike the Python binding: napi-rs's `#[napi]` expands
// to the FFI registration code (unsafe, generated), and allows it item by item. This
// crate's own code has no `unsafe`.
#![deny(unsafe_code)]

mod options;
mod result;
mod summarizer;

use llm_compactor::CompactOptions;
use llm_compactor::format::caller;
use napi::{Error, Result, Status};
use napi_derive::napi;
use serde_json::Value;

use options::Options;

fn invalid(problem: impl std::fmt::Display) -> Error {
    Error::new(Status::InvalidArg, problem.to_string())
}

/// The caller's messages read as the library's conversation, with how to write it back.
fn read(messages: Value, options: &Options) -> Result<(Vec<llm_compactor::Message>, caller::Wire)> {
    let format = options.format().map_err(invalid)?;
    caller::read(messages, format, options.system.clone()).map_err(|e| match e.index {
        Some(index) => invalid(format!("messages[{index}]: {}", e.problem)),
        None => invalid(e.problem),
    })
}

/// JSON text from `index.js` as a value (`what` names it in the error).
fn parse(json: &str, what: &str) -> Result<Value> {
    serde_json::from_str(json).map_err(|e| invalid(format!("{what} is not JSON: {e}")))
}

/// The options object's JSON text (absent: every default).
fn read_options(json: Option<String>) -> Result<Options> {
    let value = json.map(|j| parse(&j, "options")).transpose()?;
    Options::read(value).map_err(invalid)
}

/// The conversation's tokens, with `options.counter` (`o200k` unless named).
#[napi(js_name = "countTokens")]
pub fn count_tokens(messages: String, options: Option<String>) -> Result<u32> {
    let options = read_options(options)?;
    let messages = parse(&messages, "messages")?;
    let (messages, _) = read(messages, &options)?;
    let counter = options.counter().map_err(invalid)?;
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
    let mut compactor = options.compactor().map_err(invalid)?;
    if let Some(function) = summarizer {
        if options.overlay.summarizer.is_some() {
            return Err(invalid(
                "pass either a summarizer function or options.summarizer, not both",
            ));
        }
        compactor = compactor.with_summarizer(std::sync::Arc::new(summarizer::JsSummarizer::new(function)));
    }
    let pass = CompactOptions {
        target: options.overlay.target,
        ..CompactOptions::default()
    };
    let result = compactor.compact(&messages, pass).await.map_err(|e| match e {
        llm_compactor::CompactError::InvalidInput { index, problem } => {
            invalid(format!("messages[{index}]: {problem}"))
        }
        llm_compactor::CompactError::InvalidOptions(problem) => invalid(problem),
        other => Error::new(Status::GenericFailure, other.to_string()),
    })?;
    let value = result::to_js(result, &wire).map_err(|e| Error::new(Status::GenericFailure, e))?;
    Ok(value.to_string())
}
