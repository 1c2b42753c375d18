//! The CLI's error type and exit codes.

use std::fmt;

/// A command's failure: a usage error (exit 2) or a runtime failure (exit 1).
#[derive(Debug)]
pub enum CliError {
    /// The command line asks for something impossible.
    Usage(String),
    /// The command ran and failed.
    Failed(String),
    /// The reader of stdout or stderr went away (`| head`): stop quietly, exit 0, as
    /// Unix tools do.
    BrokenPipe,
}

impl CliError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failed(_) => 1,
            CliError::BrokenPipe => 0,
        }
    }

    /// A runtime failure from anything displayable.
    pub fn failed(err: impl fmt::Display) -> Self {
        CliError::Failed(err.to_string())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(msg) | CliError::Failed(msg) => f.write_str(msg),
            CliError::BrokenPipe => f.write_str("broken pipe"),
        }
    }
}

impl std::error::Error for CliError {}
