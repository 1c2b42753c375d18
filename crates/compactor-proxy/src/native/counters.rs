//! What `/metrics` says of the native compaction protocols.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of `/v1/responses/compact` and of the items it wrote.
#[derive(Debug, Default)]
pub(crate) struct NativeCounters {
    served: AtomicU64,
    forwarded: AtomicU64,
    resolved: AtomicU64,
    server_side: AtomicU64,
}

impl NativeCounters {
    /// A compaction the proxy answered itself.
    pub(crate) fn served(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
    }

    /// A compaction forwarded to the upstream (and answered there).
    pub(crate) fn forwarded(&self) {
        self.forwarded.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` compaction items of the proxy's own opened in requests.
    pub(crate) fn items_resolved(&self, n: usize) {
        self.resolved.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// A `/v1/responses` request that asked for server-side compaction, compacted by the
    /// proxy instead (the upstream has none).
    pub(crate) fn server_side(&self) {
        self.server_side.fetch_add(1, Ordering::Relaxed);
    }

    /// (served, forwarded, items resolved, server-side requests compacted by the proxy).
    pub(crate) fn get(&self) -> (u64, u64, u64, u64) {
        (
            self.served.load(Ordering::Relaxed),
            self.forwarded.load(Ordering::Relaxed),
            self.resolved.load(Ordering::Relaxed),
            self.server_side.load(Ordering::Relaxed),
        )
    }
}
