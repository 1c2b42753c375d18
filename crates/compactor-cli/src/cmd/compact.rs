//! `compactor compact`: one compaction pass over a conversation file, like a manual
//! `/compact` (it compacts even below the trigger).

use std::path::PathBuf;

use llm_compactor::format::Document;
use llm_compactor::plan::Repair;
use llm_compactor::{CompactionResult, Message};
use serde_json::{Map, Value};

use super::compact_opts::CompactOpts;
use super::interrupt::Interrupt;
use crate::error::CliError;
use crate::io;
use crate::out::escape_controls;

/// Compact a conversation: write it back in its own format, report on stderr.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The conversation file, or `-` for stdin.
    pub input: String,
    /// Write the result here (atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print the whole result as JSON (messages in the input's format, summary, counts,
    /// elisions, usage, attempts).
    #[arg(long)]
    pub json: bool,
    /// The compaction options.
    #[command(flatten)]
    pub opts: CompactOpts,
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let started = std::time::Instant::now();
    let (compactor, counter) = args.opts.compactor(!args.json)?;
    let document = io::read_document(&args.input, args.opts.format())?;
    let (result, interrupted) = args.opts.run_pass(&compactor, document.messages())?;
    let compacted = document.with_messages(result.messages.clone());
    let text = if args.json {
        serde_json::to_string_pretty(&result_json(&compacted, &result)).map_err(CliError::failed)?
    } else {
        serde_json::to_string_pretty(&compacted.to_value()).map_err(CliError::failed)?
    };
    io::write_output_for(Some(&args.input), args.output.as_deref(), &text)?;
    crate::out::stderr(&human_report(
        &result,
        document.messages(),
        counter.name(),
        started.elapsed(),
    ))?;
    match interrupted {
        None => Ok(()),
        Some(signal) => Err(interrupted_error(signal, "the hard-trimmed result was written")),
    }
}

/// The error a command ends with after a signal cancelled its pass.
pub fn interrupted_error(signal: Interrupt, what: &str) -> CliError {
    CliError::Interrupted {
        message: format!("interrupted by {}: the pass was cancelled; {what}", signal.name()),
        code: signal.exit_code(),
    }
}

/// Two bars, before and after, on one scale.
fn bars(before: usize, after: usize) -> String {
    const WIDTH: usize = 40;
    let scale = before.max(after).max(1);
    let bar = |tokens: usize| {
        let filled = (tokens * WIDTH).div_ceil(scale).min(WIDTH);
        format!("[{}{}]", "#".repeat(filled), " ".repeat(WIDTH - filled))
    };
    format!(
        "  before {} {before:>8} tokens\n  after  {} {after:>8} tokens\n",
        bar(before),
        bar(after)
    )
}

/// What the repair did to a broken input before the pass, a line each (the input's
/// indices): a conversation that lost a message must say so.
fn repairs_report(repairs: &[Repair]) -> String {
    let mut out = String::new();
    if repairs.is_empty() {
        return out;
    }
    let noun = if repairs.len() == 1 { "change" } else { "changes" };
    out.push_str(&format!(
        "compactor: the input was repaired first ({} {noun}):\n",
        repairs.len()
    ));
    for repair in repairs {
        out.push_str(&match repair {
            Repair::DroppedOrphan { index, message } => format!(
                "  dropped #{index}: a tool result that answers no call before it (tool_call_id {})\n",
                escape_controls(message.tool_call_id.as_deref().unwrap_or("none"))
            ),
            Repair::SyntheticAnswer {
                after, tool_call_id, ..
            } => format!(
                "  answered call {} after #{after}: it had no result (a synthetic \"no result recorded\" answer)\n",
                escape_controls(tool_call_id)
            ),
        });
    }
    out
}

/// The messages array of a document in its own format.
fn messages_value(document: &Document) -> Value {
    match document.to_value() {
        Value::Object(mut object) => object.remove("messages").unwrap_or(Value::Array(Vec::new())),
        other => other,
    }
}

/// The `--json` object: the whole [`CompactionResult`] as it serializes (so a field the
/// result gains is printed without a change here), its messages in the document's wire
/// format, and the lists and the receipt present even when empty.
pub fn result_json(document: &Document, result: &CompactionResult) -> Value {
    let mut object = match serde_json::to_value(result) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    };
    object.insert("messages".into(), messages_value(document));
    for key in ["repairs", "truncations"] {
        object.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    }
    object.entry("receipt").or_insert(Value::Null);
    Value::Object(object)
}

/// The human report printed on stderr. Text from the model or the conversation (the
/// summary, stubs, attempt notes) has its control characters escaped.
pub fn human_report(
    result: &CompactionResult,
    input: &[Message],
    counter: &str,
    elapsed: std::time::Duration,
) -> String {
    let mut out = String::new();
    let what = if result.is_noop() {
        "nothing to compact (no messages between the sticky prefix and the recent window)".to_owned()
    } else if result.is_elision_only() {
        format!("aged {} tool results (no summary needed)", result.elisions.len())
    } else if result.fallback {
        format!("HARD TRIM: dropped {} messages unsummarized", result.dropped)
    } else if result.dropped == 0 {
        // Only the repairs changed the conversation (listed below).
        "repaired the conversation; nothing to compact (no messages between the sticky prefix and the recent \
         window)"
            .to_owned()
    } else {
        format!("summarized {} messages", result.dropped)
    };
    out.push_str(&format!(
        "compactor: {what}; {} -> {} tokens ({counter})\n",
        result.tokens_before, result.tokens_after
    ));
    out.push_str(&bars(result.tokens_before, result.tokens_after));
    out.push_str(&repairs_report(&result.repairs));
    if !result.stale_thinking.is_empty() {
        out.push_str(&format!(
            "compactor: {} signed thinking blocks now sit on a changed prefix: a model with preserved \
             thinking refuses them; send with drop_block (Anthropic) or strip them (their signatures: \
             --json, stale_thinking)\n",
            result.stale_thinking.len()
        ));
    }
    if !result.truncations.is_empty() {
        let cut: usize = result.truncations.iter().map(|t| t.cut_chars).sum();
        out.push_str(&format!(
            "compactor: {} recent tool results cut head-and-tail to fit (max_recent_tokens): {cut} chars\n",
            result.truncations.len()
        ));
    }
    // Only the stubs still in the output are listed: a stub the same pass then replaced
    // by the summary is not in what the agent will read.
    let kept: Vec<_> = result.elisions.iter().filter(|e| result.survived(e)).collect();
    let replaced = result.elisions.len() - kept.len();
    if !result.elisions.is_empty() && !result.is_elision_only() {
        let then = if replaced > 0 {
            format!(" ({replaced} of them then replaced by the summary)")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "compactor: {} tool results stubbed{then}\n",
            result.elisions.len()
        ));
    }
    const SHOWN: usize = 8;
    for elision in kept.iter().take(SHOWN) {
        out.push_str(&format!(
            "  elided #{}: {}\n",
            elision.index,
            escape_controls(&elision.stub)
        ));
    }
    if kept.len() > SHOWN {
        out.push_str(&format!("  ... and {} more\n", kept.len() - SHOWN));
    }
    if !result.attempts.is_empty() {
        let list: Vec<String> = result
            .attempts
            .iter()
            .map(|a| {
                let mut s = format!("{:?} {:?}", a.kind, a.outcome).to_lowercase();
                if let Some(note) = &a.note {
                    s.push_str(&format!(" ({})", escape_controls(note)));
                }
                s
            })
            .collect();
        out.push_str(&format!("compactor: summarizer attempts: {}\n", list.join("; ")));
        out.push_str(&format!(
            "compactor: summarizer usage: {} input, {} output tokens\n",
            result.usage.input_tokens, result.usage.output_tokens
        ));
    }
    if !result.summary.is_empty() {
        let label = if result.fallback { "notice" } else { "summary" };
        out.push_str(&format!(
            "compactor: {label} inserted for messages {}:\n",
            replaced_ranges(input, result.cut_index)
        ));
        for line in escape_controls(&result.summary).lines() {
            out.push_str(&format!("  | {line}\n"));
        }
    }
    out.push_str(&format!("compactor: took {:.1} s\n", elapsed.as_secs_f64()));
    if result.exhausted {
        match &result.exhaustion {
            Some(numbers) => out.push_str(&format!("compactor: EXHAUSTED: {numbers}\n")),
            None => out.push_str(
                "compactor: EXHAUSTED: the result still does not fit; the sticky prefix plus the recent window \
                 is too big for the budget\n",
            ),
        }
    }
    out
}

/// The input messages the summary (or notice) replaced: the non-sticky ones at or before
/// `cut_index`, as inclusive ranges (`1..=35`, or `1..=9, 11..=35` around a pinned one),
/// so a kept system prompt is not reported as replaced.
pub fn replaced_ranges(input: &[Message], cut_index: i64) -> String {
    let Ok(cut) = usize::try_from(cut_index) else {
        return "none".to_owned();
    };
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for (i, message) in input.iter().enumerate().take(cut.saturating_add(1)) {
        if message.is_sticky() {
            continue;
        }
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == i => *end = i,
            _ => ranges.push((i, i)),
        }
    }
    if ranges.is_empty() {
        return "none".to_owned();
    }
    ranges
        .iter()
        .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}..={b}") })
        .collect::<Vec<_>>()
        .join(", ")
}
