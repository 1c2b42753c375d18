//! One module per subcommand.

pub mod convert;
pub mod count;
pub mod model;
#[cfg(feature = "local")]
pub mod summarizer_local;
