//! `--summarizer upstream`: summarize with the model of the request being compacted,
//! through the proxy's own upstream, with the client's key, reading the agent's cache.
//!
//! Most users have one model and one key: the agent's. A separate summarizer
//! configuration (URL, model, key variable) is then only a way to get it wrong, and the
//! summary request that reads the agent's prompt cache needs the agent's own model on
//! the agent's own provider anyway. So [`UpstreamSummarizer`] has no model and no key of
//! its own: per call it reads what the proxy put in the pass's context
//! ([`pass_context`], the library's [`PassContext`]): the route, the model and (when the
//! pass may read the cache) the round's request as the upstream receives it
//! ([`AgentRound`]); and the triggering request's credentials ([`crate::client_key`]:
//! its key, and the headers that say who the client is, sent as the client sent them).
//! It posts to the upstream with that route's protocol:
//!
//! - chat completions and Messages: the library's [`HttpBackend`] for that protocol and
//!   model, which sends the agent's request plus one instruction
//!   ([`llm_compactor::backend::http::cache_reading_body`]) when the request is in the
//!   pass's context, else the ordinary summary request;
//! - the Responses API: the agent's Responses request plus one user input item, not
//!   streamed, its output text read ([`crate::upstream_responses`]); a request that
//!   forces a tool call (or a retry, where the request is known to be too long) gets the
//!   ordinary chat-completions summary request with the request's model.
//!
//! Summaries are billed to the client's key (the README and `--help` say so). The key
//! lives only in the pass's context, which lives as long as the pass: never stored,
//! logged or put in a metric, and sent only to the upstream's origin (this summarizer
//! knows no other URL).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use llm_compactor::backend::http::{AgentRequest, HttpBackend, HttpBackendBuilder, Protocol, default_input_room};
use llm_compactor::summarize::{FailureKind, PassContext, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::api::Api;
use crate::client_key::ClientAuth;
use crate::error::ProxyError;

/// The most (protocol, model) backends kept; past it the cache starts over (a proxy
/// serves a handful of models).
const MAX_BACKENDS: usize = 64;

/// What a pass's summarizer may know of the round that runs it.
pub(crate) struct AgentRound {
    /// The route the request came on.
    pub(crate) api: Api,
    /// The request's model.
    pub(crate) model: String,
    /// The request as the upstream receives it, when the summary request may read its
    /// cache (the summarizer is the agent's own model on the upstream).
    pub(crate) cached: Option<Value>,
}

impl AgentRound {
    /// The library's agent request for a chat-completions or Messages round whose
    /// summary reads the cache.
    fn agent_request(&self) -> Option<AgentRequest> {
        let protocol = protocol_of(self.api)?;
        let body = self.cached.clone()?;
        Some(AgentRequest { protocol, body })
    }
}

fn protocol_of(api: Api) -> Option<Protocol> {
    match api {
        Api::OpenAi => Some(Protocol::OpenAi),
        Api::Anthropic => Some(Protocol::Anthropic),
        Api::Responses => None,
    }
}

/// The context of a pass a round runs: the triggering request's credentials `auth`
/// (for a [`crate::ClientKeySummarizer`] and an [`UpstreamSummarizer`]); `round` for an
/// [`UpstreamSummarizer`] (route, model, request); and, when the summary may read the
/// cache, the round's request as the library's agent request, for any [`HttpBackend`]
/// of its protocol.
pub(crate) fn pass_context(auth: &ClientAuth, round: Option<Arc<AgentRound>>) -> PassContext {
    let mut pass = PassContext::new().with(auth.clone());
    if let Some(round) = round {
        if let Some(agent) = round.agent_request() {
            pass = pass.with(agent);
        }
        pass = pass.with_shared(round);
    }
    pass
}

/// The summarizer of `--summarizer upstream` (see the module docs). Register it with
/// [`crate::ProxyConfigBuilder::summarizer_upstream`], which builds it for the
/// proxy's upstream.
#[derive(Clone)]
pub struct UpstreamSummarizer {
    inner: Arc<Inner>,
}

struct Inner {
    /// The upstream base URL, without a trailing slash.
    base: String,
    timeout: Duration,
    backends: Mutex<HashMap<(Protocol, String), HttpBackend>>,
    client: reqwest::Client,
}

impl std::fmt::Debug for UpstreamSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSummarizer")
            .field("upstream", &self.inner.base)
            .finish_non_exhaustive()
    }
}

impl UpstreamSummarizer {
    /// A summarizer posting to `upstream` (the proxy's `--upstream`), each request given
    /// at most `timeout`.
    ///
    /// # Errors
    /// [`ProxyError::Config`] when the HTTP client cannot be built.
    pub fn new(upstream: &str, timeout: Duration) -> Result<Self, ProxyError> {
        let client = reqwest::Client::builder()
            // The client's key goes to the upstream's origin only.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(llm_compactor::backend::http::DEFAULT_CONNECT_TIMEOUT.min(timeout))
            .timeout(timeout)
            .build()
            .map_err(|e| ProxyError::Config(format!("cannot build the summarizer's client: {e}")))?;
        Ok(UpstreamSummarizer {
            inner: Arc::new(Inner {
                base: upstream.trim_end_matches('/').to_owned(),
                timeout,
                backends: Mutex::new(HashMap::new()),
                client,
            }),
        })
    }

    /// The upstream it posts to.
    pub fn upstream(&self) -> &str {
        &self.inner.base
    }

    /// The keyless backend of `protocol` and `model` on the upstream (built once).
    fn backend(&self, protocol: Protocol, model: &str) -> Result<HttpBackend, SummarizerError> {
        let mut backends = self.inner.backends.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(backend) = backends.get(&(protocol, model.to_owned())) {
            return Ok(backend.clone());
        }
        // Both protocols at `UPSTREAM/v1/...`, the paths the proxy forwards to.
        let backend = HttpBackendBuilder::new(protocol, model)
            .base_url(format!("{}/v1", self.inner.base))
            .no_api_key()
            .timeout(self.inner.timeout)
            .build()
            .map_err(|e| SummarizerError::new(FailureKind::Unavailable, format!("summarizer upstream: {e}")))?;
        if backends.len() >= MAX_BACKENDS {
            backends.clear();
        }
        backends.insert((protocol, model.to_owned()), backend.clone());
        Ok(backend)
    }

    /// A backend of `protocol` and `model` that sends the client's own headers, as the
    /// client sent them (its key in the header it chose: a Claude login's bearer token
    /// with its `anthropic-beta`, say). Built per call: the headers are the client's.
    fn backend_with(&self, protocol: Protocol, model: &str, auth: &ClientAuth) -> Result<HttpBackend, SummarizerError> {
        let mut builder = HttpBackendBuilder::new(protocol, model)
            .base_url(format!("{}/v1", self.inner.base))
            .no_api_key()
            .timeout(self.inner.timeout);
        for (name, value) in auth.headers.iter() {
            builder = builder.header(*name, value.expose());
        }
        builder
            .build()
            .map_err(|e| SummarizerError::new(FailureKind::Unavailable, format!("summarizer upstream: {e}")))
    }
}

#[async_trait]
impl Summarizer for UpstreamSummarizer {
    fn name(&self) -> &str {
        "upstream"
    }

    fn input_room_in(&self, pass: &PassContext) -> Option<usize> {
        // The agent's request fits its model: a cache-reading summary is never chunked.
        let round = pass.get::<AgentRound>()?;
        match round.cached {
            Some(_) => None,
            None => Some(default_input_room(&round.model)),
        }
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.summarize_in(request, &PassContext::new(), cancel).await
    }

    async fn summarize_in(
        &self,
        request: SummaryRequest,
        pass: &PassContext,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let Some(round) = pass.get::<AgentRound>() else {
            return Err(SummarizerError::new(
                FailureKind::Unavailable,
                "summarizer upstream: no request in the pass's context (register it with ProxyConfigBuilder::summarizer_upstream)",
            ));
        };
        if round.model.trim().is_empty() {
            return Err(SummarizerError::new(
                FailureKind::Unavailable,
                "summarizer upstream: the request names no model",
            ));
        }
        let auth = pass.get::<ClientAuth>().cloned().unwrap_or_default();
        if round.api == Api::Responses
            && let Some(body) = &round.cached
            && let Some(reply) = crate::upstream_responses::summarize(
                &self.inner.client,
                &self.inner.base,
                body,
                &request,
                &auth,
                cancel,
            )
            .await
        {
            return reply;
        }
        // Responses without the cache-reading form: its ordinary summary request through
        // chat completions, with the request's model.
        let protocol = protocol_of(round.api).unwrap_or(Protocol::OpenAi);
        let backend = if auth.headers.is_empty() {
            self.backend(protocol, &round.model)?.with_api_key(auth.key.clone())
        } else {
            self.backend_with(protocol, &round.model, &auth)?
        };
        backend.summarize_in(request, pass, cancel).await.map_err(|mut e| {
            e.message = auth.redact(&e.message);
            e
        })
    }
}
