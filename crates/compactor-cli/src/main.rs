//! `compactor`: compact, plan, count, convert and replay LLM agent conversations.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 usage error, 130/143 a pass cancelled by
//! SIGINT/SIGTERM (after writing its hard-trimmed result).

#![forbid(unsafe_code)]

mod cmd;
mod error;
mod io;
mod out;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::CliError;

/// Keeps a tool-using LLM agent's conversation inside its context window.
#[derive(Parser, Debug)]
#[command(name = "compactor", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Convert a conversation between wire formats (OpenAI, Anthropic, mini-swe-agent).
    Convert(cmd::convert::Args),
    /// Count a conversation's tokens.
    Count(cmd::count::Args),
    /// Compact a conversation (one pass, like a manual /compact).
    Compact(cmd::compact::Args),
    /// Score summaries: probe recall, hallucinated identifiers, compression and time.
    Eval(cmd::eval::Args),
    /// Show what a compaction pass would do, without doing it.
    Plan(cmd::plan::Args),
    /// Build, compact, replay and inspect session transcripts.
    Session(cmd::session::Args),
    /// Write an HTML report of what compaction did to a session.
    Report(cmd::report::Args),
    /// Simulate what each context strategy costs with prompt caching.
    Simulate(cmd::simulate::Args),
    /// Fetch the local summarizer's default model, or print where it is.
    Model(cmd::model::Args),
    /// Serve the OpenAI- and Anthropic-compatible compaction proxy; list and export its sessions.
    Proxy(Box<cmd::proxy::Args>),
    /// Print the completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::Args),
    /// Print the manual page, or write one page per command into a directory.
    Man(cmd::man::Args),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            // `--help > /dev/full` is a failure too; a closed pipe is not.
            let code = match err.print() {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => 1,
                _ => code,
            };
            std::process::exit(code);
        }
    };
    let outcome: Result<(), CliError> = match cli.command {
        Command::Convert(args) => cmd::convert::run(args),
        Command::Count(args) => cmd::count::run(args),
        Command::Compact(args) => cmd::compact::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Plan(args) => cmd::plan::run(args),
        Command::Session(args) => cmd::session::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Simulate(args) => cmd::simulate::run(args),
        Command::Model(args) => cmd::model::run(args),
        Command::Proxy(args) => cmd::proxy::run(*args),
        Command::Completions(args) => cmd::completions::run(args, Cli::command()),
        Command::Man(args) => cmd::man::run(args, Cli::command()),
    };
    match outcome {
        Ok(()) => {}
        Err(CliError::BrokenPipe) => std::process::exit(0),
        Err(err) => {
            out::stderr_best_effort(&format!("compactor: {err}"));
            std::process::exit(err.exit_code());
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every subcommand's arguments are consistent (clap checks them only when that
    /// subcommand is parsed: two flattened argument structs of one name once made
    /// `compactor proxy report` panic at start).
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
