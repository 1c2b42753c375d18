//! `/metrics`: counters and one histogram in the Prometheus text exposition format.
//!
//! A handful of atomics written by hand keeps the hot path at a few relaxed increments
//! and avoids a metrics framework for a dozen series. Nothing here carries a credential
//! or a message: only counts, token totals, costs and times.
//!
//! The estimated cost saved is in *base-input-token units* of the pricing preset
//! (`--pricing`, as in `simulate`: one uncached input token costs 1.0), so it compares
//! across providers' ratios without a list price. Without the proxy every request would
//! carry the client's whole history, its old part read from the prompt cache; with it
//! the request carries the rewrite instead. So each answered request that the proxy sent
//! rewritten saves `removed x cache_read` (`removed`: the client's tokens minus the
//! tokens sent, by the engine's counter), and each pass costs what it broke in the cache
//! (`tokens_rewritten x (cache_write - cache_read)`, from the pass's cost receipt) plus
//! its summarizer calls (`summarizer_price x (uncached input x uncached + cache-read input
//! x cache_read + output x output)`: a summary request that reads the agent's cache,
//! `--summarizer upstream`, is billed its cache reads at the cache-read price). The
//! new messages of a request cost the same either way and are left out. An estimate,
//! not a bill: the provider's cache can expire, and the counter is not its tokenizer.
//!
//! Tokens shed and money saved are separate series (issue 33): a pass can shed tokens
//! and still cost more than it saves. `tokens_saved_total` and
//! `prompt_tokens_removed_total` count tokens; `estimated_cost_saved` is the *net*
//! billed saving (reads saved less what the passes cost), and
//! `estimated_pass_cost` is what the passes cost on their own (cache rewrites and
//! summarizer calls), so the gross saving is their sum.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use llm_compactor::plan::{CostReceipt, Pricing};

/// Bucket bounds of the added-latency histogram, in seconds.
const BUCKETS: [f64; 10] = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.0];

/// The proxy's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    pricing: Pricing,
    tokens_removed: AtomicU64,
    /// Estimated net cost saved, in thousandths of a base-input-token unit.
    cost_saved_milli: AtomicI64,
    /// Estimated cost of the passes alone (cache rewrites and summarizer calls), in
    /// thousandths of a base-input-token unit.
    pass_cost_milli: AtomicI64,
    requests_chat: AtomicU64,
    requests_responses: AtomicU64,
    requests_messages: AtomicU64,
    requests_other: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) elisions: AtomicU64,
    pub(crate) tokens_saved: AtomicU64,
    pub(crate) context_retries: AtomicU64,
    pub(crate) expand_offered: AtomicU64,
    pub(crate) expand_calls: AtomicU64,
    pub(crate) expand_followups: AtomicU64,
    pub(crate) upstream_errors: AtomicU64,
    pub(crate) rejected_too_large: AtomicU64,
    pub(crate) prepared_started: AtomicU64,
    pub(crate) prepared_installed: AtomicU64,
    pub(crate) prepared_amended: AtomicU64,
    pub(crate) prepared_discarded: AtomicU64,
    pub(crate) prepared_cancelled: AtomicU64,
    pub(crate) prepared_elsewhere: AtomicU64,
    pub(crate) prepared_abandoned: AtomicU64,
    /// Requests that asked the provider to drop invalidated thinking: because a pass
    /// moved it onto a new prefix, or after a signature 400 (one retry).
    pub(crate) drop_block_pass: AtomicU64,
    pub(crate) drop_block_recovery: AtomicU64,
    /// Requests that asked the provider to clear the oldest tool results in place of
    /// our aging stubs (thinking bound to its prefix stays valid).
    pub(crate) server_clearing: AtomicU64,
    /// Responses requests retried without their sealed items after the upstream could
    /// not verify them (`invalid_encrypted_content`).
    pub(crate) sealed_recovery: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
    pub(crate) wire: crate::outgoing::WireCounters,
    /// `/v1/responses/compact`, served or forwarded, and the items opened.
    pub(crate) native: crate::native::NativeCounters,
    /// Anthropic's compaction on `/v1/messages`, served, and the blocks opened.
    pub(crate) native_messages: crate::native::MessagesCounters,
}

/// Which route a request took.
#[derive(Clone, Copy, Debug)]
pub enum Route {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/messages`.
    Messages,
    /// `/v1/responses`.
    Responses,
    /// Anything passed through.
    Other,
}

impl Metrics {
    /// Counters at zero; costs estimated with `pricing`.
    pub fn new(pricing: Pricing) -> Self {
        Metrics {
            pricing,
            ..Metrics::default()
        }
    }

    /// An answered request that carried the rewrite: `removed` tokens fewer than the
    /// client's request.
    pub fn rewritten(&self, removed: usize) {
        if removed == 0 {
            return;
        }
        self.tokens_removed.fetch_add(removed as u64, Ordering::Relaxed);
        self.add_cost(removed as f64 * self.pricing.cache_read);
    }

    /// A pass: what it broke in the prompt cache, and its summarizer calls.
    pub fn pass_cost(&self, receipt: &CostReceipt, summarizer_price: f64) {
        let p = &self.pricing;
        let rewrite = receipt.tokens_rewritten as f64 * (p.cache_write - p.cache_read).max(0.0);
        let summarizer = summarizer_price
            * (receipt.summarizer_uncached_input_tokens() as f64 * p.uncached
                + receipt.summarizer_cache_read_tokens as f64 * p.cache_read
                + receipt.summarizer_output_tokens as f64 * p.output);
        let cost = rewrite + summarizer;
        self.add_cost(-cost);
        if cost.is_finite() {
            self.pass_cost_milli
                .fetch_add((cost * 1000.0).round() as i64, Ordering::Relaxed);
        }
    }

    fn add_cost(&self, units: f64) {
        if units.is_finite() {
            self.cost_saved_milli
                .fetch_add((units * 1000.0).round() as i64, Ordering::Relaxed);
        }
    }

    /// Counts one request.
    pub fn request(&self, route: Route) {
        let counter = match route {
            Route::Chat => &self.requests_chat,
            Route::Responses => &self.requests_responses,
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

    /// The exposition text; `sessions` is how many sessions are held in memory.
    pub fn render(&self, sessions: usize) -> String {
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
                ("{route=\"responses\"}", get(&self.requests_responses)),
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
            "Prompt tokens shed by compaction (before minus after, per pass): tokens, not money (see compactor_proxy_estimated_cost_saved).",
            &[("", get(&self.tokens_saved))],
        );
        counter(
            "compactor_proxy_context_retries_total",
            "Upstream context-length errors answered by compacting and retrying once.",
            &[("", get(&self.context_retries))],
        );
        counter(
            "compactor_proxy_expand_offered_total",
            "Requests of compacted sessions the compactor_expand tool was offered in (--expand-tool).",
            &[("", get(&self.expand_offered))],
        );
        counter(
            "compactor_proxy_expand_calls_total",
            "compactor_expand calls the proxy answered from the store, invisibly to the client.",
            &[("", get(&self.expand_calls))],
        );
        counter(
            "compactor_proxy_expand_followups_total",
            "Hidden follow-up requests sent upstream after answering compactor_expand calls.",
            &[("", get(&self.expand_followups))],
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
        counter(
            "compactor_proxy_prepared_total",
            "Passes prepared in the background, by fate (started; installed as they were; installed with amended ledger lines; discarded by the check or failed; cancelled; done by another instance; abandoned when the client edited its history).",
            &[
                ("{fate=\"started\"}", get(&self.prepared_started)),
                ("{fate=\"installed\"}", get(&self.prepared_installed)),
                ("{fate=\"amended\"}", get(&self.prepared_amended)),
                ("{fate=\"discarded\"}", get(&self.prepared_discarded)),
                ("{fate=\"cancelled\"}", get(&self.prepared_cancelled)),
                ("{fate=\"elsewhere\"}", get(&self.prepared_elsewhere)),
                ("{fate=\"abandoned\"}", get(&self.prepared_abandoned)),
            ],
        );
        counter(
            "compactor_proxy_thinking_drop_block_total",
            "Messages requests that asked the provider to drop thinking blocks bound to a prefix the proxy changed (drop_block), by why: a pass's rewrite carried them, or the retry after a signature 400.",
            &[
                ("{why=\"rewrite\"}", get(&self.drop_block_pass)),
                ("{why=\"recovery\"}", get(&self.drop_block_recovery)),
            ],
        );
        counter(
            "compactor_proxy_server_clearing_total",
            "Messages requests (thinking on, a model that binds it to its prefix) that carried the client's own bytes for the oldest results the proxy had stubbed, with the provider's clear_tool_uses edit clearing them: the thinking after them stays valid.",
            &[("", get(&self.server_clearing))],
        );
        counter(
            "compactor_proxy_sealed_recovery_total",
            "Responses requests the upstream refused for sealed items it could not verify (invalid_encrypted_content: another key, organization or model sealed them), retried once without the sealed items.",
            &[("", get(&self.sealed_recovery))],
        );
        let (served, forwarded, resolved, server_side) = self.native.get();
        counter(
            "compactor_proxy_native_compactions_total",
            "POST /v1/responses/compact requests, by who answered: the proxy itself (the upstream has no such endpoint, or --native-compaction serve), or the upstream.",
            &[("{by=\"proxy\"}", served), ("{by=\"upstream\"}", forwarded)],
        );
        counter(
            "compactor_proxy_native_compaction_items_resolved_total",
            "Compaction items the proxy wrote, opened into their summary in later requests.",
            &[("", resolved)],
        );
        counter(
            "compactor_proxy_native_server_side_total",
            "/v1/responses requests that asked for server-side compaction (context_management compaction) of an upstream without it: compacted by the proxy, the field not forwarded.",
            &[("", server_side)],
        );
        let (messages_served, blocks_resolved) = self.native_messages.get();
        counter(
            "compactor_proxy_native_messages_compactions_total",
            "/v1/messages compaction requests (the compaction parameter, beta compact-2026-09-04) the proxy answered itself for an upstream without compaction.",
            &[("", messages_served)],
        );
        counter(
            "compactor_proxy_native_compaction_blocks_resolved_total",
            "Anthropic compaction blocks the proxy wrote, opened into the turns they stand for in later /v1/messages requests.",
            &[("", blocks_resolved)],
        );
        counter(
            "compactor_proxy_prompt_tokens_removed_total",
            "Prompt tokens the upstream did not receive because the proxy sent the rewrite instead of the client's history (answered requests).",
            &[("", get(&self.tokens_removed))],
        );
        let _ = writeln!(
            out,
            "# HELP compactor_proxy_sessions_in_memory Sessions held in memory (bounded by --max-sessions; the rest are in the store).\n# TYPE compactor_proxy_sessions_in_memory gauge\ncompactor_proxy_sessions_in_memory {sessions}"
        );
        let name = "compactor_proxy_estimated_cost_saved";
        let _ = writeln!(
            out,
            "# HELP {name} Estimated net input cost saved, in base-input-token units of the pricing preset (1 = one uncached input token): rewritten requests' removed tokens at the cache-read price, less each pass's cache rewrite and summarizer calls (compactor_proxy_estimated_pass_cost). Negative when the passes cost more than they saved.\n# TYPE {name} gauge"
        );
        let milli = self.cost_saved_milli.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}{{pricing=\"{}\"}} {:.3}",
            self.pricing.name,
            milli as f64 / 1000.0
        );
        let name = "compactor_proxy_estimated_pass_cost";
        let _ = writeln!(
            out,
            "# HELP {name} Estimated cost of the compaction passes alone, in the same units: the cache they rewrote (cache write less cache read) and their summarizer calls.\n# TYPE {name} gauge"
        );
        let milli = self.pass_cost_milli.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}{{pricing=\"{}\"}} {:.3}",
            self.pricing.name,
            milli as f64 / 1000.0
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
        self.wire.render(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_compactor::plan::CostPolicy;
    use llm_compactor::plan::policy::ReceiptInput;

    fn value(text: &str, series: &str) -> f64 {
        let line = text.lines().find(|l| l.starts_with(series)).expect(series);
        line[series.len()..].trim().parse().unwrap()
    }

    #[test]
    fn tokens_shed_and_the_net_cost_are_separate_series() {
        let metrics = Metrics::new(Pricing::ANTHROPIC);
        // A pass that sheds 1,000 tokens by rewriting 9,000 of the cache, and one
        // rewritten request after it: it shed tokens and still cost more than it saved.
        let receipt = CostReceipt::compute(
            &ReceiptInput {
                tokens_before: 10_000,
                tokens_after: 9_000,
                cached_prefix_kept: 0,
                rounds: 1,
                ..ReceiptInput::default()
            },
            &CostPolicy::default(),
        );
        assert_eq!(receipt.tokens_shed, 1_000);
        metrics
            .tokens_saved
            .fetch_add(receipt.tokens_shed as u64, Ordering::Relaxed);
        metrics.pass_cost(&receipt, 1.0);
        metrics.rewritten(1_000);
        let text = metrics.render(0);
        assert_eq!(value(&text, "compactor_proxy_tokens_saved_total"), 1_000.0);
        // 9,000 rewritten x (1.25 - 0.1) = 10,350 units; 1,000 removed x 0.1 = 100 saved.
        let pass = value(&text, "compactor_proxy_estimated_pass_cost{pricing=\"anthropic\"}");
        let net = value(&text, "compactor_proxy_estimated_cost_saved{pricing=\"anthropic\"}");
        assert!((pass - 10_350.0).abs() < 1e-6, "{text}");
        assert!((net - (100.0 - 10_350.0)).abs() < 1e-6, "net, not gross: {text}");
    }

    #[test]
    fn a_summary_that_reads_the_cache_is_billed_its_reads_at_the_cache_read_price() {
        let metrics = Metrics::new(Pricing::ANTHROPIC);
        let policy = CostPolicy::default();
        // A summary of a 10,000-token prompt, 9,700 of it read from the agent's cache,
        // nothing rewritten (a prepared pass not installed).
        let receipt = CostReceipt::compute(
            &ReceiptInput {
                tokens_before: 10_000,
                tokens_after: 10_000,
                cached_prefix_kept: 10_000,
                summarizer_input_tokens: 10_000,
                summarizer_output_tokens: 500,
                rounds: 1,
            },
            &policy,
        )
        .with_summarizer_cache_reads(9_700, &policy);
        metrics.pass_cost(&receipt, 1.0);
        let text = metrics.render(0);
        // 300 x 1 + 9,700 x 0.1 + 500 x 5 = 3,770 units (not 10,000 + 2,500).
        let pass = value(&text, "compactor_proxy_estimated_pass_cost{pricing=\"anthropic\"}");
        assert!((pass - 3_770.0).abs() < 1e-6, "{text}");
    }
}
