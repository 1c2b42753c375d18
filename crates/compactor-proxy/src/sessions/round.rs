//! One round of a session: the request, what serves it, and which attempt it is.
//!
//! Preparing a round needs the proxy's configuration, the model's compactor, the
//! metrics, the parsed request and its original bytes; and whether this is the first
//! attempt or the retry after the upstream said the request was too long. They travel
//! together as a [`Round`] instead of as an argument list with boolean flags.

use std::sync::Arc;

use llm_compactor::Compactor;
use llm_compactor::Conversation;
use llm_compactor::compactor::RequestFit;
use llm_compactor::count::TokenCounter;
use llm_compactor::message::Message;

use crate::api::{Api, Request};
use crate::client_key::ClientAuth;
use crate::config::ProxyConfig;
use crate::metrics::Metrics;
use crate::upstream_summarizer::AgentRound;

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
    /// The client asked the server to compact (`POST /v1/responses/compact`, served by
    /// the proxy for an upstream without it): a pass is forced, aimed at the configured
    /// target (the compactor's own when none).
    Requested,
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
    /// The request's credentials, for the summarizer of a pass it runs
    /// (`--summarizer-key client`, `--summarizer upstream`; empty otherwise).
    pub(crate) auth: &'a ClientAuth,
    /// The client's own compaction threshold, when it asked the server to compact
    /// (OpenAI's `compact_threshold`) and the proxy does that for the upstream: a pass
    /// also runs when the request's count reaches it, aimed below it.
    pub(crate) threshold: Option<usize>,
}

impl Round<'_> {
    /// This round's pass, for a conversation counted at `tokens` by `counter`: `None`
    /// when none runs; else its target (the compactor's own when `None`). A first
    /// attempt passes when the compactor's decision says so ([`Compactor::pass_due`]) or
    /// the request reached the client's threshold (then aimed below it:
    /// [`Compactor::threshold_target`]); a retry or a requested compaction always does.
    pub(super) fn pass_target(
        &self,
        conversation: &Conversation,
        tokens: usize,
        counter: &dyn TokenCounter,
    ) -> Option<Option<usize>> {
        let (compactor, target) = (self.compactor, self.config.target);
        match self.attempt {
            Attempt::First => {
                let fit = RequestFit::new(conversation, tokens).with_counter(Some(counter));
                let due = compactor.pass_due(&fit).is_some();
                match self.threshold {
                    Some(threshold) => {
                        (due || tokens >= threshold).then(|| Some(compactor.threshold_target(threshold, target)))
                    }
                    None => due.then_some(target),
                }
            }
            Attempt::ContextLengthRetry => Some(Some(compactor.context_length_target(tokens, target))),
            Attempt::Requested => Some(target),
        }
    }

    /// [`Round::agent_round`] for an inline pass: the request as the upstream would
    /// receive it uncompacted (the client's, or `rewritten` in its place), serialized
    /// only when the summary reads the cache.
    pub(super) fn inline_agent_round(&self, rewritten: Option<&[Message]>, session: &str) -> Arc<AgentRound> {
        let reads_cache = self.attempt == Attempt::First && self.config.summary_reads_cache(&self.request.model);
        let uncompacted = match (reads_cache, rewritten) {
            (false, _) => None,
            (true, None) => Some(self.original.clone()),
            (true, Some(messages)) => serde_json::to_vec(&self.request.wire.to_value(messages.to_vec()).0)
                .ok()
                .map(bytes::Bytes::from),
        };
        self.agent_round(uncompacted.as_ref(), session)
    }

    /// What the summarizer of a pass this round runs may know of it: the route, the
    /// model, and, when the summary reads the agent's cache (a first attempt whose
    /// summarizer is the agent's own model on the upstream:
    /// [`ProxyConfig::summary_reads_cache`]), `forwarded` as the upstream receives it
    /// (breakpoints and cache key included; `session` is the session's key).
    pub(super) fn agent_round(&self, forwarded: Option<&bytes::Bytes>, session: &str) -> Arc<AgentRound> {
        let cached = forwarded
            .filter(|_| self.attempt == Attempt::First && self.config.summary_reads_cache(&self.request.model))
            .and_then(|body| {
                // Its own counters: what the round sends is counted when it is sent.
                let counters = crate::outgoing::WireCounters::default();
                let finished = crate::outgoing::finish(
                    self.api,
                    &self.config.wire,
                    &counters,
                    crate::outgoing::Sent {
                        bytes: self.original,
                        json: None,
                    },
                    crate::outgoing::Forwarded {
                        body: body.clone(),
                        json: None,
                    },
                    session,
                );
                serde_json::from_slice(&finished).ok()
            });
        Arc::new(AgentRound {
            api: self.api,
            model: self.request.model.clone(),
            cached,
        })
    }
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
    /// What the summarizer of an inline pass may know of the round.
    pub agent: Option<Arc<AgentRound>>,
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
