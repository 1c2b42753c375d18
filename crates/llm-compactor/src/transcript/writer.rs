//! The one writer of transcript lines, wherever they are kept.
//!
//! A transcript line is an envelope (a fresh id, a timestamp, a record) that must apply
//! to the conversation the transcript replays to. Two places keep transcripts: a
//! [`crate::session::Session`] appends them to a file, a proxy appends them to a
//! [`crate::store::SessionStore`]. Both take their ids and timestamps from a
//! [`LineSource`], check each record on a [`Replayer`] before anything is written and
//! apply it after, record a compaction pass through the same plan
//! ([`super::pass`]: the repair line, the elision line, the compaction line, verified by
//! replay first) and encode with the same encoder ([`super::encode_line`]). [`Lines`] is
//! that writer for lines kept in memory until the caller stores them; the file writer
//! uses the same parts with its own `write`.
//!
//! A session that started over elsewhere (a proxy's client edited its history) points
//! at its new transcript with a [`CONTINUED`] line, a line type replay skips.

use serde_json::{Map, Value};

use super::envelope::encode_line;
use super::line_source::{BatchIds, LineSource};
use super::pass::{RecordedPass, plan_pass};
use super::record::{Record, SessionMeta};
use super::replay::{ReplayError, Replayer};
use crate::compactor::CompactionResult;

/// The line type that points a session's transcript at the one it continues in.
pub const CONTINUED: &str = "proxy-continued";

/// Why a line could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// Replay would refuse the record (a reused id, an unknown id, ...).
    #[error("replay would refuse the line: {0}")]
    Rejected(#[from] ReplayError),
    /// Replay of a pass's lines would not rebuild the pass's conversation (nothing was
    /// added).
    #[error("the pass cannot be recorded: {0}")]
    Mismatch(String),
    /// The record cannot be encoded as JSON.
    #[error("the line cannot be encoded: {0}")]
    Encode(String),
}

/// One encoded transcript line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Line {
    /// The envelope id.
    pub id: String,
    /// The envelope type.
    pub kind: String,
    /// The whole envelope, without its newline.
    pub text: String,
}

/// Transcript lines built in memory, each checked on a [`Replayer`] and applied to it as
/// it is added: what the replayer holds is what the lines replay to.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    source: LineSource,
    lines: Vec<Line>,
}

impl Lines {
    /// No lines yet; ids and timestamps from `source`.
    pub fn new(source: LineSource) -> Self {
        Lines {
            source,
            lines: Vec::new(),
        }
    }

    /// The lines built so far.
    pub fn lines(&self) -> &[Line] {
        &self.lines
    }

    /// True when no line was added.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The lines built so far, taken (the writer is empty afterwards).
    pub fn take(&mut self) -> Vec<Line> {
        std::mem::take(&mut self.lines)
    }

    /// Adds `record` with a fresh id: checked, encoded, then applied to `replayer`.
    /// Returns the id.
    ///
    /// # Errors
    /// Replay would refuse it, or it cannot be encoded (nothing is added then).
    pub fn push(&mut self, replayer: &mut Replayer, record: Record) -> Result<String, LineError> {
        let id = self.source.fresh_id(replayer, &BatchIds::default());
        self.push_records(replayer, vec![(id.clone(), record)])?;
        Ok(id)
    }

    /// Adds the opening line, with `extra` fields.
    ///
    /// # Errors
    /// As [`Lines::push`] (a conversation that already has lines refuses it).
    pub fn push_meta(&mut self, replayer: &mut Replayer, extra: Map<String, Value>) -> Result<String, LineError> {
        let meta = SessionMeta {
            extra,
            ..SessionMeta::default()
        };
        self.push(replayer, Record::Meta(meta))
    }

    /// Adds a [`CONTINUED`] line naming `store_key`, the transcript the session goes on
    /// in (replay skips it).
    ///
    /// # Errors
    /// As [`Lines::push`].
    pub fn push_continued(&mut self, replayer: &mut Replayer, store_key: &str) -> Result<String, LineError> {
        let mut payload = Map::new();
        payload.insert("store_key".into(), Value::String(store_key.to_owned()));
        let record = Record::Unknown {
            kind: CONTINUED.to_owned(),
            payload: Value::Object(payload),
        };
        self.push(replayer, record)
    }

    /// Records a pass that ran over exactly `replayer.messages()`: its repair line, its
    /// elision line and its compaction line, as [`crate::session::Session::record_result`] writes
    /// them. Afterwards `replayer` replays to `result.messages`.
    ///
    /// # Errors
    /// [`LineError::Mismatch`] when an index is out of range or replay would not rebuild
    /// `result.messages`; nothing is added and `replayer` is unchanged then.
    pub fn push_pass(&mut self, replayer: &mut Replayer, result: &CompactionResult) -> Result<RecordedPass, LineError> {
        let source = self.source.clone();
        let planned =
            plan_pass(replayer, result, |taken, batch| source.fresh_id(taken, batch)).map_err(LineError::Mismatch)?;
        let mut encoded = Vec::with_capacity(planned.records.len());
        let ts = self.source.timestamp();
        for (id, record) in &planned.records {
            encoded.push(encode(id, &ts, record)?);
        }
        *replayer = planned.replayed;
        self.lines.extend(encoded);
        Ok(planned.recorded)
    }

    fn push_records(&mut self, replayer: &mut Replayer, records: Vec<(String, Record)>) -> Result<(), LineError> {
        let ts = self.source.timestamp();
        let mut encoded = Vec::with_capacity(records.len());
        for (id, record) in &records {
            replayer.check(id, record)?;
            encoded.push(encode(id, &ts, record)?);
        }
        for (id, record) in records {
            replayer.apply_owned(id, record)?;
        }
        self.lines.extend(encoded);
        Ok(())
    }
}

fn encode(id: &str, ts: &str, record: &Record) -> Result<Line, LineError> {
    let mut text = encode_line(id, ts, record).map_err(|e| LineError::Encode(e.to_string()))?;
    text.pop();
    Ok(Line {
        id: id.to_owned(),
        kind: record.kind().to_owned(),
        text,
    })
}

/// The transcript a [`CONTINUED`] line names, for any other record `None`.
pub fn continued_in(record: &Record) -> Option<&str> {
    match record {
        Record::Unknown { kind, payload } if kind == CONTINUED => payload.get("store_key").and_then(Value::as_str),
        _ => None,
    }
}
