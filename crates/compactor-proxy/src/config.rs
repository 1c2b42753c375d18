//! [`ProxyConfig`]: everything the proxy needs, built once, shared by every request.
//!
//! The engine is configured exactly as for `compactor compact` (the CLI builds the
//! [`Compactor`] from the same flags); the proxy adds only where to forward, where to
//! record, and its own limits.

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::plan::Pricing;
use llm_compactor::store::SessionStore;
use llm_compactor::{Compactor, Policy};

use crate::budgets::Budgets;
use crate::client_key::{ClientKeySummarizer, same_origin};
use crate::error::ProxyError;
use crate::native::NativeCompaction;
use crate::outgoing::WireOptions;
use crate::upstream_summarizer::UpstreamSummarizer;
use llm_compactor::backend::http::DEFAULT_TIMEOUT;

/// The default bound on a request body: 32 MiB (long agent histories are large, but a
/// bound keeps one client from exhausting memory).
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The default bound on sessions held in memory: past it the least recently used idle
/// one is dropped (and rebuilt from the store if it comes back).
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// The proxy's configuration. Build with [`ProxyConfig::builder`].
#[derive(Clone)]
pub struct ProxyConfig {
    pub(crate) upstream: reqwest::Url,
    pub(crate) budgets: Arc<Budgets>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) max_body_bytes: usize,
    pub(crate) upstream_timeout: Duration,
    pub(crate) lease_ttl: Duration,
    pub(crate) holder: String,
    pub(crate) target: Option<usize>,
    pub(crate) focus: Option<String>,
    pub(crate) pricing: Pricing,
    pub(crate) client_key: bool,
    pub(crate) summarizer: SummarizerIs,
    pub(crate) max_sessions: usize,
    pub(crate) prepare: Option<PrepareConfig>,
    #[cfg(feature = "otel")]
    pub(crate) telemetry: Option<std::sync::Arc<crate::telemetry::Telemetry>>,
    pub(crate) ui: bool,
    pub(crate) ui_token: Option<crate::ui_token::UiToken>,
    pub(crate) wire: WireOptions,
    pub(crate) expand_tool: Option<ExpandTool>,
    pub(crate) native_compaction: NativeCompaction,
    pub(crate) sealer: crate::native::Sealer,
    pub(crate) server_clearing: bool,
}

/// `--expand-tool`: the proxy offers the model the `compactor_expand` tool in requests of
/// compacted sessions and answers its calls from the store, invisibly to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpandTool {
    /// The most follow-up requests one client request may cost (`--expand-max-calls`):
    /// the last one is sent with `tool_choice` none, so the model answers in text.
    pub max_calls: usize,
}

impl Default for ExpandTool {
    fn default() -> Self {
        ExpandTool { max_calls: 3 }
    }
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("upstream", &self.upstream.as_str())
            .field("budgets", &self.budgets)
            .field("store", &self.store)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("pricing", &self.pricing.name)
            .field("client_key", &self.client_key)
            .field("summarizer", &self.summarizer)
            .finish_non_exhaustive()
    }
}

impl ProxyConfig {
    /// A builder forwarding to `upstream` (e.g. `https://api.openai.com` or
    /// `http://127.0.0.1:9000`; request paths are appended to its path), compacting with
    /// `compactor` and recording into `store`.
    pub fn builder(upstream: &str, compactor: Arc<Compactor>, store: Arc<dyn SessionStore>) -> ProxyConfigBuilder {
        ProxyConfigBuilder {
            upstream: upstream.to_owned(),
            compactor,
            store,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            upstream_timeout: Duration::from_secs(600),
            lease_ttl: Duration::from_secs(120),
            by_model: None,
            target: None,
            focus: None,
            pricing: None,
            client_key_endpoint: None,
            summarizer_endpoint: None,
            summarizer_upstream: false,
            max_sessions: DEFAULT_MAX_SESSIONS,
            prepare: None,
            #[cfg(feature = "otel")]
            telemetry: None,
            ui: false,
            ui_token: None,
            wire: WireOptions::default(),
            expand_tool: None,
            native_compaction: NativeCompaction::default(),
            native_compaction_key: None,
            server_clearing: true,
        }
    }

    /// The upstream base URL.
    pub fn upstream(&self) -> &str {
        self.upstream.as_str()
    }

    /// The largest request body accepted (larger ones get 413).
    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes
    }

    /// The pricing preset of the estimated-cost-saved metric.
    pub fn pricing(&self) -> Pricing {
        self.pricing
    }

    /// True when the inspector (`/ui`) is served.
    pub fn ui(&self) -> bool {
        self.ui
    }

    /// The compactor the proxy was built with (with `--budget-by-model`, the one whose
    /// budget is the fallback).
    pub fn compactor(&self) -> &Arc<Compactor> {
        self.budgets.base()
    }

    /// True when a pass of a request to `model` sends the summary request that reads the
    /// agent's prompt cache: the summarizer is the agent's own provider and model (the
    /// upstream summarizer, or an HTTP summarizer on the upstream's origin asking
    /// `model`), or (as since issue 28) it pays with the client's key.
    pub fn summary_reads_cache(&self, model: &str) -> bool {
        if self.client_key {
            return true;
        }
        match &self.summarizer {
            SummarizerIs::Upstream => true,
            SummarizerIs::Http { endpoint, model: asks } => same_origin(endpoint, &self.upstream) && asks == model,
            SummarizerIs::Other => false,
        }
    }

    /// The cost policy the proxy compacts under: its compactor's (`--policy default|economy`
    /// on `compactor proxy`; every per-model budget keeps it).
    pub fn policy(&self) -> Policy {
        self.budgets.base().config().policy
    }
}

/// Builds a [`ProxyConfig`].
#[derive(Debug)]
pub struct ProxyConfigBuilder {
    upstream: String,
    compactor: Arc<Compactor>,
    store: Arc<dyn SessionStore>,
    max_body_bytes: usize,
    upstream_timeout: Duration,
    lease_ttl: Duration,
    by_model: Option<Option<usize>>,
    target: Option<usize>,
    focus: Option<String>,
    pricing: Option<Pricing>,
    client_key_endpoint: Option<String>,
    summarizer_endpoint: Option<(String, String)>,
    summarizer_upstream: bool,
    max_sessions: usize,
    /// `None`: the default (prepared when the summarizer waits on a model).
    prepare: Option<Option<PrepareConfig>>,
    #[cfg(feature = "otel")]
    telemetry: Option<std::sync::Arc<crate::telemetry::Telemetry>>,
    ui: bool,
    ui_token: Option<String>,
    wire: WireOptions,
    expand_tool: Option<ExpandTool>,
    native_compaction: NativeCompaction,
    native_compaction_key: Option<String>,
    server_clearing: bool,
}

impl ProxyConfigBuilder {
    /// On a Messages request with thinking on, on a model that binds thinking to its
    /// prefix, whether the oldest aging stubs go out as the client's own results with
    /// Anthropic's server-side `clear_tool_uses` edit clearing them, so that every
    /// thinking block after them stays valid (default on; `--no-server-clearing`). Off,
    /// the stubs are sent and the thinking after them is dropped by the provider
    /// (`drop_block`); the stubs' handles stay expandable either way from the transcript,
    /// but a result the server cleared shows the model no handle.
    pub fn server_clearing(mut self, on: bool) -> Self {
        self.server_clearing = on;
        self
    }

    /// Who answers `POST /v1/responses/compact` (default [`NativeCompaction::Auto`]: the
    /// upstream, until it answers that it has no such endpoint; then the proxy).
    pub fn native_compaction(mut self, mode: NativeCompaction) -> Self {
        self.native_compaction = mode;
        self
    }

    /// The key that seals the compaction items the proxy writes (at least 16 bytes;
    /// `--native-compaction-key-env`). Instances behind one address share it; without
    /// one a key is drawn at start, and items written before a restart are refused.
    pub fn native_compaction_key(mut self, key: Option<String>) -> Self {
        self.native_compaction_key = key;
        self
    }

    /// Offers the `compactor_expand` tool to the model in compacted sessions and answers
    /// its calls from the store (`--expand-tool`; off by default). The summaries and
    /// stubs must name handles for the model to ask for, so the compactor should be
    /// configured with `expand` on (the CLI's `--expand-tool` turns it on).
    pub fn expand_tool(mut self, expand_tool: Option<ExpandTool>) -> Self {
        self.expand_tool = expand_tool;
        self
    }

    /// The wire options: Anthropic breakpoints (default `auto`, 5m), OpenAI's
    /// `prompt_cache_key` (default off), extra session identities (default none).
    pub fn wire(mut self, wire: WireOptions) -> Self {
        self.wire = wire;
        self
    }

    /// Each request's budget is the context window of the model it names
    /// ([`crate::context_window`]); a model the table does not list gets `fallback`, or
    /// with `None` a 400 naming the model (see the `budgets` module for why not a
    /// silent pass-through).
    pub fn budget_by_model(mut self, fallback: Option<usize>) -> Self {
        self.by_model = Some(fallback);
        self
    }

    /// Every pass aims at this many tokens (`compact --target`).
    pub fn target(mut self, target: Option<usize>) -> Self {
        self.target = target;
        self
    }

    /// The summarizer's extra instruction on every pass (`compact --focus`).
    pub fn focus(mut self, focus: Option<String>) -> Self {
        self.focus = focus;
        self
    }

    /// The pricing preset of `/metrics`' estimated cost saved (default: the engine's
    /// cost-policy pricing).
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// The compactor's summarizer is `summarizer` and it pays with the key of the
    /// request that triggered each pass. [`ProxyConfigBuilder::build`] refuses it unless
    /// its endpoint has the upstream's origin (a client's key goes to the upstream's
    /// origin only).
    pub fn summarizer_key_from_client(mut self, summarizer: &ClientKeySummarizer) -> Self {
        self.client_key_endpoint = Some(summarizer.endpoint().to_owned());
        self.summarizer_endpoint = Some((summarizer.endpoint().to_owned(), summarizer.model().to_owned()));
        self
    }

    /// Says that the compactor's summarizer is an HTTP backend posting to `endpoint`
    /// and asking `model`. A pass of a request that names `model`, with `endpoint` on
    /// the upstream's origin, then sends the summary request that reads the agent's
    /// prompt cache (the agent's request plus one instruction: see
    /// [`llm_compactor::backend::http::cache_reading_body`]); any other pass sends the
    /// ordinary one. (Registered by [`ProxyConfigBuilder::summarizer_key_from_client`]
    /// too.)
    pub fn summarizer_endpoint(mut self, endpoint: &str, model: &str) -> Self {
        self.summarizer_endpoint = Some((endpoint.to_owned(), model.to_owned()));
        self
    }

    /// `--summarizer upstream`: the compactor's summarizer is replaced by an
    /// [`UpstreamSummarizer`] that summarizes each pass with the model of the request
    /// being compacted, through the upstream, with the key of that request (so
    /// **summaries are billed to the client's key**; the key is never stored or logged),
    /// in the form that reads the agent's prompt cache. Nothing else to configure.
    pub fn summarizer_upstream(mut self) -> Self {
        self.summarizer_upstream = true;
        self
    }

    /// Prepare each session's compaction in the background ahead of the trigger, when
    /// the session's pace says (see `docs/prepared-compaction.md`), and install it at the
    /// trigger; `None` compacts inline when a request reaches the trigger (the request
    /// then waits for the summary). The default, when this is not called: prepared with
    /// [`PrepareConfig::default`] when the compactor's summarizer is a model, inline when
    /// it is the ledger or none (they answer at once; preparing would only add passes).
    pub fn prepare(mut self, prepare: Option<PrepareConfig>) -> Self {
        self.prepare = Some(prepare);
        self
    }

    /// Trace every proxied request to OpenTelemetry (see [`crate::Telemetry`]); `None`
    /// (the default) traces nothing.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: Option<std::sync::Arc<crate::telemetry::Telemetry>>) -> Self {
        self.telemetry = telemetry;
        self
    }

    /// The most sessions held in memory (default [`DEFAULT_MAX_SESSIONS`]); past it the
    /// least recently used idle session is dropped and rebuilt from the store when it
    /// comes back.
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// Serves the read-only inspector at `/ui` (off by default: it shows conversation
    /// content, so it belongs on localhost or behind the operator's own auth).
    pub fn ui(mut self, on: bool) -> Self {
        self.ui = on;
        self
    }

    /// The token the inspector asks for (`Authorization: Bearer TOKEN`, or HTTP Basic
    /// with TOKEN as the password; compared in constant time; 401 otherwise). Required
    /// when the inspector is served on an address other than loopback: [`crate::serve`]
    /// refuses to start without one there.
    pub fn ui_token(mut self, token: Option<String>) -> Self {
        self.ui_token = token;
        self
    }

    /// The largest request body accepted, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// How long one upstream exchange may take, streaming included (default 600 s).
    pub fn upstream_timeout(mut self, timeout: Duration) -> Self {
        self.upstream_timeout = timeout;
        self
    }

    /// How long a compaction lease lasts before another instance may take it (default 120 s).
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// The configuration.
    ///
    /// # Errors
    /// [`ProxyError::Config`] when the upstream is not an http(s) URL, or the body bound is 0.
    pub fn build(self) -> Result<ProxyConfig, ProxyError> {
        let mut upstream = reqwest::Url::parse(&self.upstream)
            .map_err(|e| ProxyError::Config(format!("--upstream {:?}: {e}", redact_url(&self.upstream))))?;
        if !matches!(upstream.scheme(), "http" | "https") {
            return Err(ProxyError::Config(format!(
                "--upstream must be an http:// or https:// URL, not {:?}",
                upstream.scheme()
            )));
        }
        if !upstream.username().is_empty() || upstream.password().is_some() {
            return Err(ProxyError::Config(
                "--upstream must not carry credentials; clients send their own key".to_owned(),
            ));
        }
        let path = upstream.path().trim_end_matches('/').to_owned();
        upstream.set_path(&path);
        if self.max_body_bytes == 0 {
            return Err(ProxyError::Config("--max-body-bytes must be greater than 0".to_owned()));
        }
        if self.max_sessions == 0 {
            return Err(ProxyError::Config("--max-sessions must be greater than 0".to_owned()));
        }
        if let Some(endpoint) = &self.client_key_endpoint {
            let summarizer =
                reqwest::Url::parse(endpoint).map_err(|e| ProxyError::Config(format!("the summarizer's URL: {e}")))?;
            if !same_origin(&summarizer, &upstream) {
                return Err(ProxyError::Config(format!(
                    "--summarizer-key client sends the client's key to the summarizer, so its origin must be the upstream's: \
                     the summarizer is at {}://{}, the upstream at {}://{}",
                    summarizer.scheme(),
                    origin_authority(&summarizer),
                    upstream.scheme(),
                    origin_authority(&upstream)
                )));
            }
        }
        let pricing = self.pricing.unwrap_or(self.compactor.config().cost_policy.pricing);
        let (compactor, summarizer) = if self.summarizer_upstream {
            let upstream_summarizer = UpstreamSummarizer::new(upstream.as_str(), DEFAULT_TIMEOUT)?;
            let compactor = self
                .compactor
                .reconfigured(self.compactor.config().clone())
                .map_err(|e| ProxyError::Config(e.to_string()))?
                .with_summarizer(Arc::new(upstream_summarizer));
            (Arc::new(compactor), SummarizerIs::Upstream)
        } else {
            let summarizer = match &self.summarizer_endpoint {
                Some((endpoint, model)) => match reqwest::Url::parse(endpoint) {
                    Ok(endpoint) => SummarizerIs::Http {
                        endpoint,
                        model: model.clone(),
                    },
                    Err(e) => return Err(ProxyError::Config(format!("the summarizer's URL: {e}"))),
                },
                None => SummarizerIs::Other,
            };
            (self.compactor, summarizer)
        };
        let prepare = self.prepare.unwrap_or_else(|| {
            let waits = compactor.summarizer().is_some_and(|s| !s.model_free());
            waits.then(PrepareConfig::default)
        });
        let budgets = match self.by_model {
            Some(fallback) => Budgets::by_model(compactor, fallback),
            None => Budgets::fixed(compactor),
        };
        Ok(ProxyConfig {
            upstream,
            budgets: Arc::new(budgets),
            store: self.store,
            max_body_bytes: self.max_body_bytes,
            upstream_timeout: self.upstream_timeout,
            lease_ttl: self.lease_ttl,
            holder: format!("proxy-{}", uuid::Uuid::new_v4()),
            target: self.target,
            focus: self.focus,
            pricing,
            client_key: self.client_key_endpoint.is_some() || self.summarizer_upstream,
            summarizer,
            max_sessions: self.max_sessions,
            prepare,
            #[cfg(feature = "otel")]
            telemetry: self.telemetry,
            ui: self.ui,
            ui_token: match self.ui_token {
                Some(token) if token.trim().is_empty() => {
                    return Err(ProxyError::Config("the inspector's token is empty".to_owned()));
                }
                Some(token) => Some(crate::ui_token::UiToken::new(&token)),
                None => None,
            },
            wire: self.wire,
            expand_tool: self.expand_tool.map(|e| ExpandTool {
                max_calls: e.max_calls.max(1),
            }),
            native_compaction: self.native_compaction,
            server_clearing: self.server_clearing,
            sealer: match self.native_compaction_key {
                Some(key) if key.len() < 16 => {
                    return Err(ProxyError::Config(
                        "the native compaction key must be at least 16 bytes".to_owned(),
                    ));
                }
                Some(key) => crate::native::Sealer::new(key.into_bytes()),
                None => crate::native::Sealer::random(),
            },
        })
    }
}

fn origin_authority(url: &reqwest::Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

fn redact_url(url: &str) -> String {
    llm_compactor::store::redact(url)
}

/// How the proxy prepares passes: the library's options (the rule of when to start
/// is the library's, [`llm_compactor::plan::prepared::start_at`]).
pub type PrepareConfig = llm_compactor::session::PrepareOptions;

/// What the proxy knows of the compactor's summarizer.
#[derive(Clone, Debug)]
pub(crate) enum SummarizerIs {
    /// Nothing (the ledger, a command, an HTTP summarizer not registered).
    Other,
    /// `--summarizer upstream`: the request's model through the upstream.
    Upstream,
    /// An HTTP summarizer posting to `endpoint`, asking `model`.
    Http {
        /// The URL it posts to.
        endpoint: reqwest::Url,
        /// The model it asks.
        model: String,
    },
}
