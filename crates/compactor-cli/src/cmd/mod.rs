//! One module per subcommand.

pub mod compact;
pub mod compact_opts;
pub mod completions;
pub mod convert;
pub mod count;
pub mod eval;
pub mod eval_loop;
pub mod eval_probes;
pub mod eval_retrieve;
pub mod expand;
pub mod interrupt;
pub mod man;
pub mod model;
pub mod plan;
pub mod plot;
pub mod proxy;
pub mod proxy_identity;
pub mod ranges;
pub mod report;
pub mod session;
pub mod session_store;
pub mod simulate;
pub mod summarizer;
pub mod summarizer_http;
#[cfg(feature = "local")]
pub mod summarizer_local;
