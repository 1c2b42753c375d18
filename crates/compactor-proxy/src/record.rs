//! Transcript lines for the store, built exactly as a [`llm_compactor::session::Session`]
//! would write them, and applied to a [`Replayer`] as they are built.
//!
//! The proxy keeps the conversation the upstream saw as a replayable transcript: message
//! lines for what each request added, and for a compaction an elision line then a
//! compaction line, by id. Every line goes through the same [`Replayer`] that
//! `compactor session replay` uses, so an export replays to the same conversation by
//! construction; a pass that replay would not rebuild is refused whole.

use llm_compactor::CompactionResult;
use llm_compactor::message::Message;
use llm_compactor::session::{
    Clock, CompactionRecord, ElisionItem, ElisionRecord, Record, Replayer, SystemClock, encode_line, format_timestamp,
};
use llm_compactor::store::NewEvent;

/// Lines being built for one request, applied to the replayer as they are added.
#[derive(Default)]
pub struct Lines {
    /// The lines, in order, ready for [`llm_compactor::store::SessionStore::append`].
    pub events: Vec<NewEvent>,
}

fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Lines {
    /// Adds one record with a fresh id; returns the id.
    pub fn push(&mut self, replayer: &mut Replayer, record: Record) -> Result<String, String> {
        let id = new_id();
        self.push_with_id(replayer, id.clone(), record)?;
        Ok(id)
    }

    fn push_with_id(&mut self, replayer: &mut Replayer, id: String, record: Record) -> Result<(), String> {
        replayer.check(&id, &record).map_err(|e| e.to_string())?;
        let ts = format_timestamp(SystemClock.now());
        let mut line = encode_line(&id, &ts, &record).map_err(|e| e.to_string())?;
        line.pop();
        replayer.apply(&id, &record).map_err(|e| e.to_string())?;
        self.events.push(NewEvent {
            id,
            kind: record.kind().to_owned(),
            line,
        });
        Ok(())
    }

    /// Records a pass that ran over exactly `replayer.messages()`: an elision line, then
    /// a compaction line. Nothing is added (and the replayer is unchanged) when replay
    /// would not rebuild `result.messages`.
    pub fn push_pass(&mut self, replayer: &mut Replayer, result: &CompactionResult) -> Result<(), String> {
        let id_at = |index: usize| {
            replayer
                .messages()
                .get(index)
                .and_then(|m| m.id.clone())
                .ok_or_else(|| format!("index {index} is not a recorded message"))
        };
        let items = result
            .elisions
            .iter()
            .map(|e| {
                Ok(ElisionItem {
                    id: id_at(e.index)?,
                    stub: e.stub.clone(),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let compaction = if result.cut_index >= 0 {
            let cut = usize::try_from(result.cut_index).map_err(|e| e.to_string())?;
            Some(CompactionRecord {
                dropped: result.dropped,
                exhausted: result.exhausted,
                fallback: result.fallback,
                receipt: result.receipt.clone(),
                replaces_through_id: id_at(cut)?,
                summary: result.summary.clone(),
                tokens_after: result.tokens_after,
                tokens_before: result.tokens_before,
                usage: result.usage,
            })
        } else {
            None
        };
        let mut trial = replayer.clone();
        let mut lines = Lines::default();
        if !items.is_empty() {
            // An elision-only pass carries its receipt on its elision line.
            let receipt = if compaction.is_none() {
                result.receipt.clone()
            } else {
                None
            };
            lines.push(&mut trial, Record::Elision(ElisionRecord { items, receipt }))?;
        }
        if let Some(compaction) = compaction {
            lines.push(&mut trial, Record::Compaction(compaction))?;
        }
        let rebuilt = trial.messages();
        if rebuilt.len() != result.messages.len()
            || !rebuilt.iter().zip(&result.messages).all(|(a, b)| same_but_id(a, b))
        {
            return Err("replay of the pass would not rebuild the compacted conversation".to_owned());
        }
        *replayer = trial;
        self.events.extend(lines.events);
        Ok(())
    }
}

/// Equal in everything but the id.
pub fn same_but_id(a: &Message, b: &Message) -> bool {
    a.eq_ignoring_id(b)
}

/// The messages without their ids (what goes on the wire and into a rewrite).
pub fn without_ids(messages: &[Message]) -> Vec<Message> {
    messages.iter().map(|m| Message { id: None, ..m.clone() }).collect()
}
