//! Recording a compaction pass: [`CompactionResult`] indices turned into ids.
//!
//! The engine speaks in positions of the conversation it was given (`cut_index`,
//! `elisions[].index`); the transcript speaks in ids, which survive later compactions.
//! Before anything is written, the pass is replayed on a copy of the conversation and
//! compared with `result.messages`: a result that replay would not rebuild is refused
//! whole, so the transcript can never drift from the live conversation. Then the repair
//! line (a broken input made valid), the elision line and the compaction line are
//! written in that order, as replay expects. The pass's cost receipt rides on its last
//! line: the compaction line when it cut, else the elision line (an elision epoch); replay
//! never reads it, so the rebuilt conversation is the same with or without it. When the
//! pass repaired its input, its
//! indices refer to the repaired conversation: they are turned into ids after the repair
//! line is applied to a copy.

use serde::Serialize;

use super::error::SessionError;
use super::log::Session;
use super::record::{CompactionRecord, ElisionItem, ElisionRecord, Record, RepairRecord, SyntheticAnswerItem};
use super::replay::Replayer;
use crate::compactor::CompactionResult;
use crate::message::Message;
use crate::plan::Repair;

/// The lines one pass wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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

/// The lines a pass will write.
struct PlannedPass {
    repair: Option<(String, RepairRecord)>,
    elisions: Vec<ElisionItem>,
    compaction: Option<CompactionRecord>,
}

impl Session {
    /// Records a pass that `compact` ran over exactly [`Session::messages`]: a repair line
    /// for `result.repairs`, an elision line for `result.elisions` (every stub the pass
    /// made, including those the same pass then summarized or trimmed away, and the
    /// recent results it cut to fit), then a compaction line for `result.cut_index >= 0`.
    /// Afterwards [`Session::messages`] equals `result.messages` (plus ids: the summary
    /// message gets the compaction line's id).
    ///
    /// # Errors
    /// [`SessionError::ResultMismatch`] when an index is out of range or replay would not
    /// rebuild `result.messages` (nothing is written then), or I/O.
    pub fn record_result(&mut self, result: &CompactionResult) -> Result<RecordedPass, SessionError> {
        let planned = self.plan_pass(result)?;
        let elision_id = (!planned.elisions.is_empty()).then(|| self.next_id());
        let compaction_id = planned.compaction.as_ref().map(|_| self.next_id());
        self.verify_pass(result, &planned, compaction_id.as_deref())?;
        let mut recorded = RecordedPass::default();
        if let Some((id, repair)) = planned.repair {
            self.append_record(id.clone(), Record::Repair(repair))?;
            recorded.repair_id = Some(id);
        }
        if let Some(id) = elision_id {
            // An elision-only pass (an epoch) carries its receipt here; a pass that also
            // cut carries it on its compaction line.
            let receipt = if planned.compaction.is_none() {
                result.receipt.clone()
            } else {
                None
            };
            let elision = ElisionRecord {
                items: planned.elisions,
                receipt,
            };
            self.append_elision_with_id(id.clone(), elision)?;
            recorded.elision_id = Some(id);
        }
        if let (Some(compaction), Some(id)) = (planned.compaction, compaction_id) {
            self.append_compaction_with_id(id.clone(), compaction)?;
            recorded.compaction_id = Some(id);
        }
        Ok(recorded)
    }

    fn mismatch(&self, problem: String) -> SessionError {
        SessionError::ResultMismatch {
            path: self.path().to_owned(),
            problem,
        }
    }

    fn id_in(&self, messages: &[Message], index: usize, what: &str) -> Result<String, SessionError> {
        match messages.get(index) {
            Some(message) => message
                .id
                .clone()
                .ok_or_else(|| self.mismatch(format!("message {index} has no id"))),
            None => Err(self.mismatch(format!(
                "{what} {index} is past the end of the conversation ({} messages)",
                messages.len()
            ))),
        }
    }

    /// The repair line (by id), and the replayer after it: the conversation the pass's
    /// indices refer to.
    fn plan_repair(
        &mut self,
        result: &CompactionResult,
    ) -> Result<(Option<(String, RepairRecord)>, Replayer), SessionError> {
        let mut replay = self.replayer().clone();
        if result.repairs.is_empty() {
            return Ok((None, replay));
        }
        let messages = self.messages().to_vec();
        let mut record = RepairRecord::default();
        for repair in &result.repairs {
            match repair {
                Repair::DroppedOrphan { index, .. } => {
                    record.dropped.push(self.id_in(&messages, *index, "repair index")?)
                }
                Repair::SyntheticAnswer {
                    after,
                    tool_call_id,
                    content,
                } => record.answers.push(SyntheticAnswerItem {
                    after: self.id_in(&messages, *after, "repair index")?,
                    content: content.clone(),
                    tool_call_id: tool_call_id.clone(),
                }),
            }
        }
        let id = self.next_id();
        replay
            .apply(&id, &Record::Repair(record.clone()))
            .map_err(|e| self.mismatch(e.to_string()))?;
        Ok((Some((id, record)), replay))
    }

    fn plan_pass(&mut self, result: &CompactionResult) -> Result<PlannedPass, SessionError> {
        let (repair, base) = self.plan_repair(result)?;
        let messages = base.messages();
        let elisions = result
            .elisions
            .iter()
            .map(|e| {
                Ok(ElisionItem {
                    id: self.id_in(messages, e.index, "elision index")?,
                    stub: e.stub.clone(),
                })
            })
            .collect::<Result<Vec<_>, SessionError>>()?;
        let compaction = if result.cut_index >= 0 {
            let cut = usize::try_from(result.cut_index).map_err(|e| self.mismatch(e.to_string()))?;
            Some(CompactionRecord {
                dropped: result.dropped,
                exhausted: result.exhausted,
                fallback: result.fallback,
                receipt: result.receipt.clone(),
                replaces_through_id: self.id_in(messages, cut, "cut_index")?,
                summary: result.summary.clone(),
                tokens_after: result.tokens_after,
                tokens_before: result.tokens_before,
                usage: result.usage,
            })
        } else {
            None
        };
        Ok(PlannedPass {
            repair,
            elisions,
            compaction,
        })
    }

    fn verify_pass(
        &self,
        result: &CompactionResult,
        planned: &PlannedPass,
        compaction_id: Option<&str>,
    ) -> Result<(), SessionError> {
        let mut replay = self.replayer().clone();
        if let Some((id, repair)) = &planned.repair {
            replay
                .apply(id, &Record::Repair(repair.clone()))
                .map_err(|e| self.mismatch(e.to_string()))?;
        }
        if !planned.elisions.is_empty() {
            let id = format!("{}#elision-check", compaction_id.unwrap_or("pass"));
            let record = Record::Elision(ElisionRecord::new(planned.elisions.clone()));
            replay.apply(&id, &record).map_err(|e| self.mismatch(e.to_string()))?;
        }
        if let (Some(compaction), Some(id)) = (&planned.compaction, compaction_id) {
            replay
                .apply(id, &Record::Compaction(compaction.clone()))
                .map_err(|e| self.mismatch(e.to_string()))?;
        }
        let rebuilt = replay.messages();
        if rebuilt.len() != result.messages.len() {
            return Err(self.mismatch(format!(
                "replay gives {} messages, the result has {}",
                rebuilt.len(),
                result.messages.len()
            )));
        }
        for (index, (ours, theirs)) in rebuilt.iter().zip(&result.messages).enumerate() {
            if !same_but_id(ours, theirs) {
                return Err(self.mismatch(format!("message {index} differs from what replay rebuilds")));
            }
        }
        Ok(())
    }
}

/// Equal in everything but the id (the engine's summary message has none yet; a message
/// it kept may or may not carry one).
fn same_but_id(ours: &Message, theirs: &Message) -> bool {
    if let Some(id) = &theirs.id
        && ours.id.as_ref() != Some(id)
    {
        return false;
    }
    ours.eq_ignoring_id(theirs)
}
