//! # compactor-proxy
//!
//! An OpenAI- and Anthropic-compatible HTTP proxy that keeps any agent, in any language,
//! inside its context window: point the SDK's base URL at it and change nothing else.
//! Chat completions, the Responses API and Anthropic Messages are compacted; every
//! other path is passed through.
//!
//! Per session (the `x-compactor-session` header, else the identity a known client sends,
//! else `--session-from`, else a digest of model, system prompt and first user message:
//! see [`KNOWN_CLIENTS`]) it serves a *stable prefix*: once a compaction replaced the
//! start of the history, every later request whose first messages match is sent as the
//! replacement plus the new messages, so the provider's prompt cache keeps hitting while
//! the agent keeps sending its full history. Compaction is the engine's own
//! ([`llm_compactor::Compactor`]), triggered on the rewritten request with a counter
//! calibrated from the upstream's reported usage; an upstream context-length error is
//! answered by compacting to the target and retrying once. Every session is recorded in
//! a [`llm_compactor::store::SessionStore`] as the replayable JSONL transcript of what the
//! upstream saw.
//!
//! [`ProxyConfigBuilder::summarizer_upstream`] (`--summarizer upstream`) summarizes each
//! pass with the model of the request being compacted, through the upstream, with the
//! client's key (summaries are billed to it), in the form that reads the agent's prompt
//! cache ([`UpstreamSummarizer`]).
//!
//! With the `otel` feature, [`ProxyConfigBuilder::telemetry`] traces every proxied request
//! to OpenTelemetry in the GenAI conventions (`Telemetry::from_env` reads the standard
//! `OTEL_EXPORTER_OTLP_*` variables; see `docs/wire.md`).
//!
//! ```no_run
//! # async fn run() -> Result<(), compactor_proxy::ProxyError> {
//! use std::sync::Arc;
//! use llm_compactor::{Compactor, CompactorConfig, count::HeuristicCounter, store::open_store};
//! use compactor_proxy::{ProxyConfig, serve};
//!
//! let compactor = Compactor::new(CompactorConfig::builder(128_000).build().unwrap(), Arc::new(HeuristicCounter));
//! let store = open_store("memory:").await?;
//! let config = ProxyConfig::builder("https://api.openai.com", Arc::new(compactor), store).build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! serve(config, listener, std::future::pending()).await
//! # }
//! ```

#![forbid(unsafe_code)]

mod api;
mod binding_retry;
mod budgets;
mod client_key;
mod config;
mod error;
mod expand;
mod identity;
mod metrics;
mod models;
mod native;
mod outgoing;
mod pass_done;
mod provider_edits;

mod routes;
mod session_map;
mod sessions;
mod state;
#[cfg(feature = "otel")]
mod telemetry;
mod traced;
mod ui;
mod ui_token;
mod upstream;
mod upstream_responses;
mod upstream_summarizer;

use std::future::Future;

use axum::serve::ListenerExt;
use std::sync::Arc;

pub use client_key::ClientKeySummarizer;
pub use config::{
    DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_SESSIONS, ExpandTool, PrepareConfig, ProxyConfig, ProxyConfigBuilder,
};
pub use error::ProxyError;
pub use identity::{
    KNOWN_CLIENTS, KnownClient, KnownSource, PARENT_HEADERS, RecordedIdentity, SESSION_HEADER, SessionFrom, Tier,
};
pub use models::{CONTEXT_WINDOWS, context_window};
pub use native::NativeCompaction;
pub use outgoing::WireOptions;
pub use routes::{COMPACTED_HEADER, OVERHEAD_HEADER};
#[cfg(feature = "otel")]
pub use telemetry::{ENDPOINT_VARS, Telemetry, TelemetryError};
pub use upstream_summarizer::UpstreamSummarizer;

/// Serves the proxy on `listener` until `shutdown` completes; then stops accepting and
/// returns once every in-flight request (streamed answers included) has finished.
///
/// # Errors
/// [`ProxyError::Config`] when the upstream client cannot be built, [`ProxyError::Io`]
/// when serving fails.
pub async fn serve(
    config: ProxyConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ProxyError> {
    if config.ui
        && config.ui_token.is_none()
        && let Ok(addr) = listener.local_addr()
        && !addr.ip().is_loopback()
    {
        return Err(ProxyError::Config(format!(
            "the inspector (--ui) shows every session's conversation: on {addr}, which is not a loopback \
             address, it needs a token (--ui-token-env VAR), or listen on 127.0.0.1"
        )));
    }
    let client = upstream::client(&config)?;
    let state = Arc::new(state::AppState {
        sessions: sessions::Sessions::new(config.max_sessions),
        metrics: metrics::Metrics::new(config.pricing),
        serves_compaction: std::sync::atomic::AtomicBool::new(config.native_compaction == NativeCompaction::Serve),
        config,
        client,
    });
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, upstream = state.config.upstream(), "compactor proxy listening");
    }
    // Streamed answers are many small writes: with Nagle's algorithm on, a write waits
    // for the ACK of the previous one, which the client delays (~40 ms), so every
    // relayed chunk after the first would be held back. Off, each goes out at once.
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY on a client connection");
        }
    });
    #[cfg(feature = "otel")]
    let telemetry = state.config.telemetry.clone();
    axum::serve(listener, routes::router(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    // The last spans are exported before returning (off the async workers: the exporter
    // blocks its caller while it sends on this runtime).
    #[cfg(feature = "otel")]
    if let Some(telemetry) = telemetry {
        let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    }
    tracing::info!("compactor proxy stopped");
    Ok(())
}
