//! `compactor eval --agent-loop`: what survives *across* passes.
//!
//! One pass scores one summary; an agent lives through many. This replays each file as
//! an agent loop: the messages arrive one by one (each given a session-style id, as a
//! [`llm_compactor::session::Session`] gives them), and before every model request (an
//! assistant message) the loop asks the compactor whether a pass is due and, if so, runs
//! it and goes on with its messages, exactly as [`llm_compactor::session::ContextManager`]
//! does. At the end it scores the *first epoch* (the messages that arrived before the
//! first summarizing pass) against the final conversation:
//!
//! - files touched then (the ledger's extraction of those messages, less the files a
//!   listing only named) still named in the
//!   final summary, and anywhere in the final conversation;
//! - commands run then named anywhere, and retrievable: named, or in a message a handle
//!   the final conversation names expands to (with `--expand`);
//! - handles named in the final conversation that resolve to nothing (invented).

use std::sync::Arc;

use llm_compactor::plan::ledger::{LedgerRules, extract, source_text};
use llm_compactor::plan::{SUMMARY_HEADER, handle_ranges_in, handles_in, resolve_handle, resolve_range};
use llm_compactor::{CompactOptions, Compactor, Conversation, Message, Role, TokenCounter};
use serde::Serialize;
use serde_json::json;

use crate::error::CliError;

/// The cross-pass score of one file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoopScore {
    /// The file.
    pub file: String,
    /// Passes that summarized or trimmed.
    pub compactions: usize,
    /// Passes that only elided.
    pub elision_epochs: usize,
    /// Messages that arrived before the first compaction.
    pub first_epoch_messages: usize,
    /// Files the ledger extracts from the first epoch.
    pub files_before: usize,
    /// Of those, named in the final summary.
    pub files_in_final_summary: usize,
    /// Of those, named anywhere in the final conversation.
    pub files_named: usize,
    /// Commands the ledger extracts from the first epoch.
    pub commands_before: usize,
    /// Of those, named (their shown head) anywhere in the final conversation.
    pub commands_named: usize,
    /// Of those, named or in a message a handle of the final conversation expands to.
    pub commands_retrievable: usize,
    /// Handles the final conversation names that resolve to no message of the run.
    pub invented_handles: usize,
    /// The files of the first epoch the final summary no longer names (for inspection).
    pub files_lost: Vec<String>,
    /// The final summary (for inspection).
    pub final_summary: String,
}

/// Replays `file`'s `messages` through `compactor` and scores the first epoch.
///
/// # Errors
/// A pass that fails, or no runtime.
pub fn score(
    file: &str,
    messages: &[Message],
    compactor: &Compactor,
    counter: Arc<dyn TokenCounter>,
) -> Result<LoopScore, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CliError::failed)?;
    let originals: Vec<Message> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut m = m.clone();
            if m.id.is_none() {
                m.id = Some(format!("m{i}"));
            }
            m
        })
        .collect();
    let mut conversation = Conversation::new(counter);
    let mut score = LoopScore {
        file: file.to_owned(),
        first_epoch_messages: originals.len(),
        ..LoopScore::default()
    };
    for (i, message) in originals.iter().enumerate() {
        if message.role == Role::Assistant && compactor.needs_compaction_in(&conversation) {
            let result = runtime
                .block_on(compactor.compact(conversation.messages(), CompactOptions::default()))
                .map_err(|e| CliError::Usage(format!("{file}: {e}")))?;
            if result.is_elision_only() {
                score.elision_epochs += 1;
            } else if !result.is_noop() {
                if score.compactions == 0 {
                    score.first_epoch_messages = i;
                }
                score.compactions += 1;
            }
            if !result.is_noop() {
                conversation.replace(result.messages);
            }
        }
        conversation.push(message.clone());
    }
    let last = conversation.messages();
    let everything = source_text(last);
    let summary = last
        .iter()
        .rev()
        .map(Message::text)
        .find(|t| t.starts_with(SUMMARY_HEADER))
        .unwrap_or_default();
    let epoch: Vec<usize> = (0..score.first_epoch_messages).collect();
    let mut ledger = extract(&originals, &epoch, &LedgerRules::default());
    // Touched: a file a listing (`find`, `grep -l`) only named was not.
    ledger.files.retain(|f| f.operations.iter().any(|op| op != "listed"));
    score.files_before = ledger.files.len();
    score.files_in_final_summary = ledger.files.iter().filter(|f| summary.contains(&f.path)).count();
    score.files_named = ledger.files.iter().filter(|f| everything.contains(&f.path)).count();
    score.files_lost = ledger
        .files
        .iter()
        .filter(|f| !summary.contains(&f.path))
        .map(|f| f.path.clone())
        .collect();
    score.final_summary = summary.clone();
    let named = handles_in(&everything);
    let mut reachable: Vec<usize> = Vec::new();
    for handle in &named {
        let found = resolve_handle(&originals, handle);
        if found.is_empty() {
            score.invented_handles += 1;
        }
        reachable.extend(found);
    }
    for (first, last) in handle_ranges_in(&everything) {
        reachable.extend(resolve_range(&originals, &first, &last));
    }
    score.commands_before = ledger.commands.len();
    for command in &ledger.commands {
        let head = command.command.trim_end_matches('…');
        let is_named = everything.contains(head);
        score.commands_named += usize::from(is_named);
        score.commands_retrievable += usize::from(is_named || reachable.contains(&command.last_seen));
    }
    Ok(score)
}

fn share(part: usize, whole: usize) -> serde_json::Value {
    if whole == 0 {
        serde_json::Value::Null
    } else {
        json!(part as f64 / whole as f64)
    }
}

/// The totals of `scores`, as JSON.
pub fn total(scores: &[LoopScore]) -> serde_json::Value {
    let sum = |f: fn(&LoopScore) -> usize| scores.iter().map(f).sum::<usize>();
    let files = sum(|s| s.files_before);
    let commands = sum(|s| s.commands_before);
    json!({
        "files": scores.len(),
        "compactions": sum(|s| s.compactions),
        "min_compactions": scores.iter().map(|s| s.compactions).min(),
        "elision_epochs": sum(|s| s.elision_epochs),
        "files_before": files,
        "files_in_final_summary": sum(|s| s.files_in_final_summary),
        "files_in_final_summary_share": share(sum(|s| s.files_in_final_summary), files),
        "files_named": sum(|s| s.files_named),
        "files_named_share": share(sum(|s| s.files_named), files),
        "commands_before": commands,
        "commands_named": sum(|s| s.commands_named),
        "commands_named_share": share(sum(|s| s.commands_named), commands),
        "commands_retrievable": sum(|s| s.commands_retrievable),
        "commands_retrievable_share": share(sum(|s| s.commands_retrievable), commands),
        "invented_handles": sum(|s| s.invented_handles),
    })
}

/// The scores as a table.
pub fn table(scores: &[LoopScore]) -> String {
    let mut out = format!(
        "{:<48} {:>6} {:>9} {:>13} {:>9} {:>12} {:>12}\n",
        "file", "passes", "files", "in summary", "named", "commands", "retrievable"
    );
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "-".to_owned()
        } else {
            format!("{:.0}%", 100.0 * a as f64 / b as f64)
        }
    };
    let mut row = |name: &str, passes: usize, s: &LoopScore| {
        let name: String = if name.chars().count() > 48 {
            let tail: Vec<char> = name.chars().rev().take(47).collect();
            format!("…{}", tail.into_iter().rev().collect::<String>())
        } else {
            name.to_owned()
        };
        out.push_str(&format!(
            "{name:<48} {passes:>6} {:>9} {:>13} {:>9} {:>12} {:>12}\n",
            s.files_before,
            pct(s.files_in_final_summary, s.files_before),
            pct(s.files_named, s.files_before),
            s.commands_before,
            pct(s.commands_retrievable, s.commands_before),
        ));
    };
    let mut all = LoopScore::default();
    for s in scores {
        row(&s.file, s.compactions, s);
        all.files_before += s.files_before;
        all.files_in_final_summary += s.files_in_final_summary;
        all.files_named += s.files_named;
        all.commands_before += s.commands_before;
        all.commands_retrievable += s.commands_retrievable;
        all.compactions += s.compactions;
        all.invented_handles += s.invented_handles;
    }
    row(&format!("TOTAL ({} files)", scores.len()), all.compactions, &all);
    out.push_str(&format!(
        "(files: touched before the first compaction; in summary / named: of those, in the final summary / \
         anywhere in the final conversation; retrievable: commands of that epoch named, or behind a handle \
         the final conversation names; invented handles: {})\n",
        all.invented_handles
    ));
    out
}
