//! `compactor count`: how many tokens a conversation is.
//!
//! The count is the conversation's (`TokenCounter::count_messages`): every message with
//! its framing, without tool declarations or the per-request reply priming, which a
//! conversation file does not carry. The default counter is the exact `o200k` one.

use clap::builder::PossibleValuesParser;
use llm_compactor::count::{COUNTER_NAMES, counter_by_name};
use llm_compactor::format::Format;

use crate::error::CliError;
use crate::io::{read_document, write_output};

/// Count a conversation's tokens.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The conversation file, or `-` for stdin.
    pub input: String,
    /// The token counter.
    #[arg(long, default_value = "o200k", value_parser = PossibleValuesParser::new(COUNTER_NAMES))]
    pub counter: String,
    /// Print `{"messages": N, "tokens": T, "counter": "..."}` instead of a sentence.
    #[arg(long)]
    pub json: bool,
    /// The input's wire format (`auto` detects it).
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
}

/// `--format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FormatArg {
    /// Detect the format.
    Auto,
    /// OpenAI chat completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// A mini-swe-agent trajectory.
    MiniSweAgent,
}

impl FormatArg {
    /// The library's format, `None` for detection.
    pub fn format(self) -> Option<Format> {
        match self {
            FormatArg::Auto => None,
            FormatArg::Openai => Some(Format::OpenAi),
            FormatArg::Anthropic => Some(Format::Anthropic),
            FormatArg::MiniSweAgent => Some(Format::MiniSweAgent),
        }
    }
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let counter = counter_by_name(&args.counter).map_err(|e| CliError::Usage(e.to_string()))?;
    let document = read_document(&args.input, args.format.format())?;
    let messages = document.messages().len();
    let tokens = counter.count_messages(document.messages());
    let text = if args.json {
        format!(
            r#"{{"messages": {messages}, "tokens": {tokens}, "counter": {}}}"#,
            serde_json::Value::from(counter.name())
        )
    } else {
        format!("{tokens} tokens ({messages} messages, {})", counter.name())
    };
    write_output(None, &text)
}
