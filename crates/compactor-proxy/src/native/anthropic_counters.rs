//! What `/metrics` says of Anthropic's compaction served by the proxy.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of the `/v1/messages` compaction requests the proxy answered and of the
/// blocks it wrote.
#[derive(Debug, Default)]
pub(crate) struct MessagesCounters {
    served: AtomicU64,
    resolved: AtomicU64,
}

impl MessagesCounters {
    /// An on-demand compaction request the proxy answered itself.
    pub(crate) fn served(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
    }

    /// `n` compaction blocks of the proxy's own opened in requests.
    pub(crate) fn blocks_resolved(&self, n: usize) {
        self.resolved.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// (served, blocks resolved).
    pub(crate) fn get(&self) -> (u64, u64) {
        (
            self.served.load(Ordering::Relaxed),
            self.resolved.load(Ordering::Relaxed),
        )
    }
}
