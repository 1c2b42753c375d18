//! How a summarizer call fails, and what the compactor does about it.
//!
//! The classification table of the spec lives here and nowhere else: every backend
//! reports *what happened* ([`FailureKind`]); [`FailureKind::class`] decides what it
//! means ([`FailureClass`]). An abort-class failure (400, 401, 402, 403, 404) is a
//! configuration or account problem that will not heal in eight seconds, so the compactor
//! goes straight to the hard trim without burning a retry.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

/// What the compactor does after a failed summarizer call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureClass {
    /// Will not heal by waiting: go to the hard trim at once.
    Abort,
    /// Try the next backend (with one summarizer: wait, then try again).
    Advance,
    /// Try the same backend again after a wait.
    RetrySame,
    /// The call succeeded but its answer is unusable (an empty summary): wait, then try
    /// again.
    Response,
}

impl FailureClass {
    /// True when another attempt may help.
    pub fn is_retryable(self) -> bool {
        !matches!(self, FailureClass::Abort)
    }
}

/// What went wrong with a summarizer call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FailureKind {
    /// The server answered with a non-success HTTP status.
    Http {
        /// The status code.
        status: u16,
    },
    /// The request exceeded the model's context window (a 400 that an agent loop wants
    /// to tell apart: it forces a compaction to the backend's usable room).
    ContextLengthExceeded {
        /// The status code, when it came over HTTP.
        status: Option<u16>,
    },
    /// The connection was made but the answer did not come in time.
    Timeout,
    /// The connection never completed.
    Connect,
    /// The response could not be parsed.
    Parse,
    /// The call succeeded but returned no text (or only whitespace).
    Empty,
    /// The call succeeded but the grounding gate found the text mostly repetition (a
    /// small model's loop): unusable, so retried like an empty answer.
    Degenerate,
    /// A guardrail hook blocked the request or rejected the response.
    Blocked,
    /// The backend is not configured or cannot run at all (no summarizer, a command
    /// that does not exist, a missing model file).
    Unavailable,
    /// The compaction was cancelled while the call was in flight.
    Cancelled,
    /// Anything else.
    Other,
}

impl FailureKind {
    /// The spec's classification table.
    ///
    /// ```
    /// use llm_compactor::summarize::{FailureClass, FailureKind};
    /// assert_eq!(FailureKind::Http { status: 401 }.class(), FailureClass::Abort);
    /// assert_eq!(FailureKind::Http { status: 429 }.class(), FailureClass::Advance);
    /// assert_eq!(FailureKind::Http { status: 503 }.class(), FailureClass::RetrySame);
    /// assert_eq!(FailureKind::Timeout.class(), FailureClass::Advance);
    /// assert_eq!(FailureKind::Connect.class(), FailureClass::RetrySame);
    /// assert_eq!(FailureKind::Empty.class(), FailureClass::Response);
    /// ```
    pub fn class(&self) -> FailureClass {
        match self {
            FailureKind::Http { status } => match status {
                400..=404 => FailureClass::Abort,
                429 => FailureClass::Advance,
                500..=599 => FailureClass::RetrySame,
                _ => FailureClass::Advance,
            },
            // A request too big for the summarizer will be exactly as big next time.
            FailureKind::ContextLengthExceeded { .. } => FailureClass::Abort,
            FailureKind::Timeout | FailureKind::Parse => FailureClass::Advance,
            FailureKind::Connect | FailureKind::Other => FailureClass::RetrySame,
            FailureKind::Empty | FailureKind::Degenerate => FailureClass::Response,
            FailureKind::Blocked | FailureKind::Unavailable | FailureKind::Cancelled => FailureClass::Abort,
        }
    }

    /// The HTTP status, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            FailureKind::Http { status } => Some(*status),
            FailureKind::ContextLengthExceeded { status } => *status,
            _ => None,
        }
    }
}

/// A failed summarizer call.
///
/// Its `Display` never contains secrets: backends must not put API keys in `message`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct SummarizerError {
    /// What went wrong.
    pub kind: FailureKind,
    /// A human-readable explanation (a server's error text, trimmed).
    pub message: String,
    /// A `Retry-After` the server asked for: a floor for the next wait (still capped).
    pub retry_after: Option<Duration>,
    /// What the failed call was billed, if anything (failed calls can cost money).
    pub usage: Usage,
}

impl SummarizerError {
    /// A failure of `kind` with an explanation.
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        SummarizerError {
            kind,
            message: message.into(),
            retry_after: None,
            usage: Usage::default(),
        }
    }

    /// The same failure with a `Retry-After` floor.
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    /// The same failure with what it was billed.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The failure's class (see [`FailureKind::class`]).
    pub fn class(&self) -> FailureClass {
        self.kind.class()
    }
}
