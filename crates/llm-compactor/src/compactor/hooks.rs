//! Guardrail hooks on every summarization call.
//!
//! A run's guardrails must see the compactor's requests too: a summary request carries
//! the whole middle of the conversation to a (possibly different) model. `before_request`
//! may let it go, rewrite it, or block it; `on_response` may accept the summary or block
//! it. A block is a failed attempt and ends the pass in the hard trim. A hook asking for
//! a retry with feedback is treated as a block, never as a paid retry loop: a hook that
//! deterministically rejects would otherwise spend money forever.

use async_trait::async_trait;

use crate::summarize::{SummaryReply, SummaryRequest};

/// What to do with a request about to be sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestDecision {
    /// Send it as is.
    Proceed,
    /// Send this request instead.
    Modify(SummaryRequest),
    /// Do not send it; the attempt fails (abort class) with this reason.
    Block(String),
}

/// What to do with a summary that came back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResponseDecision {
    /// Use it.
    Accept,
    /// Reject it; the attempt fails (abort class) with this reason.
    Block(String),
    /// Ask for another try with this feedback. The compactor never pays for such a
    /// loop: it is treated exactly like [`ResponseDecision::Block`].
    RetryWithFeedback(String),
}

/// Guardrail hooks run on every summarizer call of a pass. Both default to letting
/// everything through.
#[async_trait]
pub trait CompactionHooks: Send + Sync {
    /// Runs before each request is sent.
    async fn before_request(&self, request: &SummaryRequest) -> RequestDecision {
        let _ = request;
        RequestDecision::Proceed
    }

    /// Runs on each successful, non-empty reply.
    async fn on_response(&self, request: &SummaryRequest, reply: &SummaryReply) -> ResponseDecision {
        let _ = (request, reply);
        ResponseDecision::Accept
    }
}

/// Hooks that let everything through.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHooks;

impl CompactionHooks for NoHooks {}
