//! The upstream side: forwarding a request with the client's own credentials, and
//! relaying the answer as it arrives while reading the usage it reports.
//!
//! Credentials (`Authorization`, `x-api-key`) are forwarded to the configured upstream
//! and nowhere else: the client follows no redirect (a redirect is relayed to the agent
//! as it came) and ignores proxy environment variables, and no header is ever logged.
//! The answer is relayed chunk by chunk as the upstream sends it; a [`Tap`] looks at the
//! bytes on their way through for the `usage` that calibrates the session's counter.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::http::{HeaderMap, HeaderName, Method};
use bytes::Bytes;
use futures_util::Stream;
use llm_compactor::count::CalibratedCounter;
use llm_compactor::message::Message;
use serde_json::Value;

use crate::api::{Api, prompt_tokens, usage_of};
use crate::config::ProxyConfig;
use crate::error::ProxyError;

/// Request headers never forwarded: hop-by-hop ones, the ones the client recomputes, and
/// the proxy's own.
const DROPPED_REQUEST: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "accept-encoding",
    "x-compactor-session",
];

/// Response headers never relayed (hop-by-hop, or invalid once the body is re-framed).
const DROPPED_RESPONSE: &[&str] = &[
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "trailer",
    "upgrade",
];

/// The HTTP client for the upstream: no redirects, no environment proxies.
///
/// # Errors
/// [`ProxyError::Config`] when the TLS stack cannot be set up.
pub fn client(config: &ProxyConfig) -> Result<reqwest::Client, ProxyError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(std::time::Duration::from_secs(10))
        .timeout(config.upstream_timeout)
        .pool_max_idle_per_host(64)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| ProxyError::Config(format!("cannot build the upstream client: {e}")))
}

/// Sends one request upstream.
///
/// # Errors
/// [`ProxyError::Upstream`] when the upstream cannot be reached (the error names the
/// upstream's host, never a header).
pub async fn send(
    client: &reqwest::Client,
    config: &ProxyConfig,
    method: Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, ProxyError> {
    let url = format!("{}{}", config.upstream.as_str().trim_end_matches('/'), path_and_query);
    let mut forwarded = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if !DROPPED_REQUEST.contains(&name.as_str()) {
            forwarded.append(name.clone(), value.clone());
        }
    }
    client
        .request(method, &url)
        .headers(forwarded)
        .body(body)
        .send()
        .await
        .map_err(|e| {
            let host = config.upstream.host_str().unwrap_or("upstream").to_owned();
            let port = config.upstream.port_or_known_default().unwrap_or(0);
            let why = if e.is_timeout() {
                "timed out"
            } else if e.is_connect() {
                "connection failed"
            } else {
                "request failed"
            };
            ProxyError::Upstream(format!("{host}:{port}: {why}"))
        })
}

/// The response headers to relay.
pub fn relay_headers(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        if !DROPPED_RESPONSE.contains(&name.as_str()) {
            out.append(HeaderName::from(name), value.clone());
        }
    }
    out
}

/// Where a tapped answer's usage goes when the answer ends.
pub struct Calibration {
    /// The API of the answer.
    pub api: Api,
    /// The conversation that was sent.
    pub messages: Vec<Message>,
    /// The model asked for.
    pub model: String,
    /// The session's counter.
    pub counter: Arc<CalibratedCounter>,
}

/// Reads `usage` from an answer passing through, without holding it up.
pub struct Tap {
    calibration: Option<Calibration>,
    sse: bool,
    buf: Vec<u8>,
    prompt_tokens: Option<u64>,
    usage: serde_json::Map<String, Value>,
    hook: Option<UsageHook>,
}

/// Called once the answer is relayed, with its prompt tokens as [`api::prompt_tokens`]
/// reads them (the number calibration uses) and the upstream's usage object (the fields
/// of every usage the answer carried, later ones winning; `None` when it carried none).
pub type UsageHook = Box<dyn FnOnce(Option<u64>, Option<&Value>) + Send>;

/// The most of a non-streamed answer the tap keeps to find its usage.
const MAX_TAPPED_BODY: usize = 16 * 1024 * 1024;

impl Tap {
    /// A tap for an answer with this content type.
    pub fn new(calibration: Calibration, content_type: &str) -> Tap {
        Tap {
            calibration: Some(calibration),
            sse: content_type.starts_with("text/event-stream"),
            buf: Vec::new(),
            prompt_tokens: None,
            usage: serde_json::Map::new(),
            hook: None,
        }
    }

    /// With `hook` called at the end of the answer (see [`UsageHook`]).
    pub fn with_hook(mut self, hook: Option<UsageHook>) -> Tap {
        self.hook = hook;
        self
    }

    /// Reads one chunk of the answer.
    pub(crate) fn feed(&mut self, chunk: &[u8]) {
        if self.calibration.is_none() {
            return;
        }
        if !self.sse {
            if self.buf.len() + chunk.len() <= MAX_TAPPED_BODY {
                self.buf.extend_from_slice(chunk);
            }
            return;
        }
        self.buf.extend_from_slice(chunk);
        while let Some(end) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            self.sse_line(&line);
        }
    }

    fn sse_line(&mut self, line: &[u8]) {
        let Some(data) = line.strip_prefix(b"data:") else {
            return;
        };
        if !data.windows(5).any(|w| w == b"usage") {
            return;
        }
        let api = self.calibration.as_ref().map_or(Api::OpenAi, |c| c.api);
        let Ok(value) = serde_json::from_slice::<Value>(data.trim_ascii()) else {
            return;
        };
        if let Some(usage) = usage_of(&value) {
            self.usage.extend(usage.clone());
        }
        if let Some(tokens) = prompt_tokens(api, &value)
            && tokens > 0
        {
            self.prompt_tokens = Some(tokens);
        }
    }

    /// The answer ended: calibrates, and calls the hook.
    pub(crate) fn finish(&mut self) {
        let Some(calibration) = self.calibration.take() else {
            return;
        };
        if self.sse {
            let rest = std::mem::take(&mut self.buf);
            self.sse_line(&rest);
        } else if let Ok(value) = serde_json::from_slice::<Value>(&self.buf) {
            self.prompt_tokens = prompt_tokens(calibration.api, &value).filter(|t| *t > 0);
            if let Some(usage) = usage_of(&value) {
                self.usage.extend(usage.clone());
            }
        }
        if let Some(hook) = self.hook.take() {
            let usage = (!self.usage.is_empty()).then(|| Value::Object(std::mem::take(&mut self.usage)));
            hook(self.prompt_tokens, usage.as_ref());
        }
        if let Some(tokens) = self.prompt_tokens {
            tracing::debug!(tokens, "calibrating from the upstream's usage");
        }
        calibration
            .counter
            .record(&calibration.messages, &calibration.model, self.prompt_tokens);
    }
}

/// The upstream's body stream, tapped.
pub struct Tapped<S> {
    inner: Pin<Box<S>>,
    tap: Option<Tap>,
}

impl<S> Tapped<S> {
    /// `inner`, passed through `tap` (none: relayed as is).
    pub fn new(inner: S, tap: Option<Tap>) -> Self {
        Tapped {
            inner: Box::pin(inner),
            tap,
        }
    }
}

impl<S> Stream for Tapped<S>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>>,
{
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                if let Some(tap) = &mut self.tap {
                    tap.feed(&chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => {
                tracing::warn!(error = %e, "upstream body failed mid-answer");
                self.tap = None;
                Poll::Ready(Some(Err(std::io::Error::other("upstream body failed"))))
            }
            Poll::Ready(None) => {
                if let Some(mut tap) = self.tap.take() {
                    tap.finish();
                }
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
