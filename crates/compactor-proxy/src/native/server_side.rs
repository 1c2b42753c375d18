//! Server-side compaction done by the proxy for an upstream without it: OpenAI's
//! `context_management: [{"type": "compaction", "compact_threshold": N}]` on
//! `/v1/responses` (and Anthropic's `compact_*` edit on `/v1/messages`).
//!
//! The request's compaction entry is taken out (the upstream would refuse or ignore it;
//! the client's other edits stay), its `compact_threshold` becomes the round's trigger
//! besides the proxy's budget ([`ServerSide::threshold`]), and when a pass ran, the
//! answer carries what OpenAI's API emits: a `compaction` item first in the response's
//! output, streamed or not ([`with_item`], [`super::emit`]). The item is sealed for the
//! request's credential as the standalone endpoint's are, and stands for the whole
//! conversation the upstream saw ([`super::seal::Opened::Window`]): the client appends
//! it to its input (it may drop the items before it), and the next request reaches the
//! upstream as that conversation and what followed.

use axum::body::Body;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use llm_compactor::format::context_management;

use super::emit::{SseInsert, into_response};
use super::items::{compaction_item, input_items};
use super::seal::Sealer;
use crate::api::{Api, Wire};
use crate::error::ProxyError;
use crate::sessions::Prepared;

/// The most of a non-streamed answer read to put the item in it (a larger one is a 502:
/// what was read of it is gone).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// A request whose server-side compaction the proxy does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerSide {
    threshold: Option<usize>,
    emits: bool,
}

impl ServerSide {
    /// Takes the compaction entry out of `request` (a body of `api`) and returns what
    /// it asked; `None`, with `request` unchanged, when it has none to take
    /// ([`context_management::without_compaction`]: one beside an edit that clears tool
    /// uses is left to the server).
    pub(crate) fn take(api: Api, request: &mut Value) -> Option<ServerSide> {
        let responses = api == Api::Responses;
        let threshold = if responses {
            context_management::compact_threshold(request)
        } else {
            None
        };
        (context_management::without_compaction(request) > 0).then_some(ServerSide {
            threshold,
            emits: responses,
        })
    }

    /// The client's `compact_threshold`: the round's trigger besides the proxy's budget.
    pub(crate) fn threshold(self) -> Option<usize> {
        self.threshold
    }

    /// The compaction item the answer to `prepared` carries: `Some` when a pass ran in
    /// the round, on the Responses route; sealed for `owner` (the request's credential:
    /// [`super::owner_of`]), standing for the conversation `prepared` sends (as `wire` writes
    /// it) in the session `session`.
    pub(crate) fn item(
        self,
        sealer: &Sealer,
        owner: &str,
        session: &str,
        wire: &Wire,
        prepared: &Prepared,
    ) -> Option<Value> {
        if !self.emits {
            return None;
        }
        let done = prepared.done.as_ref()?;
        let window = input_items(wire, prepared.messages.clone());
        let sealed = sealer.seal_window(owner, &window, session);
        Some(compaction_item(sealed, done.summary.as_deref()))
    }
}

/// `response` with `item` put where OpenAI's API puts it: first in a JSON answer's
/// `output`, or as its own events at the head of an event stream (see
/// [`super::emit`]). An answer that failed, or is neither, goes as it came.
pub(crate) async fn with_item(response: Response, item: Value) -> Response {
    if !response.status().is_success() {
        return response;
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if content_type.starts_with("text/event-stream") {
        let stream = futures_util::stream::unfold(
            (body.into_data_stream(), Some(SseInsert::new(item))),
            |(mut stream, mut insert)| async move {
                let state = insert.as_mut()?;
                match stream.next().await {
                    Some(Ok(chunk)) => {
                        let out = state.push(&chunk);
                        Some((Ok::<_, axum::Error>(Bytes::from(out)), (stream, insert)))
                    }
                    Some(Err(e)) => Some((Err(e), (stream, None))),
                    None => {
                        if !state.inserted() {
                            tracing::warn!(
                                "the answer ended before any output item: its compaction item was not emitted"
                            );
                        }
                        let out = state.finish();
                        Some((Ok(Bytes::from(out)), (stream, None)))
                    }
                }
            },
        );
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let bytes = match axum::body::to_bytes(body, MAX_ANSWER_BYTES).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream's answer could not be read to add the compaction item");
            return ProxyError::Upstream("the upstream's answer broke off".to_owned()).into_response();
        }
    };
    let body = match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut value) if content_type.starts_with("application/json") => {
            if into_response(&mut value, &item) {
                serde_json::to_vec(&value).map_or(bytes, Bytes::from)
            } else {
                bytes
            }
        }
        _ => bytes,
    };
    Response::from_parts(parts, Body::from(body))
}
