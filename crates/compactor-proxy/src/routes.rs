//! The routes: the three compacted APIs, `/healthz`, `/metrics`, and everything else
//! passed through unchanged.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use std::sync::atomic::Ordering;

use llm_compactor::format::context_management::{self, Stance};

use crate::api::{self, Api, ParseError};
use crate::binding_retry::binding_retry;
use crate::client_key::ClientAuth;
use crate::error::ProxyError;
use crate::expand;
use crate::metrics::Route;
use crate::native::{self, NativeCompaction};
use crate::outgoing;
use crate::provider_edits::{self, ProviderEdits};
use crate::sessions::{Attempt, Round};
use crate::state::AppState;
use crate::traced::Traced;
use crate::upstream::{self, Calibration, Tap, Tapped};

/// The response header that says how long the proxy held the request before forwarding
/// it, in milliseconds (session lookup, rewrite, breakpoints, store write).
pub const OVERHEAD_HEADER: &str = "x-compactor-overhead-ms";

/// The response header that names the pass whose rewrite the forwarded request carried
/// (`session/generation`); absent when the request went as the client sent it.
pub const COMPACTED_HEADER: &str = "x-compactor-compacted";

/// The most of an upstream error body read to look for a context-length error.
const MAX_ERROR_BODY: usize = 1024 * 1024;

/// The proxy's router over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/messages", post(messages))
        .route("/v1/responses", post(responses))
        .route("/v1/responses/compact", post(responses_compact))
        .merge(crate::ui::routes())
        .fallback(passthrough)
        .with_state(state)
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        state.metrics.render(state.sessions.len()),
    )
        .into_response()
}

async fn chat(State(state): State<Arc<AppState>>, request: Request) -> Response {
    state.metrics.request(Route::Chat);
    compacted(state, Api::OpenAi, request)
        .await
        .unwrap_or_else(|e| e.into_response())
}

async fn messages(State(state): State<Arc<AppState>>, request: Request) -> Response {
    state.metrics.request(Route::Messages);
    compacted(state, Api::Anthropic, request)
        .await
        .unwrap_or_else(|e| e.into_response())
}

async fn responses(State(state): State<Arc<AppState>>, request: Request) -> Response {
    state.metrics.request(Route::Responses);
    compacted(state, Api::Responses, request)
        .await
        .unwrap_or_else(|e| e.into_response())
}

/// `POST /v1/responses/compact`: forwarded, or answered by the proxy where the upstream
/// has no such endpoint (see [`crate::native`]).
async fn responses_compact(State(state): State<Arc<AppState>>, request: Request) -> Response {
    state.metrics.request(Route::Responses);
    let result = async {
        let (method, path, headers, body) = read_body(&state, request).await?;
        let started = Instant::now();
        if !state.serves_compaction.load(Ordering::Relaxed) {
            let response = send(&state, method, &path, &headers, body.clone()).await?;
            let lacks = NativeCompaction::lacks_endpoint(response.status().as_u16());
            if !(lacks && state.config.native_compaction == NativeCompaction::Auto) {
                state.metrics.native.forwarded();
                return Ok(relay(response, None));
            }
            tracing::info!(
                status = response.status().as_u16(),
                "the upstream has no /v1/responses/compact: the proxy answers it from now on"
            );
            state.serves_compaction.store(true, Ordering::Relaxed);
        }
        let response = native::serve_compaction(&state, &headers, &body).await?;
        Ok::<_, ProxyError>(stamp(response, started.elapsed(), None))
    }
    .await;
    result.unwrap_or_else(|e| e.into_response())
}

/// The body, or 413 when it is (or claims to be) over the limit.
async fn read_body(state: &AppState, request: Request) -> Result<(Method, String, HeaderMap, Bytes), ProxyError> {
    let limit = state.config.max_body_bytes;
    let too_large = || {
        state.metrics.rejected_too_large.fetch_add(1, Ordering::Relaxed);
        ProxyError::TooLarge { limit }
    };
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| too_large())?;
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_owned(), |p| p.as_str().to_owned());
    Ok((parts.method, path, parts.headers, bytes))
}

async fn passthrough(State(state): State<Arc<AppState>>, request: Request) -> Response {
    state.metrics.request(Route::Other);
    let result = async {
        let (method, path, mut headers, mut body) = read_body(&state, request).await?;
        let started = Instant::now();
        let bare = path.split('?').next().unwrap_or_default();
        if method == Method::POST
            && bare.ends_with("/v1/messages/count_tokens")
            && let Some(opened) = native::on_count_tokens(&state, &mut headers, &body)?
        {
            // Anthropic's compaction blocks of ours opened, as on /v1/messages.
            body = opened;
        }
        if method == Method::POST && bare.trim_end_matches('/').ends_with("/responses") {
            // A Responses API path other than `/v1/responses` (a prefixed base URL) is not
            // compacted: say so once, rather than let an agent believe it is managed.
            static RESPONSES_WARNED: std::sync::Once = std::sync::Once::new();
            RESPONSES_WARNED.call_once(|| {
                tracing::warn!(
                    path = %bare,
                    "passed through uncompacted; only /v1/chat/completions, /v1/messages and /v1/responses are compacted"
                );
            });
        }
        let overhead = started.elapsed();
        let response = send(&state, method, &path, &headers, body).await?;
        Ok::<_, ProxyError>(stamp(relay(response, None), overhead, None))
    }
    .await;
    result.unwrap_or_else(|e| e.into_response())
}

async fn send(
    state: &AppState,
    method: Method,
    path: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<reqwest::Response, ProxyError> {
    let response = upstream::send(&state.client, &state.config, method, path, headers, body)
        .await
        .inspect_err(|e| {
            state.metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(error = %e, "upstream unreachable");
        })?;
    if response.status().is_server_error() {
        state.metrics.upstream_errors.fetch_add(1, Ordering::Relaxed);
    }
    Ok(response)
}

fn relay(response: reqwest::Response, tap: Option<Tap>) -> Response {
    let status = response.status();
    let headers = upstream::relay_headers(response.headers());
    let body = Body::from_stream(Tapped::new(response.bytes_stream(), tap));
    let mut out = Response::new(body);
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}

async fn compacted(state: Arc<AppState>, api: Api, request: Request) -> Result<Response, ProxyError> {
    let (method, path, mut headers, body) = read_body(&state, request).await?;
    let started = Instant::now();
    // The body is read as JSON once: for its `context_management`, its conversation, and
    // (Messages) the client's breakpoints when the forwarded request is written.
    let mut json = api::read_json(api, &body);
    state.metrics.wire.parsed();
    // Compaction items this proxy served become their summaries before anything reads
    // the request: the session, the transcript and the upstream see the conversation.
    let mut body = body;
    // Anthropic's compaction: blocks of ours opened, a compaction request answered here
    // (an upstream without it) or forwarded as it came (one with it).
    if api == Api::Anthropic
        && let Ok(value) = &mut json
    {
        match native::on_messages(&state, &mut headers, value)? {
            native::MessagesCompaction::Serve => {
                let response = native::serve_messages_compaction(&state, &headers, std::mem::take(value)).await?;
                return Ok(stamp(response, started.elapsed(), None));
            }
            native::MessagesCompaction::Forward => {
                let overhead = started.elapsed();
                state.metrics.added_latency(overhead);
                let response = send(&state, method, &path, &headers, body).await?;
                return Ok(stamp(relay(response, None), overhead, None));
            }
            native::MessagesCompaction::Continue { rewritten: true } => {
                state.metrics.wire.written();
                body = Bytes::from(serde_json::to_vec(value).map_err(|e| ProxyError::Internal(e.to_string()))?);
            }
            native::MessagesCompaction::Continue { rewritten: false } => {}
        }
    }
    let mut carried = None;
    if api == Api::Responses
        && let Ok(value) = &mut json
    {
        let resolved = native::resolve_items(value, &state.config.sealer, &headers).map_err(ProxyError::BadRequest)?;
        carried = resolved.session;
        if resolved.opened > 0 {
            state.metrics.native.items_resolved(resolved.opened);
            state.metrics.wire.written();
            body = Bytes::from(serde_json::to_vec(value).map_err(|e| ProxyError::Internal(e.to_string()))?);
        }
    }
    // Threshold compaction done here for an upstream without it: the answer leads with
    // the proxy's compaction block when the round ran a pass.
    let threshold = native::asks_threshold(&state, api, json.as_ref().ok());
    // Codex's remote compaction (a `compaction_trigger` item): answered by the proxy for
    // an upstream without it (see `native::trigger`).
    if api == Api::Responses
        && let Ok(value) = &mut json
        && native::has_trigger(value)
    {
        let value = std::mem::take(value);
        let answer = native::answer_trigger(&state, method, &path, &headers, body, value, carried).await?;
        return Ok(stamp(
            answer.unwrap_or_else(|upstream| relay(upstream, None)),
            started.elapsed(),
            None,
        ));
    }
    let mut stance = match (api, &json) {
        (Api::OpenAi, _) | (_, Err(_)) => Stance::Absent,
        (_, Ok(value)) => context_management::stance_of(value),
    };
    // Server-side compaction asked of an upstream that has none (the proxy serves the
    // compaction endpoint for it): the proxy compacts as for any request, at the client's
    // threshold too, and the edit the upstream would refuse or ignore is not forwarded
    // (the client's others are); a pass's compaction item goes into the answer.
    let mut server_side = None;
    if api != Api::OpenAi
        && matches!(stance, Stance::Provider(_))
        && state.serves_compaction.load(Ordering::Relaxed)
        && let Ok(value) = &mut json
        && let Some(taken) = native::ServerSide::take(api, value)
    {
        state.metrics.wire.written();
        body = Bytes::from(serde_json::to_vec(value).map_err(|e| ProxyError::Internal(e.to_string()))?);
        stance = context_management::stance_of(value);
        state.metrics.native.server_side();
        server_side = Some(taken);
    }
    if stance == Stance::LeftToClient {
        state.metrics.wire.kept_compacting();
    }
    if let Stance::Provider(edit) = stance {
        // The client asked the provider to compact (or to clear old tool results): the
        // conversation is the provider's to shape, so the proxy stands down and forwards
        // it as it came. Edits that clear only thinking leave it compacting (below).
        state.metrics.wire.stood_down(edit);
        tracing::info!(
            route = api.name(),
            edit = edit.name(),
            "context_management: the provider compacts; forwarded unchanged"
        );
        let overhead = started.elapsed();
        state.metrics.added_latency(overhead);
        let response = send(&state, method, &path, &headers, body).await?;
        return Ok(stamp(relay(response, None), overhead, None));
    }
    // Messages: the client's request as JSON, for its breakpoints (the parse below takes
    // the JSON apart and strips them from the conversation).
    let client_json = match (api, &json) {
        (Api::Anthropic, Ok(value)) => Some(value.clone()),
        // OpenAI with `--openai-cache-key`: the key goes into this JSON, not a second parse.
        (Api::OpenAi | Api::Responses, Ok(value)) if state.config.wire.openai_cache_key => Some(value.clone()),
        _ => None,
    };
    let parsed = match json.and_then(|value| api::parse_value(api, value, &headers, &state.config.wire.session_from)) {
        Ok(mut parsed) => {
            native::carry_session(&mut parsed.identity, carried).map_err(ProxyError::BadRequest)?;
            parsed
        }
        Err(ParseError::Invalid(problem)) => return Err(ProxyError::BadRequest(problem)),
        Err(ParseError::Unsupported(why)) => {
            // Forwarded as it came: the upstream answers it as it would without us.
            tracing::debug!(route = api.name(), %why, "not compacted; forwarded unchanged");
            let overhead = started.elapsed();
            state.metrics.added_latency(overhead);
            let response = send(&state, method, &path, &headers, body).await?;
            return Ok(stamp(relay(response, None), overhead, None));
        }
    };
    let key = parsed.identity.key.clone();
    let compactor = state.config.budgets.for_model(&parsed.model)?;
    let fallback = state.config.budgets.base().counter().clone();
    let session = state.sessions.get(&key, &fallback);
    // `--summarizer-key client`: a pass this request triggers pays with its key.
    let client_auth = if state.config.client_key {
        ClientAuth::of(&headers)
    } else {
        ClientAuth::default()
    };
    let mut traced = Traced::start(&state, api, &parsed.model, &key);
    let mut prepared = {
        let mut guard = session.lock().await;
        let round = Round {
            config: &state.config,
            compactor: &compactor,
            metrics: &state.metrics,
            api,
            request: &parsed,
            original: &body,
            attempt: Attempt::First,
            auth: &client_auth,
            threshold: server_side.and_then(native::ServerSide::threshold),
        };
        guard.prepare(&round).await?
    };
    if let Some(answer) = threshold.and_then(|t| native::paused_answer(t, &state, &headers, &parsed, &prepared)) {
        // `pause_after_compaction`: the block alone, the upstream not asked.
        return Ok(stamp(answer, started.elapsed(), prepared.pass.as_deref()));
    }
    prepared.body = finish(&state, api, &body, client_json.as_ref(), &mut prepared, &key);
    let owner = server_side.map(|_| native::owner_of(&headers)).unwrap_or_default();
    let emitted = |prepared: &crate::sessions::Prepared| {
        server_side.and_then(|s| s.item(&state.config.sealer, &owner, &key, &parsed.wire, prepared))
    };
    let mut item = emitted(&prepared);
    // Thinking a pass moved onto a new prefix: the provider drops it instead of a 400;
    // the oldest stubs: the provider clears them, so that no thinking moves.
    let edits = ProviderEdits {
        drop_block: prepared.needs_drop_block,
        clear_keep: prepared.clear_keep,
    };
    if let Some((body, with_betas, applied)) =
        provider_edits::apply(&prepared.body, &headers, edits, &state.metrics.wire)
    {
        prepared.body = body;
        headers = with_betas;
        if applied.drop_block {
            state.metrics.drop_block_pass.fetch_add(1, Ordering::Relaxed);
        }
        if applied.clearing {
            state.metrics.server_clearing.fetch_add(1, Ordering::Relaxed);
        }
    }
    let mut offered = offer_expand(&state, api, &mut prepared);
    traced.round(&prepared);
    let overhead = started.elapsed();
    state.metrics.added_latency(overhead);
    tracing::debug!(
        session = %key,
        store_key = %prepared.store_key,
        route = api.name(),
        stream = parsed.stream,
        messages = prepared.messages.len(),
        "forwarding"
    );
    let response = send(&state, method.clone(), &path, &headers, prepared.body.clone()).await?;
    let status = response.status();
    let (response, prepared, overhead) = if matches!(status.as_u16(), 400 | 413 | 422) {
        let headers_in = upstream::relay_headers(response.headers());
        let error_body = read_bounded(response).await?;
        if let Some((retry_body, retry_headers)) =
            binding_retry(api, &parsed, status.as_u16(), &error_body, &prepared, &headers)
        {
            // A signature 400 (a client that edited its own history, say), or sealed
            // items another key sealed: the documented fix, once. A second refusal goes
            // to the client as it came.
            if api == Api::Anthropic {
                tracing::info!(session = %key, "upstream refused a thinking block's signature: retrying once with drop_block");
                state.metrics.drop_block_recovery.fetch_add(1, Ordering::Relaxed);
            } else {
                tracing::info!(session = %key, "upstream could not verify sealed items: retrying once without them");
                state.metrics.sealed_recovery.fetch_add(1, Ordering::Relaxed);
            }
            let response = send(&state, method, &path, &retry_headers, retry_body).await?;
            let response = relay_tapped(&state, response, api, &parsed.model, prepared, traced.into_hook());
            return Ok(stamp(with_item(response, item).await, overhead, None));
        }
        if !api::is_context_length_error(status.as_u16(), &error_body) {
            return Ok(stamp(
                buffered(status, headers_in, error_body),
                overhead,
                prepared.pass.as_deref(),
            ));
        }
        tracing::info!(session = %key, "upstream context-length error: compacting as the ContextManager would and retrying once");
        state.metrics.context_retries.fetch_add(1, Ordering::Relaxed);
        let retry_started = Instant::now();
        let mut retried = {
            let mut guard = session.lock().await;
            let round = Round {
                config: &state.config,
                compactor: &compactor,
                metrics: &state.metrics,
                api,
                request: &parsed,
                original: &body,
                attempt: Attempt::ContextLengthRetry,
                auth: &client_auth,
                threshold: server_side.and_then(native::ServerSide::threshold),
            };
            guard.prepare(&round).await?
        };
        retried.body = finish(&state, api, &body, client_json.as_ref(), &mut retried, &key);
        item = emitted(&retried);
        offered = offer_expand(&state, api, &mut retried);
        traced.round(&retried);
        let overhead = overhead + retry_started.elapsed();
        let response = send(&state, method.clone(), &path, &headers, retried.body.clone()).await?;
        (response, retried, overhead)
    } else {
        (response, prepared, overhead)
    };
    let pass = prepared.pass.clone();
    let lead = threshold.and_then(|_| native::threshold_block(&state, &headers, &parsed, &prepared));
    let hook = traced.into_hook();
    let response = if offered && response.status().is_success() {
        state.metrics.rewritten(prepared.removed);
        let exchange = expand::Exchange {
            state: state.clone(),
            session,
            api,
            request: parsed,
            original: body,
            method,
            path,
            headers,
            key,
            compactor,
            sent: prepared.messages,
            counter: prepared.counter,
            store_key: prepared.store_key,
        };
        exchange.respond(response, hook).await
    } else {
        relay_tapped(&state, response, api, &parsed.model, prepared, hook)
    };
    let response = match lead {
        Some(block) => native::lead_with(response, block).await,
        None => response,
    };
    Ok(stamp(with_item(response, item).await, overhead, pass.as_deref()))
}

/// `response` with the server-side compaction's `item` in it, when there is one.
async fn with_item(response: Response, item: Option<serde_json::Value>) -> Response {
    match item {
        Some(item) => native::with_item(response, item).await,
        None => response,
    }
}

/// Offers the `compactor_expand` tool in `prepared`'s body when the proxy expands and
/// the round allows it (see [`expand::offer`]); true when it did.
fn offer_expand(state: &AppState, api: Api, prepared: &mut crate::sessions::Prepared) -> bool {
    match expand::offer(state, api, &prepared.body, prepared.pass.is_some()) {
        Some(body) => {
            prepared.body = body;
            true
        }
        None => false,
    }
}

/// The forwarded body of `prepared` with the wire options applied (breakpoints, cache
/// key); `client_json` is the client's request as JSON, when the route read it.
fn finish(
    state: &AppState,
    api: Api,
    original: &Bytes,
    client_json: Option<&serde_json::Value>,
    prepared: &mut crate::sessions::Prepared,
    session: &str,
) -> Bytes {
    outgoing::finish(
        api,
        &state.config.wire,
        &state.metrics.wire,
        outgoing::Sent {
            bytes: original,
            json: client_json,
        },
        outgoing::Forwarded {
            body: std::mem::take(&mut prepared.body),
            json: prepared.json.take(),
        },
        session,
    )
}

/// Adds the overhead header, and the pass header when a rewrite applied.
fn stamp(mut response: Response, overhead: std::time::Duration, pass: Option<&str>) -> Response {
    let millis = format!("{:.3}", overhead.as_secs_f64() * 1000.0);
    if let Ok(value) = header::HeaderValue::from_str(&millis) {
        response.headers_mut().insert(OVERHEAD_HEADER, value);
    }
    if let Some(value) = pass.and_then(|p| header::HeaderValue::from_str(p).ok()) {
        response.headers_mut().insert(COMPACTED_HEADER, value);
    }
    response
}

fn relay_tapped(
    state: &AppState,
    response: reqwest::Response,
    api: Api,
    model: &str,
    prepared: crate::sessions::Prepared,
    hook: Option<upstream::UsageHook>,
) -> Response {
    if response.status().is_success() {
        state.metrics.rewritten(prepared.removed);
    }
    let tap = response.status().is_success().then(|| {
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        Tap::new(
            Calibration {
                api,
                messages: prepared.messages,
                model: model.to_owned(),
                counter: prepared.counter,
            },
            &content_type,
        )
        .with_hook(hook)
    });
    relay(response, tap)
}

async fn read_bounded(mut response: reqwest::Response) -> Result<Bytes, ProxyError> {
    let mut out = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| ProxyError::Upstream("the upstream's error body broke off".to_owned()))?
    {
        if out.len() + chunk.len() > MAX_ERROR_BODY {
            break;
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(out))
}

fn buffered(status: StatusCode, headers: HeaderMap, body: Bytes) -> Response {
    let mut out = Response::new(Body::from(body));
    *out.status_mut() = status;
    *out.headers_mut() = headers;
    out
}
