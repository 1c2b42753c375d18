//! `/metrics`: counters and one histogram in the Prometheus text exposition format.
//!
//! A handful of atomics written by hand keeps the hot path at a few relaxed increments
//! and avoids a metrics framework for eight series. Nothing here carries a credential or
//! a message: only counts, token totals and times.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Bucket bounds of the added-latency histogram, in seconds.
const BUCKETS: [f64; 10] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0];

/// The proxy's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    requests_chat: AtomicU64,
    requests_messages: AtomicU64,
    requests_other: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) elisions: AtomicU64,
    pub(crate) tokens_saved: AtomicU64,
    pub(crate) context_retries: AtomicU64,
    pub(crate) upstream_errors: AtomicU64,
    pub(crate) rejected_too_large: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
}

/// Which route a request took.
#[derive(Clone, Copy, Debug)]
pub enum Route {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/messages`.
    Messages,
    /// Anything passed through.
    Other,
}

impl Metrics {
    /// Counts one request.
    pub fn request(&self, route: Route) {
        let counter = match route {
            Route::Chat => &self.requests_chat,
            Route::Messages => &self.requests_messages,
            Route::Other => &self.requests_other,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one observation of the latency the proxy added before forwarding.
    pub fn added_latency(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, samples: &[(&str, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        counter(
            "compactor_proxy_requests_total",
            "Requests received, by route.",
            &[
                ("{route=\"chat_completions\"}", get(&self.requests_chat)),
                ("{route=\"messages\"}", get(&self.requests_messages)),
                ("{route=\"passthrough\"}", get(&self.requests_other)),
            ],
        );
        counter(
            "compactor_proxy_compactions_total",
            "Compaction passes applied.",
            &[("", get(&self.compactions))],
        );
        counter(
            "compactor_proxy_elisions_total",
            "Tool results stubbed by aging.",
            &[("", get(&self.elisions))],
        );
        counter(
            "compactor_proxy_tokens_saved_total",
            "Prompt tokens removed by compaction (before minus after, per pass).",
            &[("", get(&self.tokens_saved))],
        );
        counter(
            "compactor_proxy_context_retries_total",
            "Upstream context-length errors answered by compacting and retrying once.",
            &[("", get(&self.context_retries))],
        );
        counter(
            "compactor_proxy_upstream_errors_total",
            "Upstream exchanges that failed to connect or answered 5xx.",
            &[("", get(&self.upstream_errors))],
        );
        counter(
            "compactor_proxy_rejected_too_large_total",
            "Requests refused with 413 (body over the limit).",
            &[("", get(&self.rejected_too_large))],
        );
        let name = "compactor_proxy_added_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time the proxy spent before forwarding a request (session lookup, rewrite, store write).\n# TYPE {name} histogram"
        );
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {}", get(bucket));
        }
        let count = get(&self.latency_count);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {}", get(&self.latency_sum_us) as f64 / 1e6);
        let _ = writeln!(out, "{name}_count {count}");
        out
    }
}
