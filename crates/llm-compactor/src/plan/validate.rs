//! The validator every result passes before it is returned.
//!
//! Orphaned tool results after a compaction are the most common way compactors break
//! conversations (a provider 400 on the very next request). So whatever the planning
//! decided, the rebuilt conversation is checked against the input: no new orphan, no
//! kept asking turn that lost its answers, every sticky message present in order, and
//! the recent window byte-identical.

use std::collections::HashSet;

use super::pairs::Pairs;
use crate::message::Message;

/// An invariant a rebuilt conversation broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// A tool result whose asking turn was dropped.
    #[error("message {index}: tool result {id:?} lost the assistant turn that asked for it")]
    Orphan {
        /// Index in the output.
        index: usize,
        /// Its tool_call_id.
        id: String,
    },
    /// An asking turn kept while its answers were dropped.
    #[error("message {index}: tool call {id:?} lost its result")]
    Unanswered {
        /// Index in the output.
        index: usize,
        /// The call id.
        id: String,
    },
    /// The sticky messages are not all present in their order.
    #[error("the sticky messages changed")]
    StickyChanged,
    /// The recent window is not byte-identical.
    #[error("the recent window changed")]
    RecentChanged,
}

/// Checks `output` against `input` whose recent window starts at `recent_start`.
///
/// # Errors
/// The first invariant broken.
pub fn validate(input: &[Message], output: &[Message], recent_start: usize) -> Result<(), Violation> {
    validate_refs(
        input,
        &Pairs::build(input),
        &output.iter().collect::<Vec<_>>(),
        recent_start,
    )
}

/// [`validate`] of an output given as message references (a candidate viewed without
/// being assembled: the hard trim validates its choice before copying anything).
///
/// # Errors
/// The first invariant broken.
/// `input_pairs` is `Pairs::build(input)`, which the caller already has.
pub(crate) fn validate_refs(
    input: &[Message],
    input_pairs: &Pairs,
    output: &[&Message],
    recent_start: usize,
) -> Result<(), Violation> {
    let recent = input.get(recent_start..).unwrap_or(&[]);
    if output.len() < recent.len()
        || !output[output.len() - recent.len()..]
            .iter()
            .zip(recent)
            .all(|(a, b)| *a == b)
    {
        return Err(Violation::RecentChanged);
    }
    if !input
        .iter()
        .filter(|m| m.is_sticky())
        .eq(output.iter().copied().filter(|m| m.is_sticky()))
    {
        return Err(Violation::StickyChanged);
    }
    let (in_orphans, in_answered) = pairing(input.iter(), input_pairs);
    let out_pairs = Pairs::build_from(output.iter().copied());
    let out_answered = pairing(output.iter().copied(), &out_pairs).1;
    for (index, message) in output.iter().copied().enumerate() {
        if message.is_tool_result()
            && out_pairs.asker(index).is_none()
            && let Some(id) = message.tool_call_id.as_deref()
            && !in_orphans.contains(id)
        {
            return Err(Violation::Orphan {
                index,
                id: id.to_owned(),
            });
        }
        for call in &message.tool_calls {
            if in_answered.contains(call.id.as_str()) && !out_answered.contains(call.id.as_str()) {
                return Err(Violation::Unanswered {
                    index,
                    id: call.id.clone(),
                });
            }
        }
    }
    Ok(())
}

/// A set of call ids (only asked whether it contains one, so the hasher's seed is
/// irrelevant to the outcome).
type Ids<'a> = HashSet<&'a str, foldhash::fast::RandomState>;

/// The ids of orphaned results and the ids of answered calls.
fn pairing<'a>(messages: impl Iterator<Item = &'a Message>, pairs: &Pairs) -> (Ids<'a>, Ids<'a>) {
    let mut orphans = Ids::default();
    let mut answered = Ids::default();
    for (i, message) in messages.enumerate() {
        if let Some(id) = message.tool_call_id.as_deref().filter(|_| message.is_tool_result()) {
            if pairs.asker(i).is_some() {
                answered.insert(id);
            } else {
                orphans.insert(id);
            }
        }
    }
    (orphans, answered)
}
