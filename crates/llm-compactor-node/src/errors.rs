//! The library's typed errors as JavaScript errors of `index.js`'s classes.
//!
//! napi-rs rejects with a plain `Error`; its message here starts with a one-line tag
//! (`llm-compactor:` then JSON naming the class, the message index and the option at
//! fault) that `index.js` reads to throw an instance of the right subclass
//! (`ConfigError`, `InvalidInputError`, `UnsupportedInputError`, `SessionError`,
//! `ContextExhaustedError`, `BusyError`, all `CompactorError`s with a `code`). The tag
//! never reaches the caller.

use llm_compactor::CompactError;
use llm_compactor::format::caller::WireError;
use llm_compactor::session::{ManagerError, SessionError};
use napi::{Error, Status};
use serde_json::json;

/// The tag's prefix, as `index.js` matches it.
const TAG: &str = "llm-compactor:";

/// The JavaScript class of an error.
#[derive(Clone, Copy, Debug)]
pub enum Class {
    /// The root (the library's own failure).
    Compactor,
    /// The conversation cannot be read, or is malformed at an index.
    InvalidInput,
    /// A well-formed request with parts the codec does not model.
    UnsupportedInput,
    /// An invalid option.
    Config,
    /// A transcript could not be created, read or appended to.
    Session,
    /// Even the best pass does not fit.
    ContextExhausted,
    /// The object is in use by a pass still running.
    Busy,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::Compactor => "CompactorError",
            Class::InvalidInput => "InvalidInputError",
            Class::UnsupportedInput => "UnsupportedInputError",
            Class::Config => "ConfigError",
            Class::Session => "SessionError",
            Class::ContextExhausted => "ContextExhaustedError",
            Class::Busy => "BusyError",
        }
    }
}

/// An error of `class` with `message`, the message index and the option at fault.
pub fn raise(class: Class, message: impl std::fmt::Display, index: Option<usize>, field: Option<&str>) -> Error {
    let tag = json!({ "class": class.name(), "index": index, "field": field });
    let status = match class {
        Class::InvalidInput | Class::UnsupportedInput | Class::Config => Status::InvalidArg,
        _ => Status::GenericFailure,
    };
    Error::new(status, format!("{TAG}{tag}\n{message}"))
}

/// An invalid option (`field` names it when known).
pub fn config(problem: impl std::fmt::Display, field: Option<&str>) -> Error {
    raise(Class::Config, problem, None, field)
}

/// Unreadable input.
pub fn wire(error: WireError) -> Error {
    let class = if error.unsupported {
        Class::UnsupportedInput
    } else {
        Class::InvalidInput
    };
    match error.index {
        Some(index) => raise(
            class,
            format!("messages[{index}]: {}", error.problem),
            Some(index),
            None,
        ),
        None => raise(class, error.problem, None, None),
    }
}

/// Input that is not JSON, or not the shape asked for.
pub fn input(problem: impl std::fmt::Display) -> Error {
    raise(Class::InvalidInput, problem, None, None)
}

/// A compaction that could not start.
pub fn compact(error: CompactError) -> Error {
    match error {
        CompactError::InvalidInput { index, problem } => raise(
            Class::InvalidInput,
            format!("messages[{index}]: {problem}"),
            Some(index),
            None,
        ),
        CompactError::InvalidOptions(problem) => config(problem, Some("target")),
        other => raise(Class::Compactor, other, None, None),
    }
}

/// A transcript error.
pub fn session(error: SessionError) -> Error {
    raise(Class::Session, error, None, None)
}

/// The agent loop's errors.
pub fn manager(error: ManagerError) -> Error {
    match error {
        ManagerError::Session(e) => session(e),
        ManagerError::Compact(e) => compact(e),
        other @ ManagerError::ContextExhausted { .. } => raise(Class::ContextExhausted, other, None, None),
        other => raise(Class::Compactor, other, None, None),
    }
}

/// An object still in use by a running pass.
pub fn busy(what: &str) -> Error {
    raise(
        Class::Busy,
        format!("{what} is busy: await the running call before this one"),
        None,
        None,
    )
}
