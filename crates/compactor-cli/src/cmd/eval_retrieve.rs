//! Retrievable recall: a probe the summary lacks but that sits in a message whose handle
//! the summary names is not lost, it is one `compactor_expand` away.
//!
//! The handles are resolved exactly as expansion resolves them
//! ([`llm_compactor::plan::resolve_handle`]: the message and, for a call, its results),
//! against the messages of the pass's input; a probe counts as retrievable when its text
//! occurs in the summary or verbatim in the readable text of a message a named handle
//! expands to.

use llm_compactor::Message;
use llm_compactor::plan::ledger::source_text;
use llm_compactor::plan::{handle_ranges_in, handles_in, resolve_handle, resolve_range};

use super::eval_probes::Probe;

/// The readable text of every message a handle named in `summary` expands to (and,
/// with `ranges`, every message of a `#first..#last` range it names).
pub fn retrievable_text(messages: &[Message], summary: &str, ranges: bool) -> String {
    let mut indices: Vec<usize> = handles_in(summary)
        .iter()
        .flat_map(|h| resolve_handle(messages, h))
        .collect();
    if ranges {
        for (first, last) in handle_ranges_in(summary) {
            indices.extend(resolve_range(messages, &first, &last));
        }
    }
    indices.sort_unstable();
    indices.dedup();
    let picked: Vec<Message> = indices.into_iter().map(|i| messages[i].clone()).collect();
    source_text(&picked)
}

/// How many of `probes` are in `summary` or in a message it names by handle (or, with
/// `ranges`, within a range it names).
pub fn retrievable(probes: &[Probe], summary: &str, messages: &[Message], ranges: bool) -> usize {
    let text = retrievable_text(messages, summary, ranges);
    probes
        .iter()
        .filter(|p| summary.contains(&p.text) || text.contains(&p.text))
        .count()
}
