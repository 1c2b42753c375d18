//! One module per subcommand.

pub mod convert;
pub mod count;
pub mod session;
