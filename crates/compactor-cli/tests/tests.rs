//! The integration tests of this crate, in one binary: each file of tests/ is a module
//! here (linking one test binary instead of one per file; see ripgrep's tests/tests.rs).
//! Support modules are declared once, below, and used by the tests as `crate::NAME`.

#[path = "../../llm-compactor/tests/store_support/pg.rs"]
#[allow(dead_code, unused_imports)]
mod pg;
#[allow(dead_code, unused_imports)]
mod proxy_pg_support;
#[allow(dead_code, unused_imports)]
mod support;

mod cancel_signals;
mod cli_reference;
mod compact;
mod compact_thinking;
mod completions;
mod convert;
mod count;
mod dockerfile;
mod docs_blocks;
mod docs_book;
mod docs_links;
mod docs_recipes;
mod door;
mod eval;
mod hardening;
mod model;
mod pins;
mod plan;
mod proxy;
mod proxy_postgres;
mod proxy_upstream;
mod readme_proxy;
mod real_clients;
mod report;
mod session;
mod session_expand;
mod session_store;
mod simulate;
mod summarizer_http;
mod summarizer_none;
