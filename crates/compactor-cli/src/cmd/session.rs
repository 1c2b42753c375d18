//! `compactor session`: build, compact, replay and inspect session transcripts.
//!
//! A transcript is the durable record of a long agent run (see
//! `llm_compactor::session`). These commands let other tools drive it without linking
//! the library: `import` starts one from a conversation file, `compact` runs one pass and
//! appends it, `replay` prints the conversation the transcript rebuilds, and `inspect`
//! shows its timeline — which is where "why did the model forget everything?" gets its
//! answer (a compaction marked HARD TRIM).

use std::fmt::Write as _;
use std::path::PathBuf;

use llm_compactor::format::{Document, Format};
use llm_compactor::message::Message;
use llm_compactor::session::{Record, Session, SessionMeta, SessionOptions, Transcript};
use serde_json::{Map, Value};

use crate::cmd::compact::{human_report, result_json};
use crate::cmd::compact_opts::CompactOpts;
use crate::cmd::convert::{FormatArg, FromArg};
use crate::error::CliError;
use crate::out::escape_controls;

/// The `session-meta` key that remembers the wire format a session was imported from, so
/// that replay converts from the right shape.
use llm_compactor::session::SOURCE_FORMAT_KEY;

/// Build, compact, replay and inspect session transcripts.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Start a session transcript from a conversation file (any supported format).
    Import(ImportArgs),
    /// Run one compaction pass over a session and append its elision and compaction lines.
    Compact(Box<CompactArgs>),
    /// Print the conversation a transcript replays to.
    Replay(ReplayArgs),
    /// Show a transcript's timeline: messages, elisions, compactions.
    Inspect(InspectArgs),
    /// Write a session held in a store (`--store postgres://…`) to a JSONL transcript.
    Export(crate::cmd::session_store::ExportArgs),
    /// Print the original messages behind handles a summary or a stub names.
    Expand(crate::cmd::expand::SessionExpandArgs),
}

/// `compactor session replay`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  compactor session replay run.jsonl\n  compactor session replay run.jsonl --json")]
struct ReplayArgs {
    /// The transcript (JSONL).
    session: PathBuf,
    /// Print the conversation as JSON: `{"messages": [...]}` in OpenAI chat format, or
    /// the `--to` format's document.
    #[arg(long)]
    json: bool,
    /// The JSON output's format.
    #[arg(long, value_enum, default_value = "openai", requires = "json")]
    to: FormatArg,
}

/// `compactor session compact`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  compactor session compact run.jsonl --budget 32000 --age-observations --json")]
struct CompactArgs {
    /// The transcript (JSONL); it is locked while the pass runs.
    session: PathBuf,
    /// Print the whole result as JSON, like `compactor compact --json` (messages in the
    /// session's source format, or `--format`).
    #[arg(long)]
    json: bool,
    /// What a pass cancelled by Ctrl-C or SIGTERM leaves behind: `trim` appends its
    /// hard-trimmed result (a compaction record with `fallback: true`, and the elision
    /// record of any stubs), as a completed pass would; `abort` appends nothing. Either
    /// way the command exits 130 (SIGINT) or 143 (SIGTERM).
    #[arg(long, value_enum, default_value_t = OnCancel::Trim)]
    on_cancel: OnCancel,
    /// The compaction options (those of `compactor compact`).
    #[command(flatten)]
    opts: CompactOpts,
}

/// `session compact --on-cancel`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum OnCancel {
    /// Append the hard-trimmed result of the cancelled pass.
    Trim,
    /// Append nothing: the transcript stays as it was.
    Abort,
}

/// `compactor session import`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  compactor session import run.traj.json -o run.jsonl")]
struct ImportArgs {
    /// The conversation file, or `-` for stdin.
    input: String,
    /// The new transcript (must not exist; created with mode 0600).
    #[arg(short, long, required_unless_present = "store")]
    output: Option<PathBuf>,
    /// Instead: put the transcript FILE into this store (`postgres://…`, `memory:`),
    /// line for line.
    #[arg(long, conflicts_with = "output")]
    store: Option<String>,
    /// The session key in the store (default: the file's name without extension).
    #[arg(long, requires = "store")]
    session: Option<String>,
    /// The input's format.
    #[arg(long, value_enum, default_value = "auto")]
    from: FromArg,
}

/// `compactor session inspect`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Example:\n  compactor session inspect run.jsonl")]
struct InspectArgs {
    /// The transcript (JSONL).
    session: PathBuf,
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    match args.command {
        Command::Import(args) => import(args),
        Command::Compact(args) => compact(*args),
        Command::Replay(args) => replay(args),
        Command::Inspect(args) => inspect(args),
        Command::Export(args) => crate::cmd::session_store::export(args),
        Command::Expand(args) => crate::cmd::expand::run(args),
    }
}

fn read(path: &std::path::Path) -> Result<Transcript, CliError> {
    let transcript = Transcript::read(path).map_err(CliError::failed)?;
    if let Some(torn) = transcript.torn_tail() {
        crate::out::stderr_line(&format!(
            "compactor: warning: {}:{}: torn final line ({} bytes) ignored; it is repaired when the session is next opened for writing",
            path.display(),
            torn.line,
            torn.bytes
        ))?;
    }
    Ok(transcript)
}

fn import(args: ImportArgs) -> Result<(), CliError> {
    if let Some(store) = &args.store {
        return crate::cmd::session_store::import(&args.input, store, args.session.clone());
    }
    let output = args
        .output
        .ok_or_else(|| CliError::Usage("give -o FILE or --store URL".to_owned()))?;
    let from = match args.from {
        FromArg::Auto => None,
        FromArg::OpenAi => Some(Format::OpenAi),
        FromArg::Anthropic => Some(Format::Anthropic),
        FromArg::MiniSweAgent => Some(Format::MiniSweAgent),
    };
    let document = crate::io::read_document(&args.input, from)?;
    let mut meta = Map::new();
    meta.insert(SOURCE_FORMAT_KEY.into(), Value::String(document.format().name().into()));
    meta.insert(
        "imported_from".into(),
        Value::String(crate::io::source_name(&args.input)),
    );
    let count = document.messages().len();
    // Atomic: the transcript appears whole, or not at all (a killed import can be retried).
    let session = Session::create_with_messages(&output, SessionOptions::new().meta(meta), document.into_messages())
        .map_err(CliError::failed)?;
    drop(session);
    crate::out::stderr_line(&format!(
        "compactor: imported {count} messages into {}",
        output.display()
    ))
}

/// The format a session was imported from (OpenAI when it does not say).
fn source_format(meta: &SessionMeta) -> Format {
    meta.extra
        .get(SOURCE_FORMAT_KEY)
        .and_then(Value::as_str)
        .and_then(|name| name.parse::<Format>().ok())
        .unwrap_or(Format::OpenAi)
}

fn compact(args: CompactArgs) -> Result<(), CliError> {
    let started = std::time::Instant::now();
    let (compactor, counter) = args.opts.compactor(!args.json)?;
    let (mut session, report) = Session::open(&args.session, SessionOptions::new()).map_err(CliError::failed)?;
    if let Some(torn) = report.repaired {
        crate::out::stderr_line(&format!(
            "compactor: warning: {}:{}: repaired a torn final line ({} bytes removed)",
            args.session.display(),
            torn.line,
            torn.bytes
        ))?;
    }
    let (result, interrupted) = args.opts.run_pass(&compactor, session.messages())?;
    if let Some(signal) = interrupted
        && args.on_cancel == OnCancel::Abort
    {
        eprintln!("compactor: nothing appended to {}", args.session.display());
        return Err(crate::cmd::compact::interrupted_error(
            signal,
            "--on-cancel abort: nothing was appended",
        ));
    }
    let messages_before = session.messages().to_vec();
    let recorded = session.record_result(&result).map_err(CliError::failed)?;
    if args.json {
        let format = args.opts.format().unwrap_or_else(|| source_format(session.meta()));
        let document = Document::from_messages(format, session.messages().to_vec());
        let text = serde_json::to_string_pretty(&result_json(&document, &result)).map_err(CliError::failed)?;
        crate::io::write_output(None, &text)?;
    }
    crate::out::stderr(&human_report(
        &result,
        &messages_before,
        counter.name(),
        started.elapsed(),
    ))?;
    let mut lines = Vec::new();
    if let Some(id) = &recorded.elision_id {
        lines.push(format!("elision {id}"));
    }
    if let Some(id) = &recorded.compaction_id {
        lines.push(format!("compaction {id}"));
    }
    if lines.is_empty() {
        crate::out::stderr_line(&format!("compactor: nothing appended to {}", args.session.display()))?;
    } else {
        crate::out::stderr_line(&format!(
            "compactor: appended to {}: {}",
            args.session.display(),
            lines.join(", ")
        ))?;
    }
    match interrupted {
        None => Ok(()),
        Some(signal) => Err(crate::cmd::compact::interrupted_error(
            signal,
            "the hard-trimmed result was appended (--on-cancel trim)",
        )),
    }
}

/// The conversation as a document of `target`, converted from the format it was imported
/// from (OpenAI when the session does not say).
fn export(transcript: &Transcript, target: Format) -> Result<Value, CliError> {
    let document = Document::from_messages(source_format(transcript.meta()), transcript.messages().to_vec());
    let value = document.to_format(target).map_err(CliError::failed)?;
    Ok(match value {
        Value::Array(messages) => serde_json::json!({ "messages": messages }),
        other => other,
    })
}

fn replay(args: ReplayArgs) -> Result<(), CliError> {
    let transcript = read(&args.session)?;
    let text = if args.json {
        let value = export(&transcript, args.to.into())?;
        serde_json::to_string_pretty(&value).map_err(CliError::failed)?
    } else {
        escape_controls(&render_conversation(transcript.messages()))
    };
    crate::io::write_output(None, text.trim_end())
}

fn render_conversation(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        let _ = writeln!(out, "[{}]", message.role);
        let text = message.text();
        if !text.is_empty() {
            let _ = writeln!(out, "{}", escape_controls(&text));
        }
        for call in &message.tool_calls {
            let _ = writeln!(
                out,
                "-> calls {}({})",
                escape_controls(&call.name),
                escape_controls(&call.arguments)
            );
        }
        out.push('\n');
    }
    out
}

fn preview(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}...")
    }
}

fn inspect(args: InspectArgs) -> Result<(), CliError> {
    let transcript = read(&args.session)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} lines, created by {}; replays to {} messages",
        args.session.display(),
        transcript.entries().len(),
        transcript.meta().created_by,
        transcript.messages().len()
    );
    let (mut messages, mut elisions, mut compactions, mut trims) = (0, 0, 0, 0);
    for entry in transcript.entries() {
        let what = match &entry.record {
            Record::Meta(_) => "session-meta".to_owned(),
            Record::Message(message) => {
                messages += 1;
                let mut line = format!(
                    "message     {:<9} {} chars",
                    message.role.as_str(),
                    message.content.chars()
                );
                if !message.tool_calls.is_empty() {
                    let names: Vec<&str> = message.tool_calls.iter().map(|c| c.name.as_str()).collect();
                    let _ = write!(line, ", calls {}", names.join(", "));
                }
                let text = message.text();
                if !text.is_empty() {
                    let _ = write!(line, "  \"{}\"", preview(&text, 60));
                }
                line
            }
            Record::Repair(repair) => format!(
                "repair      {} orphan result(s) dropped, {} unanswered call(s) given a synthetic answer",
                repair.dropped.len(),
                repair.answers.len()
            ),
            Record::Elision(elision) => {
                elisions += 1;
                format!("elision     {} tool result(s) stubbed", elision.items.len())
            }
            Record::Compaction(c) => {
                compactions += 1;
                if c.fallback {
                    trims += 1;
                }
                format!(
                    "compaction  replaces through {}: {} message(s) dropped, {} -> {} tokens, summary {} chars{}{}",
                    c.replaces_through_id,
                    c.dropped,
                    c.tokens_before,
                    c.tokens_after,
                    c.summary.chars().count(),
                    if c.fallback {
                        " [HARD TRIM: the summarizer failed; messages were dropped unsummarized]"
                    } else {
                        ""
                    },
                    if c.exhausted { " [EXHAUSTED]" } else { "" }
                )
            }
            Record::Unknown { kind, .. } => format!("{kind} (unknown type, skipped by replay)"),
        };
        let _ = writeln!(out, "{:>5}  {}  {}  {what}", entry.line, entry.ts, entry.id);
    }
    let _ = writeln!(
        out,
        "totals: {messages} message(s), {elisions} elision epoch(s), {compactions} compaction(s) ({trims} hard trim(s))"
    );
    if let Some(torn) = transcript.torn_tail() {
        let _ = writeln!(
            out,
            "{:>5}  torn final line ({} bytes), not replayed",
            torn.line, torn.bytes
        );
    }
    crate::io::write_output(None, escape_controls(out.trim_end()).as_str())
}
