//! [`ProxyConfig`]: everything the proxy needs, built once, shared by every request.
//!
//! The engine is configured exactly as for `compactor compact` (the CLI builds the
//! [`Compactor`] from the same flags); the proxy adds only where to forward, where to
//! record, and its own limits.

use std::sync::Arc;
use std::time::Duration;

use llm_compactor::Compactor;
use llm_compactor::store::SessionStore;

use crate::error::ProxyError;

/// The default bound on a request body: 32 MiB (long agent histories are large, but a
/// bound keeps one client from exhausting memory).
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The proxy's configuration. Build with [`ProxyConfig::builder`].
#[derive(Clone)]
pub struct ProxyConfig {
    pub(crate) upstream: reqwest::Url,
    pub(crate) compactor: Arc<Compactor>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) max_body_bytes: usize,
    pub(crate) upstream_timeout: Duration,
    pub(crate) lease_ttl: Duration,
    pub(crate) holder: String,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("upstream", &self.upstream.as_str())
            .field("compactor", &self.compactor)
            .field("store", &self.store)
            .field("max_body_bytes", &self.max_body_bytes)
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
}

impl ProxyConfigBuilder {
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
        Ok(ProxyConfig {
            upstream,
            compactor: self.compactor,
            store: self.store,
            max_body_bytes: self.max_body_bytes,
            upstream_timeout: self.upstream_timeout,
            lease_ttl: self.lease_ttl,
            holder: format!("proxy-{}", uuid::Uuid::new_v4()),
        })
    }
}

fn redact_url(url: &str) -> String {
    llm_compactor::store::redact(url)
}
