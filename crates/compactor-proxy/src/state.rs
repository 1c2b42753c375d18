//! What every request shares: the configuration, the upstream client, the sessions and
//! the metrics. Its own file so that the routes and the inspector both depend on it and
//! not on each other.

use crate::config::ProxyConfig;
use crate::metrics::Metrics;
use crate::sessions::Sessions;

/// Shared by every request.
pub struct AppState {
    pub(crate) config: ProxyConfig,
    pub(crate) client: reqwest::Client,
    pub(crate) sessions: Sessions,
    pub(crate) metrics: Metrics,
    /// `--native-compaction auto` learned that the upstream has no compaction endpoint:
    /// the proxy answers it from now on.
    pub(crate) serves_compaction: std::sync::atomic::AtomicBool,
}
