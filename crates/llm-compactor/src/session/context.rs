//! What the [`super::ContextManager`] says and hears, in its own words: the shape of a
//! request ([`RequestShape`]), the events an observer hears ([`ContextEvent`]), the
//! errors that stop a loop ([`ManagerError`]) and the report of a pass ([`PassReport`]).
//!
//! Apart from the manager so that its background preparation (`prepared.rs`), which
//! speaks the same words, depends on them and not on the manager that holds it.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::error::SessionError;
use crate::compactor::{CompactError, CompactionReason, CompactionResult};
use crate::count::{RequestCounter, TokenCounter};
use crate::summarize::PassContext;
use crate::transcript::pass::RecordedPass;

/// What a request carries besides the conversation: [`RequestShape::new`] (or
/// `default()`, nothing) and the `with_*` methods, as it may grow.
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct RequestShape<'a> {
    /// The tool declarations, as JSON.
    pub tools: &'a [Value],
    /// Runtime context sent beside the conversation (a system suffix, retrieved notes).
    pub context: &'a str,
    /// What a pass this request runs may tell its summarizer of the request (the agent's
    /// request body for the summary that reads its prompt cache: see
    /// [`PassContext`]); handed to an inline pass and to the background pass the
    /// request starts. `None`: nothing.
    pub pass: Option<&'a PassContext>,
}

impl<'a> RequestShape<'a> {
    /// A request that carries nothing besides the conversation.
    pub fn new() -> Self {
        Self::default()
    }

    /// The request's tool declarations, as JSON.
    pub fn with_tools(mut self, tools: &'a [Value]) -> Self {
        self.tools = tools;
        self
    }

    /// The runtime context sent beside the conversation.
    pub fn with_context(mut self, context: &'a str) -> Self {
        self.context = context;
        self
    }

    /// What the request's passes may tell their summarizer of it.
    pub fn with_pass(mut self, pass: &'a PassContext) -> Self {
        self.pass = Some(pass);
        self
    }

    /// The counter of this request's passes, over `base` (the compactor's counter): `base`
    /// as it is when the request carries nothing besides the conversation, else the
    /// complete-request adapter, so that every count, target and acceptance of the pass
    /// is in the units of the whole request (tools and context included).
    pub(crate) fn counter(&self, base: &Arc<dyn TokenCounter>) -> Arc<dyn TokenCounter> {
        if self.tools.is_empty() && self.context.is_empty() {
            base.clone()
        } else {
            Arc::new(RequestCounter::new(base.clone(), self.tools.to_vec(), self.context))
        }
    }

    /// The pass context of this request's passes (empty without one).
    pub(crate) fn pass_context(&self) -> PassContext {
        self.pass.cloned().unwrap_or_default()
    }
}

/// What the manager reports to an observer.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContextEvent {
    /// A pass is starting.
    CompactionStarted {
        /// Why.
        reason: CompactionReason,
        /// The request's tokens (conversation, tools and context).
        tokens: usize,
        /// The per-call target, when the pass aims below the compactor's own.
        target: Option<usize>,
    },
    /// A pass ended and was written to the transcript.
    CompactionDone {
        /// Why it ran.
        reason: CompactionReason,
        /// Messages replaced or dropped.
        dropped: usize,
        /// Tool results stubbed.
        elided: usize,
        /// Tokens before.
        tokens_before: usize,
        /// Tokens after.
        tokens_after: usize,
        /// The hard trim ran (the summarizer could not produce an accepted summary).
        fallback: bool,
        /// Even the best result does not fit.
        exhausted: bool,
    },
    /// A pass of a snapshot started in the background (the request went out as it was).
    PreparationStarted {
        /// The request's tokens.
        tokens: usize,
        /// Messages in the snapshot.
        messages: usize,
    },
    /// The prepared pass was dropped before it could be installed.
    PreparationCancelled {
        /// Why.
        why: String,
    },
    /// A prepared pass was installed (and written to the transcript).
    PreparedInstalled {
        /// Messages appended since its snapshot, kept after its summary.
        since: usize,
        /// The ledger facts amended, in words (empty: installed as it was).
        changes: Vec<String>,
        /// Tool results among the new messages stubbed to fit.
        top_up: usize,
        /// Tokens before.
        tokens_before: usize,
        /// Tokens after.
        tokens_after: usize,
    },
    /// A prepared pass was checked and not installed.
    PreparedDiscarded {
        /// Why, in words.
        reasons: Vec<String>,
    },
}

/// An observer of [`ContextEvent`]s.
pub type ContextObserver = Arc<dyn Fn(&ContextEvent) + Send + Sync>;

/// The loop cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// The transcript could not be written.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The compactor refused its input.
    #[error(transparent)]
    Compact(#[from] CompactError),
    /// Nothing more can be done to make the conversation fit; the transcript holds the
    /// best conversation there was.
    #[error("context exhausted: {tokens} tokens do not fit in {limit} ({why})")]
    ContextExhausted {
        /// The conversation's tokens after the last pass.
        tokens: usize,
        /// What it had to fit in.
        limit: usize,
        /// Why nothing more can be tried.
        why: String,
    },
}

/// What a pass did, for the caller.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PassReport {
    /// Why it ran.
    pub reason: CompactionReason,
    /// The lines it wrote.
    pub recorded: RecordedPass,
    /// The compactor's whole result.
    pub result: CompactionResult,
}
