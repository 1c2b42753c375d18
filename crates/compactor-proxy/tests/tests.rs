//! The integration tests of this crate, in one binary: each file of tests/ is a module
//! here (linking one test binary instead of one per file; see ripgrep's tests/tests.rs).
//! Support modules are declared once, below, and used by the tests as `crate::NAME`.

#[path = "../../compactor-report/tests/support/browser.rs"]
#[allow(dead_code, unused_imports)]
mod browser;
#[path = "../../llm-compactor/tests/format_support/codex_run.rs"]
#[allow(dead_code, unused_imports)]
mod codex_run;
#[allow(dead_code, unused_imports)]
mod support;

mod anthropic_cache;
mod door;
mod expand;
mod expand_rules;
mod http;
mod http_responses;
mod identity;
mod native_compaction;
mod native_messages;
mod options;
mod prepared;
mod repairs;
mod restart;
mod retry;
mod sdk;
mod sealed;
mod server_side_compaction;
#[cfg(feature = "otel")]
mod telemetry;
mod thinking;
mod ui;
mod upstream_summarizer;
mod wire;
