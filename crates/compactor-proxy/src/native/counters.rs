//! What `/metrics` says of the native compaction protocols.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of `/v1/responses/compact` and of the items it wrote.
#[derive(Debug, Default)]
pub(crate) struct NativeCounters {
    served: AtomicU64,
    forwarded: AtomicU64,
    resolved: AtomicU64,
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

    /// (served, forwarded, items resolved).
    pub(crate) fn get(&self) -> (u64, u64, u64) {
        (
            self.served.load(Ordering::Relaxed),
            self.forwarded.load(Ordering::Relaxed),
            self.resolved.load(Ordering::Relaxed),
        )
    }
}
