//! One module per subcommand.

pub mod compact;
pub mod compact_opts;
pub mod convert;
pub mod count;
pub mod plan;
pub mod session;
pub mod summarizer;
pub mod summarizer_http;
pub mod plot;
pub mod simulate;
