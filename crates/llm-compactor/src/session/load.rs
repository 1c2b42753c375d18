//! Reading a transcript: strict about everything except a torn final line.
//!
//! A process killed mid-append leaves at most one partial line, at the end, with no
//! newline. That is the one defect the loader tolerates (and [`super::repair`] removes):
//! it is reported as a [`TornTail`], never silently used. Anything else that is wrong —
//! bad JSON in the middle, a wrong version, a missing `session-meta`, an id that does not
//! replay — is an error naming the file and the line, because guessing would make replay
//! give back something other than the conversation that was live.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::envelope;
use super::error::SessionError;
use super::record::{Entry, Record, SessionMeta};
use super::replay::Replayer;
use crate::message::Message;

/// A partial final line (no terminating newline): what a crash mid-append leaves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// Its 1-based line number.
    pub line: usize,
    /// Where it starts: the length of the good prefix.
    pub offset: u64,
    /// How many bytes it has.
    pub bytes: u64,
}

/// A transcript read from disk and replayed.
#[derive(Clone, Debug)]
pub struct Transcript {
    path: PathBuf,
    meta: SessionMeta,
    entries: Vec<Entry>,
    replayer: Replayer,
    good_len: u64,
    torn_tail: Option<TornTail>,
}

impl Transcript {
    /// Reads and replays a transcript without changing it. A torn final line is reported
    /// in [`Transcript::torn_tail`] (and ignored); repair it with [`super::repair`] or by
    /// opening the session for appending.
    ///
    /// # Errors
    /// I/O, or a malformed line ([`SessionError::Malformed`] names it).
    pub fn read(path: &Path) -> Result<Transcript, SessionError> {
        let bytes = std::fs::read(path).map_err(|e| SessionError::io(path, e))?;
        Transcript::parse(path, &bytes)
    }

    /// Replays transcript bytes; `path` is only used to name errors.
    ///
    /// # Errors
    /// A malformed line.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Transcript, SessionError> {
        let malformed = |line: usize, problem: String| SessionError::Malformed {
            path: path.to_owned(),
            line,
            problem,
        };
        let mut entries = Vec::new();
        let mut replayer = Replayer::new();
        let mut meta = None;
        let mut offset = 0usize;
        let mut torn_tail = None;
        let mut number = 0usize;
        while offset < bytes.len() {
            number += 1;
            let Some(end) = bytes[offset..].iter().position(|&b| b == b'\n').map(|i| offset + i) else {
                torn_tail = Some(TornTail {
                    line: number,
                    offset: offset as u64,
                    bytes: (bytes.len() - offset) as u64,
                });
                break;
            };
            let raw = &bytes[offset..end];
            offset = end + 1;
            let text = std::str::from_utf8(raw).map_err(|e| malformed(number, format!("not valid UTF-8: {e}")))?;
            let decoded = envelope::decode(text).map_err(|problem| malformed(number, problem))?;
            if number == 1 {
                match &decoded.record {
                    Record::Meta(m) => meta = Some(m.clone()),
                    other => {
                        return Err(malformed(
                            number,
                            format!("the first line must be session-meta, not {}", other.kind()),
                        ));
                    }
                }
            }
            replayer
                .apply(&decoded.id, &decoded.record)
                .map_err(|e| malformed(number, e.to_string()))?;
            entries.push(Entry {
                line: number,
                id: decoded.id,
                ts: decoded.ts,
                record: decoded.record,
            });
        }
        let Some(meta) = meta else {
            let problem = if torn_tail.is_some() {
                "the transcript has no complete session-meta line (line 1 is torn)"
            } else {
                "the transcript is empty: it has no session-meta line"
            };
            return Err(malformed(1, problem.to_owned()));
        };
        let good_len = torn_tail.as_ref().map_or(bytes.len() as u64, |t| t.offset);
        Ok(Transcript {
            path: path.to_owned(),
            meta,
            entries,
            replayer,
            good_len,
            torn_tail,
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The opening line's payload.
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// Every complete line, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The replayed conversation.
    pub fn messages(&self) -> &[Message] {
        self.replayer.messages()
    }

    /// The replayed conversation, consumed.
    pub fn into_messages(self) -> Vec<Message> {
        self.replayer.into_messages()
    }

    /// The partial final line, if the file ends in one.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// Bytes of complete lines.
    pub fn good_len(&self) -> u64 {
        self.good_len
    }

    pub(crate) fn into_parts(self) -> (SessionMeta, Replayer, u64, Option<TornTail>) {
        (self.meta, self.replayer, self.good_len, self.torn_tail)
    }
}
