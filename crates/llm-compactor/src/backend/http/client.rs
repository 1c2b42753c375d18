//! [`HttpBackend`]: one HTTP summarizer, and the transport every protocol shares.
//!
//! The transport is deliberately small: one POST, the body read to the end with a size
//! cap, the whole of it raced against the caller's [`CancellationToken`]. It never
//! retries: waiting and retrying is the compactor's policy (the spec's failure classes),
//! and a client that quietly retried 429s underneath it would double every wait.

use std::fmt;
use std::time::SystemTime;

use async_trait::async_trait;
use reqwest::header::RETRY_AFTER;
use tokio_util::sync::CancellationToken;

use super::errors::{display, error_from_status, transport_error};
use super::retry_after::parse_retry_after;
use super::secret::Secret;
use super::wire::{ChatReply, MaxTokensField, Protocol};
use super::{anthropic, openai};
use crate::message::Message;
use crate::summarize::{FailureKind, PassContext, Summarizer, SummarizerError, SummaryReply, SummaryRequest};

/// The most response body we read (a chat answer is a few KB; a misbehaving proxy must
/// not make us buffer gigabytes).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// A summarizer (and plain chat backend) that talks to an OpenAI-compatible or an
/// Anthropic server over HTTP. Build one with [`HttpBackend::openai`] or
/// [`HttpBackend::anthropic`].
///
/// Cheap to share: wrap it in an `Arc` and hand it to a [`crate::Compactor`]. Its `Debug`
/// never shows the API key.
#[derive(Clone)]
pub struct HttpBackend {
    protocol: Protocol,
    name: String,
    model: String,
    endpoint: reqwest::Url,
    client: reqwest::Client,
    key: Option<Secret>,
    input_room: usize,
    max_tokens_field: MaxTokensField,
}

/// What the builder hands over.
pub(super) struct Parts {
    pub(super) protocol: Protocol,
    pub(super) model: String,
    pub(super) endpoint: reqwest::Url,
    pub(super) client: reqwest::Client,
    pub(super) key: Option<Secret>,
    pub(super) input_room: usize,
    pub(super) max_tokens_field: MaxTokensField,
}

impl HttpBackend {
    pub(super) fn from_parts(parts: Parts) -> Self {
        HttpBackend {
            name: format!("{}:{}", parts.protocol.as_str(), parts.model),
            protocol: parts.protocol,
            model: parts.model,
            endpoint: parts.endpoint,
            client: parts.client,
            key: parts.key,
            input_room: parts.input_room,
            max_tokens_field: parts.max_tokens_field,
        }
    }

    /// The protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The model name sent with every request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Which field carries the output budget of an OpenAI request.
    pub(super) fn max_tokens_field(&self) -> MaxTokensField {
        self.max_tokens_field
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// True when requests carry an API key.
    pub fn has_api_key(&self) -> bool {
        self.key.is_some()
    }

    /// The same backend sending `key` instead of its own (`None`: no key). The proxy's
    /// `--summarizer-key client` summarizes with the key of the request that triggered
    /// the compaction; the copy lives for that one pass and the key is scrubbed from its
    /// errors like any other.
    pub fn with_api_key(&self, key: Option<Secret>) -> HttpBackend {
        HttpBackend { key, ..self.clone() }
    }

    /// One chat request: `system` as the system instruction, then `messages` (tool calls
    /// and results included), answered with at most `max_output_tokens` tokens.
    ///
    /// System-prompt messages inside `messages` are sent as they are for OpenAI and folded
    /// into the top-level `system` for Anthropic.
    ///
    /// # Errors
    /// A [`SummarizerError`] whose [`FailureKind`] says what happened (HTTP status,
    /// context length exceeded, timeout, connect, parse, empty, cancelled); its message
    /// is the server's error text, trimmed, never the key.
    pub async fn chat(
        &self,
        system: &str,
        messages: &[Message],
        max_output_tokens: u32,
        cancel: &CancellationToken,
    ) -> Result<ChatReply, SummarizerError> {
        let body = match self.protocol {
            Protocol::OpenAi => {
                openai::request_body(&self.model, system, messages, max_output_tokens, self.max_tokens_field)
            }
            Protocol::Anthropic => anthropic::request_body(&self.model, system, messages, max_output_tokens),
        };
        self.chat_body(&body, cancel).await
    }

    /// Posts a request `body` of this backend's protocol as it is and decodes the
    /// answer (what [`HttpBackend::chat`] does after encoding).
    pub(super) async fn chat_body(
        &self,
        body: &serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<ChatReply, SummarizerError> {
        let bytes = self.post(body, cancel).await?;
        let reply = match self.protocol {
            Protocol::OpenAi => openai::decode(&bytes),
            Protocol::Anthropic => anthropic::decode(&bytes),
        }
        .map_err(|error| self.scrub(error))?;
        tracing::debug!(
            backend = %self.name,
            input_tokens = reply.usage.input_tokens,
            output_tokens = reply.usage.output_tokens,
            stop = ?reply.stop,
            "chat reply"
        );
        Ok(reply)
    }

    /// Posts `body` and returns the body of a 2xx answer; everything else is an error.
    async fn post(&self, body: &serde_json::Value, cancel: &CancellationToken) -> Result<Vec<u8>, SummarizerError> {
        let request = async {
            let mut request = self.client.post(self.endpoint.clone()).json(body);
            request = match (self.protocol, &self.key) {
                (Protocol::OpenAi, Some(key)) => request.bearer_auth(key.expose()),
                (Protocol::OpenAi, None) => request,
                (Protocol::Anthropic, key) => {
                    let request = request.header("anthropic-version", anthropic::API_VERSION);
                    match key {
                        Some(key) => request.header("x-api-key", key.expose()),
                        None => request,
                    }
                }
            };
            tracing::debug!(backend = %self.name, url = %self.endpoint, "posting a chat request");
            let mut response = request.send().await.map_err(|error| transport_error(&error))?;
            let status = response.status();
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| parse_retry_after(value, SystemTime::now()));
            let bytes = read_body(&mut response).await?;
            Ok::<_, SummarizerError>((status, retry_after, bytes))
        };
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                tracing::debug!(backend = %self.name, "request cancelled");
                return Err(SummarizerError::new(FailureKind::Cancelled, "cancelled while waiting for the server"));
            }
            outcome = request => outcome,
        };
        let (status, retry_after, bytes) = outcome.map_err(|error| self.scrub(error))?;
        if status.is_success() {
            return Ok(bytes);
        }
        let mut error = error_from_status(status.as_u16(), status.canonical_reason(), &bytes);
        if let Some(wait) = retry_after {
            error = error.with_retry_after(wait);
        }
        tracing::debug!(backend = %self.name, status = status.as_u16(), kind = ?error.kind, "error answer");
        Err(self.scrub(error))
    }

    /// The error with the key scrubbed from its message (servers echo bad keys).
    ///
    /// Every error this backend returns passes here: the key is scrubbed first, then the
    /// message is cut to its display length.
    fn scrub(&self, mut error: SummarizerError) -> SummarizerError {
        error.message = display(&error.message, self.key.as_ref());
        error
    }
}

async fn read_body(response: &mut reqwest::Response) -> Result<Vec<u8>, SummarizerError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| transport_error(&error))? {
        if bytes.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(SummarizerError::new(
                FailureKind::Parse,
                format!("the response body exceeds {MAX_BODY_BYTES} bytes"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

#[async_trait]
impl Summarizer for HttpBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn input_room(&self) -> Option<usize> {
        Some(self.input_room)
    }

    fn input_room_in(&self, pass: &PassContext) -> Option<usize> {
        // A summary that reads the agent's cache sends the agent's request, which fits
        // the model: never in chunks.
        match self.agent_request_in(pass) {
            Some(_) => None,
            None => Some(self.input_room),
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
        if let Some(reply) = self.summarize_in_cache(&request, pass, cancel).await {
            return reply;
        }
        let transcript = [Message::user(request.transcript)];
        let reply = self
            .chat(&request.system, &transcript, request.max_output_tokens, cancel)
            .await?;
        Ok(SummaryReply {
            text: reply.text,
            stop: reply.stop,
            usage: reply.usage,
        })
    }
}

impl fmt::Debug for HttpBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBackend")
            .field("protocol", &self.protocol)
            .field("model", &self.model)
            .field("endpoint", &self.endpoint.as_str())
            .field("key", &self.key)
            .field("input_room", &self.input_room)
            .field("max_tokens_field", &self.max_tokens_field)
            .finish_non_exhaustive()
    }
}
