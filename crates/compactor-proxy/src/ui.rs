//! The inspector (`--ui`): a read-only view of the sessions in the store.
//!
//! `/ui` lists the sessions (how each was identified, requests, compactions, tokens and
//! estimated cost saved, last seen); `/ui/session/KEY` is the session's report
//! (`compactor-report`), built from the store on every load, so it is live.
//!
//! Off by default, and then `/ui` answers 404 here rather than being passed upstream. It
//! shows conversation content, so on any address other than loopback it needs a token
//! (`--ui-token-env VAR`; see `ui_token`), without which the proxy refuses to start. It reads only the store: a request's headers (an API key among them) are never
//! stored, so no page can show one; the session key is shown, as `compactor proxy
//! sessions` shows it. Nothing of a conversation is logged here.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use compactor_report::{ReportOptions, SessionRow, render_index, render_with, report_of_jsonl};
use llm_compactor::store::{SessionInfo, StoredEvent};

use crate::state::AppState;

/// The most sessions `/ui` lists (the most recently seen first).
const MAX_LISTED: usize = 200;

/// The inspector's routes. They are always routed (so that `/ui` is never passed
/// upstream) and answer 404 unless the proxy was started with `--ui`.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/ui", get(index))
        .route("/ui/", get(index))
        .route("/ui/session/{key}", get(session))
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found\n").into_response()
}

/// An HTML page with the headers that keep it to itself: nothing loads from elsewhere,
/// nothing is cached or sniffed, no referrer leaves it.
fn page(status: StatusCode, html: String) -> Response {
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
        ),
        (header::CACHE_CONTROL, "no-store"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The session key, percent-encoded for a path segment.
fn encode_segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn options(state: &AppState, title: &str) -> ReportOptions {
    let compactor = state.config.budgets.base();
    ReportOptions::new(compactor.counter().clone())
        .limits_of(compactor.config())
        .pricing(state.config.pricing)
        .title(title)
}

fn jsonl(events: &[StoredEvent]) -> String {
    let mut text = String::with_capacity(events.iter().map(|e| e.line.len() + 1).sum());
    for event in events {
        text.push_str(&event.line);
        text.push('\n');
    }
    text
}

/// `None` when the request may see the inspector; else the answer (404 when it is
/// off, 401 when a token is configured and not presented).
fn refused(state: &AppState, headers: &HeaderMap) -> Option<Response> {
    if !state.config.ui {
        return Some(not_found());
    }
    match &state.config.ui_token {
        Some(token) if !token.admits(headers) => {
            let mut response = (StatusCode::UNAUTHORIZED, "the inspector needs its token\n").into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"compactor inspector\", charset=\"UTF-8\""),
            );
            Some(response)
        }
        _ => None,
    }
}

async fn index(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    if let Some(refused) = refused(&state, &headers) {
        return refused;
    }
    let mut sessions: Vec<SessionInfo> = match state.config.store.sessions().await {
        Ok(sessions) => sessions,
        Err(error) => {
            tracing::warn!(%error, "inspector: the store could not list sessions");
            return page(StatusCode::SERVICE_UNAVAILABLE, render_index("sessions", &[], 0, ""));
        }
    };
    sessions.sort_by(|a, b| b.last_ts.cmp(&a.last_ts).then_with(|| a.session.cmp(&b.session)));
    let omitted = sessions.len().saturating_sub(MAX_LISTED);
    sessions.truncate(MAX_LISTED);
    let mut rows = Vec::with_capacity(sessions.len());
    for info in sessions {
        let events = state.config.store.events(&info.session, 0).await;
        let identity = match &events {
            Ok(events) => events
                .first()
                .map(|first| crate::identity::RecordedIdentity::from_meta_line(&first.line))
                .unwrap_or_default(),
            Err(_) => Default::default(),
        };
        let options = options(&state, &info.session);
        let key = info.session.clone();
        // Replaying and counting is CPU work: off the async workers.
        let built = tokio::task::spawn_blocking(move || {
            let events = events.map_err(|e| e.to_string())?;
            report_of_jsonl(&key, jsonl(&events).as_bytes(), &options).map_err(|e| e.to_string())
        })
        .await;
        let mut row = match built {
            Ok(Ok(report)) => SessionRow::from_report(&report),
            Ok(Err(problem)) => SessionRow {
                problem: Some(format!("could not be read: {problem}")),
                ..SessionRow::default()
            },
            Err(_) => SessionRow {
                problem: Some("could not be read".to_owned()),
                ..SessionRow::default()
            },
        };
        row.href = format!("/ui/session/{}", encode_segment(&info.session));
        row.identity = identity.describe(&info.session);
        row.last_seen = info.last_ts.unwrap_or_default();
        row.key = info.session;
        rows.push(row);
    }
    page(
        StatusCode::OK,
        render_index("compactor proxy: sessions", &rows, omitted, state.config.pricing.name),
    )
}

async fn session(State(state): State<Arc<AppState>>, headers: HeaderMap, Path(key): Path<String>) -> Response {
    if let Some(refused) = refused(&state, &headers) {
        return refused;
    }
    let events = match state.config.store.events(&key, 0).await {
        Ok(events) if events.is_empty() => return not_found(),
        Ok(events) => events,
        Err(error) => {
            tracing::warn!(%error, "inspector: the store could not be read");
            return (StatusCode::SERVICE_UNAVAILABLE, "the session store is unavailable\n").into_response();
        }
    };
    let options = options(&state, &key);
    let built = tokio::task::spawn_blocking(move || {
        report_of_jsonl(&key, jsonl(&events).as_bytes(), &options)
            .map(|report| render_with(&report, Some("/ui")))
            .map_err(|e| e.to_string())
    })
    .await;
    match built {
        Ok(Ok(html)) => page(StatusCode::OK, html),
        Ok(Err(problem)) => {
            tracing::warn!(%problem, "inspector: a stored session does not replay");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the session's transcript does not replay\n",
            )
                .into_response()
        }
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the report could not be built\n").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_encoded_for_a_path_segment() {
        assert_eq!(encode_segment("auto-0a~1"), "auto-0a~1");
        assert_eq!(encode_segment("a b/c?<x>"), "a%20b%2Fc%3F%3Cx%3E");
    }
}
