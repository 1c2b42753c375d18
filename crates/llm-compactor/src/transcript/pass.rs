//! Recording a compaction pass: [`CompactionResult`] indices turned into ids.
//!
//! The engine speaks in positions of the conversation it was given (`cut_index`,
//! `elisions[].index`); the transcript speaks in ids, which survive later compactions.
//! Before anything is written, the pass's lines are replayed on a copy of the
//! conversation and the copy compared with `result.messages`: a result that replay would
//! not rebuild is refused whole, so the transcript can never drift from the live
//! conversation. The lines are the repair line (a broken input made valid), the elision
//! line and the compaction line, in that order, as replay expects. When the pass repaired
//! its input, its indices refer to the repaired conversation: they are turned into ids
//! after the repair line is applied to the copy. The pass's cost receipt rides on its
//! last line: the compaction line when it cut, else the elision line (an elision epoch);
//! replay never reads it, so the rebuilt conversation is the same with or without it.
//!
//! [`plan_pass`] is that plan, written once: the file writer
//! ([`crate::session::Session::record_result`]) and the in-memory writer ([`super::Lines::push_pass`],
//! a proxy's store) both write what it returns.

use serde::Serialize;

use super::line_source::BatchIds;
use super::record::{CompactionRecord, ElisionItem, ElisionRecord, Record, RepairRecord, SyntheticAnswerItem};
use super::replay::Replayer;
use crate::compactor::CompactionResult;
use crate::message::Message;
use crate::plan::Repair;

/// The lines one pass wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RecordedPass {
    /// The repair line's id, when the pass repaired a broken input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_id: Option<String>,
    /// The elision line's id, when the pass stubbed anything.
    pub elision_id: Option<String>,
    /// The compaction line's id (and the summary message's), when the pass cut.
    pub compaction_id: Option<String>,
}

impl RecordedPass {
    /// True when the pass wrote nothing (a no-op).
    pub fn is_empty(&self) -> bool {
        self.repair_id.is_none() && self.elision_id.is_none() && self.compaction_id.is_none()
    }
}

/// The lines of a pass, checked: write `records` in order and the transcript replays to
/// `replayed` (whose messages equal the pass's, but for the ids).
pub(crate) struct PlannedPass {
    pub(crate) records: Vec<(String, Record)>,
    pub(crate) replayed: Replayer,
    pub(crate) recorded: RecordedPass,
}

/// The lines that record `result`, a pass that ran over exactly `base.messages()`, with
/// ids from `fresh_id` (given the replay so far and the ids already taken by the pass),
/// replayed on a copy of `base` and checked against `result.messages`.
///
/// # Errors
/// The problem, when an index is out of range or replay would not rebuild
/// `result.messages`.
pub(crate) fn plan_pass(
    base: &Replayer,
    result: &CompactionResult,
    mut fresh_id: impl FnMut(&Replayer, &BatchIds) -> String,
) -> Result<PlannedPass, String> {
    let mut replay = base.clone();
    let mut taken = BatchIds::default();
    let mut records = Vec::new();
    let mut recorded = RecordedPass::default();
    let mut next_id = |replay: &Replayer, taken: &mut BatchIds| {
        let id = fresh_id(replay, taken);
        taken.insert(id.clone());
        id
    };
    if !result.repairs.is_empty() {
        let repair = repair_record(replay.messages(), &result.repairs)?;
        let id = next_id(&replay, &mut taken);
        let record = Record::Repair(repair);
        replay.apply(&id, &record).map_err(|e| e.to_string())?;
        records.push((id.clone(), record));
        recorded.repair_id = Some(id);
    }
    let messages = replay.messages();
    let items = result
        .elisions
        .iter()
        .map(|e| {
            Ok(ElisionItem {
                id: id_in(messages, e.index, "elision index")?,
                stub: e.stub.clone(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let compaction = if result.cut_index >= 0 {
        let cut = usize::try_from(result.cut_index).map_err(|e| e.to_string())?;
        Some(CompactionRecord {
            attempts: result.attempts.clone(),
            dropped: result.dropped,
            exhausted: result.exhausted,
            fallback: result.fallback,
            receipt: result.receipt.clone(),
            replaces_through_id: id_in(messages, cut, "cut_index")?,
            summary: result.summary.clone(),
            summarizer: result.summarizer.clone(),
            tokens_after: result.tokens_after,
            tokens_before: result.tokens_before,
            usage: result.usage,
        })
    } else {
        None
    };
    if !items.is_empty() {
        // An elision-only pass (an epoch) carries its receipt here; a pass that also cut
        // carries it on its compaction line.
        let receipt = if compaction.is_none() {
            result.receipt.clone()
        } else {
            None
        };
        let id = next_id(&replay, &mut taken);
        let record = Record::Elision(ElisionRecord { items, receipt });
        replay.apply(&id, &record).map_err(|e| e.to_string())?;
        records.push((id.clone(), record));
        recorded.elision_id = Some(id);
    }
    if let Some(compaction) = compaction {
        let id = next_id(&replay, &mut taken);
        let record = Record::Compaction(compaction);
        replay.apply(&id, &record).map_err(|e| e.to_string())?;
        records.push((id.clone(), record));
        recorded.compaction_id = Some(id);
    }
    let rebuilt = replay.messages();
    if rebuilt.len() != result.messages.len() {
        return Err(format!(
            "replay gives {} messages, the result has {}",
            rebuilt.len(),
            result.messages.len()
        ));
    }
    if let Some(index) = rebuilt
        .iter()
        .zip(&result.messages)
        .position(|(ours, theirs)| !same_but_id(ours, theirs))
    {
        return Err(format!("message {index} differs from what replay rebuilds"));
    }
    Ok(PlannedPass {
        records,
        replayed: replay,
        recorded,
    })
}

/// The repair line of `repairs`, made over `messages` (indices into them).
fn repair_record(messages: &[Message], repairs: &[Repair]) -> Result<RepairRecord, String> {
    let mut record = RepairRecord::default();
    for repair in repairs {
        match repair {
            Repair::DroppedOrphan { index, .. } => record.dropped.push(id_in(messages, *index, "repair index")?),
            Repair::SyntheticAnswer {
                after,
                tool_call_id,
                content,
            } => record.answers.push(SyntheticAnswerItem {
                after: id_in(messages, *after, "repair index")?,
                content: content.clone(),
                tool_call_id: tool_call_id.clone(),
            }),
        }
    }
    Ok(record)
}

fn id_in(messages: &[Message], index: usize, what: &str) -> Result<String, String> {
    match messages.get(index) {
        Some(message) => message.id.clone().ok_or_else(|| format!("message {index} has no id")),
        None => Err(format!(
            "{what} {index} is past the end of the conversation ({} messages)",
            messages.len()
        )),
    }
}

/// Equal in everything but the id, where `theirs` may lack one: a message the engine
/// made (a summary) has none yet, and a client's message never has one; when `theirs`
/// does carry an id, it must be `ours`.
pub fn same_but_id(ours: &Message, theirs: &Message) -> bool {
    if let Some(id) = &theirs.id
        && ours.id.as_ref() != Some(id)
    {
        return false;
    }
    ours.eq_ignoring_id(theirs)
}
