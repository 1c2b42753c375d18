//! `--summarizer-key client`: the summarizer pays with the key of the request that
//! triggered the compaction.
//!
//! A team that runs the proxy for its agents should not have to hand the proxy a key of
//! its own: the agent's request already carries one for the same provider. So when the
//! summarizer is an HTTP backend on the upstream's own origin, the pass that a request
//! triggers summarizes with that request's credentials.
//!
//! How the key travels, and why it cannot go anywhere else:
//! - it is read from the triggering request (`x-api-key`, else the `Authorization:
//!   Bearer` token) into a [`Secret`] ([`ClientAuth::of`]) and handed to the pass in its
//!   context ([`crate::upstream_summarizer::pass_context`], the library's
//!   [`PassContext`]), which the compactor hands to each summarizer call of that one
//!   pass; only that pass sees it, and it is gone when the pass ends. It is never in the
//!   compactor, the session state, the store, a log line or a metric;
//! - [`ClientKeySummarizer`] sends it only to its backend's endpoint, and the proxy
//!   refuses at start-up a summarizer whose origin (scheme, host, port) is not the
//!   upstream's ([`crate::ProxyConfigBuilder::summarizer_key_from_client`]); the HTTP
//!   backend follows no cross-origin redirect;
//! - with no credentials in the context (a library user forgot to register the
//!   summarizer, or the request had no key) the summarizer sends no key at all, never
//!   another one.

use async_trait::async_trait;
use axum::http::HeaderMap;
use llm_compactor::backend::http::{HttpBackend, Secret};
use llm_compactor::summarize::{PassContext, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use tokio_util::sync::CancellationToken;

/// The headers of the triggering request that say who the client is to the upstream, as
/// it sent them: `--summarizer upstream` sends its summary request with exactly these
/// (a Claude login's bearer token with its `anthropic-beta`, an OpenAI project).
const CLIENT_HEADER_NAMES: [&str; 5] = [
    "authorization",
    "x-api-key",
    "anthropic-beta",
    "openai-organization",
    "openai-project",
];

/// A request's client headers (names lowercase, values secret).
pub(crate) type ClientHeaders = std::sync::Arc<Vec<(&'static str, Secret)>>;

/// The triggering request's credentials as a pass sees them.
#[derive(Clone, Default)]
pub(crate) struct ClientAuth {
    /// Its key ([`key_of`]).
    pub(crate) key: Option<Secret>,
    /// Its client headers.
    pub(crate) headers: ClientHeaders,
}

impl ClientAuth {
    /// The credentials of a request with `headers`.
    pub(crate) fn of(headers: &HeaderMap) -> ClientAuth {
        let replayed = CLIENT_HEADER_NAMES
            .iter()
            .filter_map(|&name| {
                let value = headers.get(name)?.to_str().ok()?.trim();
                (!value.is_empty()).then(|| (name, Secret::new(value)))
            })
            .collect();
        ClientAuth {
            key: key_of(headers),
            headers: std::sync::Arc::new(replayed),
        }
    }

    /// `text` with every client secret in it redacted.
    pub(crate) fn redact(&self, text: &str) -> String {
        let mut text = self.key.as_ref().map_or_else(|| text.to_owned(), |k| k.redact(text));
        for (_, value) in self.headers.iter() {
            text = value.redact(&text);
            // `Bearer KEY`: the key alone too.
            if let Some(token) = value.expose().strip_prefix("Bearer ") {
                text = Secret::new(token).redact(&text);
            }
        }
        text
    }
}

/// An HTTP summarizer that sends the triggering request's key (see the module docs).
/// Put it in the [`llm_compactor::Compactor`] and register it with
/// [`crate::ProxyConfigBuilder::summarizer_key_from_client`].
#[derive(Debug, Clone)]
pub struct ClientKeySummarizer {
    backend: HttpBackend,
}

impl ClientKeySummarizer {
    /// Wraps `backend` (its own key, if any, is never sent).
    pub fn new(backend: HttpBackend) -> Self {
        ClientKeySummarizer {
            backend: backend.with_api_key(None),
        }
    }

    /// The URL the summarizer posts to.
    pub fn endpoint(&self) -> &str {
        self.backend.endpoint()
    }

    /// The model it asks.
    pub fn model(&self) -> &str {
        self.backend.model()
    }
}

#[async_trait]
impl Summarizer for ClientKeySummarizer {
    fn name(&self) -> &str {
        self.backend.name()
    }

    fn input_room(&self) -> Option<usize> {
        self.backend.input_room()
    }

    fn input_room_in(&self, pass: &PassContext) -> Option<usize> {
        self.backend.input_room_in(pass)
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
        let key = pass.get::<ClientAuth>().and_then(|auth| auth.key.clone());
        self.backend.with_api_key(key).summarize_in(request, pass, cancel).await
    }
}

/// The request's credentials: `x-api-key`, else the `Authorization: Bearer` token.
pub fn key_of(headers: &HeaderMap) -> Option<Secret> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    header("x-api-key")
        .or_else(|| {
            header("authorization").and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
                    .map(str::trim)
            })
        })
        .map(Secret::new)
}

/// True when `a` and `b` have the same origin (scheme, host and port).
pub fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme() && a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_read_from_either_header() {
        let mut headers = HeaderMap::new();
        assert!(key_of(&headers).is_none());
        headers.insert("authorization", "Bearer sk-1".parse().unwrap());
        assert_eq!(key_of(&headers).unwrap().expose(), "sk-1");
        headers.insert("x-api-key", "sk-ant-2".parse().unwrap());
        assert_eq!(key_of(&headers).unwrap().expose(), "sk-ant-2");
        let mut basic = HeaderMap::new();
        basic.insert("authorization", "Basic abc".parse().unwrap());
        assert!(key_of(&basic).is_none(), "only a bearer token is a key");
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(same_origin(
            &url("https://api.openai.com"),
            &url("https://api.openai.com:443/v1/chat")
        ));
        assert!(!same_origin(
            &url("https://api.openai.com"),
            &url("http://api.openai.com")
        ));
        assert!(!same_origin(&url("http://127.0.0.1:1"), &url("http://127.0.0.1:2")));
        assert!(!same_origin(
            &url("https://api.openai.com"),
            &url("https://evil.example")
        ));
    }
}
