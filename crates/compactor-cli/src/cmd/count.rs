//! `compactor count`.

use crate::error::CliError;

/// Count tokens.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The conversation file, or `-` for stdin.
    pub input: String,
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let _ = args;
    Err(CliError::Failed("not implemented yet".into()))
}
