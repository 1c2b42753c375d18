//! `compactor convert`: read a conversation in one wire format, write it in another.
//!
//! The output is pretty JSON on stdout, or written atomically to `-o FILE` (a reader
//! never sees half a file). Converting into the input's own format gives back the input
//! value unchanged; across formats, what is dropped is listed in
//! `llm_compactor::format`'s docs.

use std::path::PathBuf;

use clap::ValueEnum;
use llm_compactor::format::Format;

use crate::error::CliError;
use crate::io::{read_document, write_output_for};

/// A format named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// OpenAI chat completions messages.
    #[value(name = "openai")]
    OpenAi,
    /// Anthropic Messages.
    #[value(name = "anthropic")]
    Anthropic,
    /// A mini-swe-agent trajectory.
    #[value(name = "mini-swe-agent")]
    MiniSweAgent,
}

impl From<FormatArg> for Format {
    fn from(value: FormatArg) -> Self {
        match value {
            FormatArg::OpenAi => Format::OpenAi,
            FormatArg::Anthropic => Format::Anthropic,
            FormatArg::MiniSweAgent => Format::MiniSweAgent,
        }
    }
}

/// The input format: detected, or named.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FromArg {
    /// Detect the format from the input's shape.
    Auto,
    /// OpenAI chat completions messages.
    #[value(name = "openai")]
    OpenAi,
    /// Anthropic Messages.
    #[value(name = "anthropic")]
    Anthropic,
    /// A mini-swe-agent trajectory.
    #[value(name = "mini-swe-agent")]
    MiniSweAgent,
}

impl FromArg {
    fn format(self) -> Option<Format> {
        match self {
            FromArg::Auto => None,
            FromArg::OpenAi => Some(Format::OpenAi),
            FromArg::Anthropic => Some(Format::Anthropic),
            FromArg::MiniSweAgent => Some(Format::MiniSweAgent),
        }
    }
}

/// Convert a conversation between wire formats.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  compactor convert run.traj.json --to anthropic -o run.anthropic.json\n  \
                        cat chat.json | compactor convert - --to openai"
)]
pub struct Args {
    /// The conversation file, or `-` for stdin.
    pub input: String,
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: FormatArg,
    /// The input's format.
    #[arg(long, value_enum, default_value = "auto")]
    pub from: FromArg,
    /// Write here (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Drop messages of roles the target cannot express (a warning for each) instead of
    /// mapping them to a tool result or a labelled user message.
    #[arg(long)]
    pub lossy: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let document = read_document(&args.input, args.from.format())?;
    let value = if args.lossy {
        let (value, dropped) = document.to_format_lossy(args.to.into()).map_err(CliError::failed)?;
        for drop in dropped {
            crate::out::stderr_line(&format!(
                "compactor: warning: {}: message {}: dropped (role {:?} has no form in {}; --lossy)",
                crate::io::source_name(&args.input),
                drop.index,
                crate::out::escape_controls(&drop.role),
                Format::from(args.to)
            ))?;
        }
        value
    } else {
        document.to_format(args.to.into()).map_err(CliError::failed)?
    };
    let text = serde_json::to_string_pretty(&value).map_err(CliError::failed)?;
    write_output_for(Some(&args.input), args.output.as_deref(), &text)
}
