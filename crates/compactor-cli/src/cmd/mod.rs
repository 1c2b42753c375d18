//! One module per subcommand.

pub mod convert;
pub mod count;
pub mod plot;
pub mod simulate;
