//! `--expand-tool`: the model reads back what a compaction replaced, and the client
//! never sees it ask.
//!
//! In a compacted session (its requests carry a rewrite) whose client declares tools of
//! its own and lets the model choose ([`tool::offered_body`]), the proxy appends the
//! `compactor_expand` tool to the request. When the upstream's answer calls it, the
//! proxy answers from the session's own transcript in the store (a handle of another
//! session is "not found": [`llm_compactor::session::expand_in`] looks only at this
//! one's messages), appends the call and its result to the conversation, and asks the
//! upstream again — at most [`crate::ExpandTool::max_calls`] times per client request, the last
//! time with `tool_choice` none. The client receives one ordinary answer: the last one,
//! or, streamed, the text relayed before the call followed by the follow-up's events
//! ([`stream`]).
//!
//! An expansion is cut to fit the room the budget leaves (the cut is said in the
//! result). Other tools called in the same turn are answered "not run" (a turn's calls
//! must all be answered before the upstream is asked again; the model calls them again).
//!
//! The hidden turns are recorded: they are appended to the session's transcript (so an
//! export replays to exactly what the upstream saw) and the session's rewrite then
//! stands for them, so the next request — the client's history, without them — goes
//! upstream with them in place: the model keeps what it read, and the prompt cache
//! keeps its prefix. Nothing of an expansion is logged: only counts.

mod answer;
mod stream;
pub(crate) mod tool;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::http::{HeaderMap, Method, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use llm_compactor::count::{CalibratedCounter, TokenCounter};
use llm_compactor::session::{EXPAND_TOOL_NAME, Transcript, answer_expand_within};
use llm_compactor::{Compactor, Message};
use serde_json::Value;

use crate::api::{Api, Request};
use crate::error::ProxyError;
use crate::outgoing;
use crate::sessions::SessionState;
use crate::state::AppState;
use crate::upstream::{self, Calibration, Tap, UsageHook};
use answer::{Answer, Call, messages_of, not_run, results};
use stream::{Events, Reader, Splicer};

/// Tokens kept free beside an expansion (the result's framing, the answer to come).
const RESULT_SLACK: usize = 512;

/// `body` (the request about to go upstream) with the tool offered, when the proxy
/// expands and the round may offer it: the session is compacted (`compacted`) and the
/// client's request allows it ([`tool::offered_body`]). `None`: send `body` as it is.
pub(crate) fn offer(state: &AppState, api: Api, body: &Bytes, compacted: bool) -> Option<Bytes> {
    state.config.expand_tool?;
    if !compacted {
        return None;
    }
    // The offer scans the body's top-level fields and writes it again (counted: the
    // gauge of one parse and one write per body sees it).
    state.metrics.wire.parsed();
    let offered = tool::offered_body(api, body, false)?;
    state.metrics.wire.written();
    state.metrics.expand_offered.fetch_add(1, Ordering::Relaxed);
    Some(Bytes::from(offered))
}

/// One client request whose upstream answers may call `compactor_expand`.
pub(crate) struct Exchange {
    pub state: Arc<AppState>,
    pub session: Arc<tokio::sync::Mutex<SessionState>>,
    pub api: Api,
    pub request: Request,
    /// The client's body as it came (breakpoints are placed against it).
    pub original: Bytes,
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    /// The session's key.
    pub key: String,
    pub compactor: Arc<Compactor>,
    /// The conversation the last upstream request carried.
    pub sent: Vec<Message>,
    pub counter: Arc<CalibratedCounter>,
    /// The transcript this round was recorded under.
    pub store_key: String,
}

impl Exchange {
    /// The client's response for the upstream's successful `response`.
    pub async fn respond(self, response: reqwest::Response, hook: Option<UsageHook>) -> Response {
        let content_type = content_type(response.headers());
        if content_type.starts_with("text/event-stream") {
            let status = response.status();
            let headers = upstream::relay_headers(response.headers());
            let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
            tokio::spawn(self.streamed(response, hook, tx));
            let body = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|item| (item, rx)) });
            let mut out = Response::new(Body::from_stream(body));
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            return out;
        }
        self.buffered(response, hook).await
    }

    fn max_calls(&self) -> usize {
        self.state.config.expand_tool.map_or(0, |e| e.max_calls)
    }

    fn tap(&self, content_type: &str, hook: Option<UsageHook>) -> Tap {
        Tap::new(
            Calibration {
                api: self.api,
                messages: self.sent.clone(),
                model: self.request.model.clone(),
                counter: self.counter.clone(),
            },
            content_type,
        )
        .with_hook(hook)
    }

    async fn buffered(mut self, mut response: reqwest::Response, mut hook: Option<UsageHook>) -> Response {
        let mut hidden = Vec::new();
        for round in 0.. {
            let status = response.status();
            let headers = upstream::relay_headers(response.headers());
            let mut tap = self.tap(&content_type(response.headers()), hook.take());
            let Ok(body) = response.bytes().await else {
                return ProxyError::Upstream("the upstream's answer broke off".to_owned()).into_response();
            };
            tap.feed(&body);
            tap.finish();
            let answer = serde_json::from_slice::<Value>(&body)
                .ok()
                .filter(|_| status.is_success())
                .and_then(|value| Answer::of_body(self.api, &value))
                .filter(|answer| answer.expands() && round < self.max_calls());
            let Some(answer) = answer else {
                if status.is_success() {
                    self.record(hidden).await;
                }
                let mut out = Response::new(Body::from(body));
                *out.status_mut() = status;
                *out.headers_mut() = headers;
                return out;
            };
            match self.follow_up(&answer, round).await {
                Ok((next, turns)) => {
                    hidden.extend(turns);
                    response = next;
                }
                Err(e) => return e.into_response(),
            }
        }
        unreachable!("the loop returns")
    }

    async fn streamed(
        mut self,
        mut response: reqwest::Response,
        mut hook: Option<UsageHook>,
        tx: tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
    ) {
        let mut splicer = Splicer::new(self.api);
        let mut hidden = Vec::new();
        for round in 0.. {
            let mut tap = self.tap(&content_type(response.headers()), hook.take());
            let mut reader = Reader::new(self.api);
            let mut events = Events::default();
            let mut body = response.bytes_stream();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else {
                    tracing::warn!("upstream body failed mid-answer");
                    let _ = tx.send(Err(std::io::Error::other("upstream body failed"))).await;
                    return;
                };
                tap.feed(&chunk);
                for event in events.push(&chunk) {
                    if let Some(bytes) = reader.take(event).and_then(|e| splicer.relay(e))
                        && tx.send(Ok(bytes)).await.is_err()
                    {
                        return;
                    }
                }
            }
            if let Some(bytes) = events
                .finish()
                .and_then(|e| reader.take(e))
                .and_then(|e| splicer.relay(e))
                && tx.send(Ok(bytes)).await.is_err()
            {
                return;
            }
            tap.finish();
            let answer = reader.answer();
            if !answer.expands() || round >= self.max_calls() {
                for event in reader.held() {
                    if let Some(bytes) = splicer.relay(event)
                        && tx.send(Ok(bytes)).await.is_err()
                    {
                        return;
                    }
                }
                drop(tx);
                self.record(hidden).await;
                return;
            }
            match self.follow_up(&answer, round).await {
                Ok((next, turns)) if next.status().is_success() => {
                    hidden.extend(turns);
                    response = next;
                    splicer.next_stream();
                }
                Ok((next, _)) => {
                    tracing::warn!(
                        status = next.status().as_u16(),
                        "the expansion's follow-up failed; the answer ends here"
                    );
                    let _ = tx
                        .send(Err(std::io::Error::other("the expansion's follow-up failed")))
                        .await;
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the expansion's follow-up failed; the answer ends here");
                    let _ = tx
                        .send(Err(std::io::Error::other("the expansion's follow-up failed")))
                        .await;
                    return;
                }
            }
        }
    }

    /// Answers `answer`'s calls, and sends the conversation with them upstream: the
    /// response, and the hidden turns (the answer and its results) as messages.
    async fn follow_up(
        &mut self,
        answer: &Answer,
        round: usize,
    ) -> Result<(reqwest::Response, Vec<Message>), ProxyError> {
        let config = &self.state.config;
        let metrics = &self.state.metrics;
        let originals = self.originals().await?;
        let answer_text = serde_json::to_string(&answer.items).unwrap_or_default();
        let used = self.counter.count_messages(&self.sent) + self.counter.count_text(&answer_text);
        let expanding = answer.calls.iter().filter(|c| c.name == EXPAND_TOOL_NAME).count();
        let room = self
            .compactor
            .config()
            .context_budget
            .saturating_sub(used + RESULT_SLACK)
            / expanding.max(1);
        let outputs: Vec<String> = answer
            .calls
            .iter()
            .map(|call| self.output(&originals, call, room))
            .collect();
        metrics.expand_calls.fetch_add(expanding as u64, Ordering::Relaxed);
        tracing::info!(session = %self.key, calls = expanding, room, "answering compactor_expand");
        let mut items = answer.items.clone();
        items.extend(results(self.api, &answer.calls, &outputs));
        let turns = messages_of(self.api, items).map_err(ProxyError::Upstream)?;
        let mut sent = std::mem::take(&mut self.sent);
        sent.extend(turns.iter().cloned());
        let (value, sent) = self.request.wire.to_value(sent);
        self.sent = sent;
        let body = serde_json::to_vec(&value).map_err(|e| ProxyError::Internal(e.to_string()))?;
        let body = outgoing::finish(
            self.api,
            &config.wire,
            &metrics.wire,
            outgoing::Sent {
                bytes: &self.original,
                json: None,
            },
            outgoing::Forwarded {
                body: Bytes::from(body),
                json: Some(value),
            },
            &self.key,
        );
        let last = round + 1 >= self.max_calls();
        let body = tool::offered_body(self.api, &body, last).map_or(body, Bytes::from);
        metrics.expand_followups.fetch_add(1, Ordering::Relaxed);
        let response = upstream::send(
            &self.state.client,
            config,
            self.method.clone(),
            &self.path,
            &self.headers,
            body,
        )
        .await
        .inspect_err(|_| {
            metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
        })?;
        if response.status().is_server_error() {
            metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
        }
        Ok((response, turns))
    }

    /// What answers `call`: the expansion, cut to `room` tokens, for `compactor_expand`;
    /// "not run" for any other tool.
    fn output(&self, originals: &[Message], call: &Call, room: usize) -> String {
        if call.name != EXPAND_TOOL_NAME {
            return not_run(call);
        }
        answer_expand_within(originals, &call.arguments, room, self.counter.as_ref())
    }

    /// Every message the session's transcript holds, as recorded (read as
    /// `compactor proxy expand` reads it).
    async fn originals(&self) -> Result<Vec<Message>, ProxyError> {
        let transcript = Transcript::from_store(self.state.config.store.as_ref(), &self.store_key).await?;
        Ok(transcript.originals())
    }

    /// Records the hidden turns in the session (see the module docs).
    async fn record(self, hidden: Vec<Message>) {
        if hidden.is_empty() {
            return;
        }
        let before = self.sent.len().saturating_sub(hidden.len());
        let mut session = self.session.lock().await;
        if let Err(e) = session
            .record_hidden(
                &self.state.config,
                &self.store_key,
                before,
                self.request.wire.messages(),
                hidden,
            )
            .await
        {
            tracing::warn!(session = %self.key, error = %e, "the expansion's turns were not recorded");
        }
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
