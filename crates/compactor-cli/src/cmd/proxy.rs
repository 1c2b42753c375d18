//! `compactor proxy`: serve the OpenAI- and Anthropic-compatible compaction proxy, list
//! its sessions, and export one as a JSONL transcript.
//!
//! The engine flags are `compact`'s own ([`CompactOpts`]), so a script that tuned
//! `compact` runs the proxy with the same numbers.

use std::path::PathBuf;
use std::sync::Arc;

use compactor_proxy::{
    ClientKeySummarizer, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_SESSIONS, NativeCompaction, ProxyConfig, SessionFrom,
    WireOptions,
};
use llm_compactor::backend::http::Protocol;
use llm_compactor::plan::Pricing;
use llm_compactor::plan::breakpoints::{BreakpointPolicy, CacheMode, CacheTtl};
use llm_compactor::store::{SessionStore, StoreError, export_jsonl, open_store};

use super::compact_opts::CompactOpts;
use super::summarizer::SummarizerKind;
use crate::error::CliError;

/// Whose key the HTTP summarizer sends.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummarizerKey {
    /// Its own (`--api-key-env`), as in `compact`.
    Own,
    /// The key of the request that triggered the compaction; the summarizer's origin
    /// must be the upstream's (checked at start-up).
    Client,
}

/// The store used unless `--store` says otherwise.
const DEFAULT_STORE: &str = "sqlite:compactor-sessions.db";

/// Run the compaction proxy, or inspect its sessions.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Summarizer: --summarizer upstream summarizes with the agent's own model through --upstream, \
with the client's key: summaries are then billed to the client's key (never stored or logged). \
The default, auto, is for a proxy: an API key in the environment (OPENAI_API_KEY, else ANTHROPIC_API_KEY): \
that provider; else the model-free ledger; never the local model unless --summarizer local asks for it.\n\n\
Examples:\n  compactor proxy --upstream https://api.anthropic.com --summarizer upstream\n  compactor proxy --upstream https://api.openai.com --budget 128000\n  compactor proxy sessions\n  compactor proxy export auto-0123abcd -o s.jsonl\n  compactor proxy report auto-0123abcd -o report.html"
)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// List the sessions in the store.
    Sessions(StoreArgs),
    /// Write one session's JSONL transcript (replays with `compactor session replay`).
    Export(ExportArgs),
    /// Write an HTML report of what compaction did to one session (`compactor report`'s).
    Report(Box<ProxyReportArgs>),
    /// Print the original messages behind handles a summary or a stub of the session names.
    Expand(ProxyExpandArgs),
}

#[derive(clap::Args, Debug)]
struct ProxyReportArgs {
    /// The session key (see `compactor proxy sessions`).
    session: String,
    /// The HTML file to write (stdout when absent).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    report: super::report::ReportArgs,
}

#[derive(clap::Args, Debug)]
struct ProxyExpandArgs {
    /// The session key (see `compactor proxy sessions`).
    session: String,
    /// The handles (`#` and ten hex digits) or ranges (`#first..#last`).
    #[arg(required = true)]
    handles: Vec<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(clap::Args, Debug)]
struct StoreArgs {
    /// Where sessions are recorded: `sqlite:PATH`, `memory:` or `postgres://...`.
    #[arg(long, default_value = DEFAULT_STORE)]
    store: String,
}

#[derive(clap::Args, Debug)]
struct ExportArgs {
    /// The session key (see `compactor proxy sessions`).
    session: String,
    /// The output file (stdout when absent).
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: String,
    /// The upstream API origin (e.g. `https://api.openai.com` or `https://api.anthropic.com`);
    /// request paths are appended to it.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,
    /// Where sessions are recorded: `sqlite:PATH`, `memory:` or `postgres://...`.
    #[arg(long, default_value = DEFAULT_STORE)]
    store: String,
    /// The largest request body accepted, in bytes (larger: 413).
    #[arg(long, default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
    /// Each request's budget is its model's context window (a built-in table of OpenAI
    /// and Anthropic models, matched by prefix); `--budget` is the budget of models the
    /// table does not list, and without it such a request is refused with a 400.
    #[arg(long)]
    budget_by_model: bool,
    /// Pricing preset of the estimated cost saved in `/metrics`: anthropic, openai-gpt5
    /// or openai-4o [default: the engine's cost-policy pricing, anthropic].
    #[arg(long, value_name = "PRESET")]
    pricing: Option<String>,
    /// Whose key the HTTP summarizer (`--summarizer openai|anthropic`) sends: `own`, or
    /// `client`: the key of the request that triggered the compaction, never stored or
    /// logged; refused unless the summarizer's `--base-url` has the upstream's origin.
    /// (`--summarizer upstream` needs neither: it always sends the client's key.)
    #[arg(long, value_enum, default_value_t = SummarizerKey::Own)]
    summarizer_key: SummarizerKey,
    /// The most sessions held in memory; the least recently used idle ones beyond it
    /// are dropped and rebuilt from the store when they come back.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_sessions: usize,
    /// Seconds a compaction lease lasts unless its holder renews it (it renews every
    /// third): how long the other instances sharing the store wait before they take over
    /// a session from an instance that died while compacting it [default: 120].
    #[arg(long, value_name = "SECS", value_parser = super::ranges::seconds)]
    lease_ttl: Option<f64>,
    /// Passes whose summarizer is a model are prepared in the background by default and
    /// installed when a request reaches the trigger: no request waits for a summary
    /// unless it is over the budget. A pass starts early enough for the session's pace
    /// (growth per round, time between rounds, the summarizer's observed time) and no
    /// earlier, at the latest at the trigger; before the pace is known, at 0.65 of the
    /// budget (docs/prepared-compaction.md). Setting this fixes the latest share (and the
    /// first threshold) to RATIO. Setting it also prepares with the ledger.
    #[arg(long, value_name = "RATIO", value_parser = prepare_ratio, conflicts_with = "no_prepare")]
    prepare_ratio: Option<f64>,
    /// Seconds a request over the budget waits for a pass being prepared before it
    /// compacts inline [default: 30].
    #[arg(long, value_name = "SECS", value_parser = super::ranges::seconds, conflicts_with = "no_prepare")]
    prepare_wait: Option<f64>,
    /// Run every pass inline, at the request that reaches the trigger (the request then
    /// waits for the summary).
    #[arg(long)]
    no_prepare: bool,
    /// Serve the read-only inspector at /ui on the listen address: the sessions, each
    /// with its report. Off by default: it shows conversation content (never a key or a
    /// header), so keep it on localhost or behind your own auth.
    #[arg(long)]
    ui: bool,
    /// The environment variable holding the inspector's token: `/ui` then answers only
    /// requests that present it (`Authorization: Bearer TOKEN`, or a browser's login
    /// prompt with TOKEN as the password). Required with --ui on any address other than
    /// loopback (the proxy refuses to start without it there).
    #[arg(long, value_name = "VAR", requires = "ui")]
    ui_token_env: Option<String>,
    /// Who answers `POST /v1/responses/compact` (OpenAI's standalone compaction):
    /// `auto` forwards it until the upstream answers that it has no such endpoint (404,
    /// 405, 501), then answers it itself; `serve` always answers it; `forward` never does.
    /// See docs/native-compaction.md.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = native_compaction)]
    native_compaction: NativeCompaction,
    /// The environment variable holding the key that seals the compaction items the
    /// proxy writes (at least 16 bytes). Without it a key is drawn at start and items
    /// written before a restart are refused; instances behind one address share it.
    #[arg(long, value_name = "VAR")]
    native_compaction_key_env: Option<String>,
    /// Send aging stubs as they are even where thinking is bound to its prefix. By
    /// default, on a Messages request with thinking on and a model with preserved
    /// thinking, the oldest stubbed results go out as the client sent them with
    /// Anthropic's server-side `clear_tool_uses` edit clearing them, so that the thinking
    /// after them stays valid. See docs/binding.md.
    #[arg(long)]
    no_server_clearing: bool,
    /// Anthropic cache breakpoints: `auto` marks the static prefix, the rewritten prefix
    /// and the last message when a request carries no `cache_control`, and keeps a
    /// client's own; `keep` only keeps the client's; `off` changes nothing.
    #[arg(long, value_name = "MODE", default_value = "auto", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CacheMode>()))]
    anthropic_cache: CacheMode,
    /// The TTL of the breakpoints `--anthropic-cache auto` adds: `5m` or `1h`.
    #[arg(long, value_name = "TTL", default_value = "5m", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<CacheTtl>()))]
    anthropic_cache_ttl: CacheTtl,
    /// Set OpenAI's `prompt_cache_key` from the session when the client set none, so one
    /// session's requests land on one cache.
    #[arg(long)]
    openai_cache_key: bool,
    /// Where else a session's identity is read, after `x-compactor-session` and the known
    /// clients' identities: `header:NAME` or `body:PATH` (a dotted path); repeatable.
    #[arg(long, value_name = "SOURCE", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<SessionFrom>()))]
    session_from: Vec<SessionFrom>,
    /// Offer the model the `compactor_expand` tool in compacted sessions and answer its
    /// calls from the store, invisibly to the client (implies `--expand`: summaries and
    /// stubs name handles). Only in requests that declare tools and let the model
    /// choose; see docs/expand.md for the rules per route.
    #[arg(long)]
    expand_tool: bool,
    /// The most hidden follow-up requests one client request may cost with
    /// `--expand-tool` (the last is sent with `tool_choice` none).
    #[arg(long, value_name = "N", default_value_t = 3, requires = "expand_tool", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=20))]
    expand_max_calls: usize,
    #[command(flatten)]
    engine: CompactOpts,
}

fn prepare_ratio(text: &str) -> Result<f64, String> {
    let ratio: f64 = text.parse().map_err(|e| format!("{e}"))?;
    if ratio > 0.0 && ratio <= 1.0 {
        Ok(ratio)
    } else {
        Err(format!("{ratio} is not in (0, 1]"))
    }
}

/// Runs `compactor proxy`.
///
/// # Errors
/// A usage error for bad flags; a runtime failure when the store or the listener fails.
pub fn run(args: Args) -> Result<(), CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(CliError::failed)?;
    match args.command {
        Some(Command::Sessions(store)) => runtime.block_on(sessions(&store.store)),
        Some(Command::Export(export)) => runtime.block_on(export_session(export)),
        Some(Command::Report(report)) => runtime.block_on(report_session(*report)),
        Some(Command::Expand(expand)) => {
            drop(runtime);
            super::expand::run(super::expand::SessionExpandArgs {
                session: expand.session,
                handles: expand.handles,
                json: expand.json,
                store: Some(expand.store.store),
            })
        }
        None => {
            init_logging();
            let serve = args.serve;
            runtime.block_on(async {
                let config = build_config(&serve).await?;
                serve_until_signal(config, &serve.listen).await
            })
        }
    }
}

async fn store(url: &str) -> Result<Arc<dyn SessionStore>, CliError> {
    open_store(url).await.map_err(|e| match e {
        // An unknown scheme or a backend this build lacks: the command line is wrong.
        StoreError::Backend(_) => CliError::Usage(format!("--store: {e}")),
        _ => CliError::Failed(format!("--store: {e}")),
    })
}

async fn sessions(url: &str) -> Result<(), CliError> {
    let store = store(url).await?;
    let sessions = store.sessions().await.map_err(CliError::failed)?;
    let mut rows = Vec::with_capacity(sessions.len());
    for info in sessions {
        let meta = super::proxy_identity::identity_of(store.as_ref(), &info.session).await;
        rows.push((info, meta));
    }
    crate::out::stdout(&super::proxy_identity::listing(&rows))
}

async fn export_session(args: ExportArgs) -> Result<(), CliError> {
    let store = store(&args.store.store).await?;
    let text = export_jsonl(store.as_ref(), &args.session)
        .await
        .map_err(CliError::failed)?;
    // Atomic and mode-preserving, like every `-o` of this CLI; stdout when not given.
    let body = text.strip_suffix('\n').unwrap_or(&text);
    crate::io::write_transcript_output(args.output.as_deref(), body)
}

async fn report_session(args: ProxyReportArgs) -> Result<(), CliError> {
    let options = args.report.options(&args.session)?;
    let store = store(&args.store.store).await?;
    // Replayed from the stored events, not exported to text and parsed again.
    let transcript = llm_compactor::session::Transcript::from_store(store.as_ref(), &args.session)
        .await
        .map_err(|e| CliError::Failed(format!("session {:?}: {e}", args.session)))?;
    let report = compactor_report::report_of_transcript(&transcript, &options)
        .map_err(|e| CliError::Failed(format!("session {:?}: {e}", args.session)))?;
    super::report::write_report(&report, args.output.as_deref())
}

async fn build_config(serve: &ServeArgs) -> Result<ProxyConfig, CliError> {
    let upstream = serve
        .upstream
        .as_deref()
        .ok_or_else(|| CliError::Usage("compactor proxy needs --upstream URL".to_owned()))?;
    if serve.engine.format().is_some() {
        return Err(CliError::Usage(
            "--format does not apply to the proxy: each route has its own (/v1/chat/completions: openai, /v1/responses: the Responses API, /v1/messages: anthropic)".to_owned(),
        ));
    }
    let pricing = serve
        .pricing
        .as_deref()
        .map(str::parse::<Pricing>)
        .transpose()
        .map_err(|e| CliError::Usage(format!("--pricing: {e}")))?;
    // `--expand-tool`: the model can only ask for handles the summaries and stubs name.
    let mut engine = serve.engine.clone();
    engine.expand |= serve.expand_tool;
    // Budgets at the door are on in the proxy unless `--door=false` (measured: nothing
    // changes on the real trajectories; a 53-image session would otherwise go out at
    // 34 MB, over the providers' 32 MB).
    engine.door.default_on = true;
    let upstream_summarizer = serve.engine.summarizer.summarizer == SummarizerKind::Upstream;
    if upstream_summarizer && serve.summarizer_key == SummarizerKey::Client {
        return Err(CliError::Usage(
            "--summarizer upstream always summarizes with the client's key: drop --summarizer-key client".to_owned(),
        ));
    }
    // An HTTP summarizer of its own: registered, so that a request to the model it asks
    // on the upstream's origin gets the summary request that reads the agent's cache.
    let own_http = match (serve.summarizer_key, serve.engine.summarizer.summarizer) {
        (SummarizerKey::Own, SummarizerKind::Openai) => Some(Protocol::OpenAi),
        (SummarizerKey::Own, SummarizerKind::Anthropic) => Some(Protocol::Anthropic),
        _ => None,
    }
    .map(|protocol| {
        let timeout = serve
            .engine
            .summarizer
            .summarizer_timeout
            .map(std::time::Duration::from_secs_f64);
        super::summarizer_http::backend(protocol, &serve.engine.summarizer.http, timeout, false)
    })
    .transpose()?;
    let (compactor, client_key) = match serve.summarizer_key {
        // A server's `auto`: never the local model.
        SummarizerKey::Own => (engine.compactor_with(engine.summarizer.build_for_server()?)?.0, None),
        SummarizerKey::Client => {
            let protocol = match serve.engine.summarizer.summarizer {
                SummarizerKind::Openai => Protocol::OpenAi,
                SummarizerKind::Anthropic => Protocol::Anthropic,
                _ => {
                    return Err(CliError::Usage(
                        "--summarizer-key client needs --summarizer openai|anthropic (an HTTP summarizer on the upstream's origin)"
                            .to_owned(),
                    ));
                }
            };
            let timeout = serve
                .engine
                .summarizer
                .summarizer_timeout
                .map(std::time::Duration::from_secs_f64);
            let backend = super::summarizer_http::backend(protocol, &serve.engine.summarizer.http, timeout, true)?;
            let summarizer = Arc::new(ClientKeySummarizer::new(backend));
            // The engine without a summarizer of its own; the client-keyed one goes in.
            let mut engine = engine.clone();
            engine.summarizer.summarizer = SummarizerKind::None;
            *engine.summarizer.http = Default::default();
            engine.summarizer.summarizer_timeout = None;
            let compactor = engine.compactor(false)?.0.with_summarizer(summarizer.clone());
            (compactor, Some(summarizer))
        }
    };
    let store = store(&serve.store).await?;
    let mut builder = ProxyConfig::builder(upstream, Arc::new(compactor), store)
        .max_body_bytes(serve.max_body_bytes)
        .max_sessions(serve.max_sessions)
        .ui(serve.ui)
        .ui_token(ui_token(serve.ui_token_env.as_deref())?)
        .native_compaction(serve.native_compaction)
        .native_compaction_key(native_compaction_key(serve.native_compaction_key_env.as_deref())?)
        .server_clearing(!serve.no_server_clearing)
        .expand_tool(serve.expand_tool.then_some(compactor_proxy::ExpandTool {
            max_calls: serve.expand_max_calls,
        }))
        .target(serve.engine.target)
        .focus(serve.engine.focus.clone())
        .wire(WireOptions {
            anthropic_cache: BreakpointPolicy {
                mode: serve.anthropic_cache,
                ttl: serve.anthropic_cache_ttl,
            },
            openai_cache_key: serve.openai_cache_key,
            session_from: serve.session_from.clone(),
        });
    // OpenTelemetry when the standard OTEL_EXPORTER_OTLP_* environment names an endpoint.
    let telemetry = compactor_proxy::Telemetry::from_env().map_err(|e| CliError::Usage(e.to_string()))?;
    if telemetry.is_some() {
        eprintln!("compactor proxy: tracing to OpenTelemetry (OTLP/HTTP JSON)");
    }
    builder = builder.telemetry(telemetry);
    if serve.budget_by_model {
        builder = builder.budget_by_model(serve.engine.budget);
    }
    if let Some(pricing) = pricing {
        builder = builder.pricing(pricing);
    }
    if let Some(summarizer) = &client_key {
        builder = builder.summarizer_key_from_client(summarizer);
    }
    if let Some(backend) = &own_http {
        builder = builder.summarizer_endpoint(backend.endpoint(), backend.model());
    }
    if upstream_summarizer {
        crate::out::stderr_line(
            "compactor proxy: summarizer upstream: each request's own model through the upstream, billed to the client's key",
        )?;
        builder = builder.summarizer_upstream();
    }
    if let Some(secs) = serve.lease_ttl {
        builder = builder.lease_ttl(std::time::Duration::from_secs_f64(secs));
    }
    if serve.no_prepare {
        builder = builder.prepare(None);
    } else if serve.prepare_ratio.is_some() || serve.prepare_wait.is_some() {
        let mut prepare = compactor_proxy::PrepareConfig::default();
        if let Some(ratio) = serve.prepare_ratio {
            prepare.ratio = ratio;
            prepare.ceiling = ratio;
        }
        if let Some(secs) = serve.prepare_wait {
            prepare.max_wait = std::time::Duration::from_secs_f64(secs);
        }
        builder = builder.prepare(Some(prepare));
    }
    builder.build().map_err(|e| CliError::Usage(e.to_string()))
}

/// `--native-compaction`'s modes.
fn native_compaction(text: &str) -> Result<NativeCompaction, String> {
    NativeCompaction::parse(text).ok_or_else(|| format!("{text:?}: expected auto, serve or forward"))
}

/// The compaction items' key from the variable `--native-compaction-key-env` names
/// (never echoed).
fn native_compaction_key(var: Option<&str>) -> Result<Option<String>, CliError> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(key) if key.len() >= 16 => Ok(Some(key)),
        _ => Err(CliError::Usage(format!(
            "--native-compaction-key-env {var}: the variable is not set, or holds fewer than 16 bytes"
        ))),
    }
}

/// The inspector's token from the variable `--ui-token-env` names (never echoed).
fn ui_token(var: Option<&str>) -> Result<Option<String>, CliError> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(token) if !token.trim().is_empty() => Ok(Some(token)),
        _ => Err(CliError::Usage(format!(
            "--ui-token-env {var}: the variable is not set, or empty"
        ))),
    }
}

async fn serve_until_signal(config: ProxyConfig, listen: &str) -> Result<(), CliError> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Failed(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr().map_err(CliError::failed)?;
    crate::out::stderr_line(&format!(
        "compactor proxy: listening on http://{addr} (upstream {})",
        config.upstream()
    ))?;
    if config.ui() {
        crate::out::stderr_line(&format!(
            "compactor proxy: inspector on http://{addr}/ui (read-only; it shows conversation content)"
        ))?;
    }
    compactor_proxy::serve(config, listener, shutdown_signal())
        .await
        .map_err(CliError::failed)
}

/// Completes on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(term) => term,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("compactor proxy: shutting down, finishing in-flight requests");
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
