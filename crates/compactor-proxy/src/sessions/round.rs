//! One round of a session: the request, what serves it, and which attempt it is.
//!
//! Preparing a round needs the proxy's configuration, the model's compactor, the
//! metrics, the parsed request and its original bytes; and whether this is the first
//! attempt or the retry after the upstream said the request was too long. They travel
//! together as a [`Round`] instead of as an argument list with boolean flags.

use std::sync::Arc;

use llm_compactor::Compactor;

use crate::api::{Api, Request};
use crate::config::ProxyConfig;
use crate::metrics::Metrics;

/// Which attempt at a request a round is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// The request as the client sent it: a pass runs when the compactor's decision
    /// says so ([`Compactor::pass_due`]).
    First,
    /// The upstream rejected the request as longer than its window: a pass is forced,
    /// aimed as the library's `ContextManager` aims one
    /// ([`Compactor::context_length_target`]).
    ContextLengthRetry,
}

/// One round of a session, as [`super::SessionState::prepare`] takes it.
#[derive(Clone, Copy)]
pub struct Round<'a> {
    /// The proxy's configuration (store, target, focus, lease).
    pub config: &'a ProxyConfig,
    /// The compactor of the request's model (shared: a pass prepared in the background
    /// holds it).
    pub compactor: &'a Arc<Compactor>,
    /// Where the round's passes are counted.
    pub metrics: &'a Metrics,
    /// The API the request speaks.
    pub api: Api,
    /// The request, parsed.
    pub request: &'a Request,
    /// The request's body as the client sent it (forwarded as is when unchanged).
    pub original: &'a bytes::Bytes,
    /// Which attempt this is.
    pub attempt: Attempt,
}

/// Whether this round holds the session's compaction lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lease {
    /// Not yet: a pass takes it (or waits for it) first.
    ToTake,
    /// Taken after a wait; the round was prepared again from the store and releases it
    /// when done.
    Held,
}

/// One pass a round asks of its session: over the client's conversation, aimed at a
/// target, maybe by installing a prepared result.
pub(super) struct PassRequest<'a> {
    /// The messages as the client sent them (what the rewrite stands for).
    pub client: &'a [llm_compactor::message::Message],
    /// The target to aim at (the compactor's own when `None`).
    pub target: Option<usize>,
    /// A pass prepared in the background, to check and install instead of running one.
    pub install: Option<Box<llm_compactor::compactor::PreparedPass>>,
    /// The conversation's tokens as counted for this round.
    pub tokens: usize,
}

/// What a session's compaction did for a round.
pub(super) enum Compacted {
    /// Compacted: the messages to send, and what the pass did.
    Yes(Vec<llm_compactor::message::Message>, crate::pass_done::PassDone),
    /// Nothing to compact, or the lease stayed taken: send what there is.
    No,
    /// The lease was taken after a wait: the round is prepared again from the store.
    LeaseTaken,
}
