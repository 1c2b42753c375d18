//! Reading a transcript: strict about everything except a torn final line.
//!
//! A process killed mid-append leaves at most one partial line, at the end. That is the
//! one defect the loader tolerates (and [`super::repair`] cuts off the file): it is
//! reported as a [`TornTail`], never silently used. The rules, precisely:
//!
//! - Lines end in `\n` (a `\r` before it is JSON whitespace, so CRLF files read the
//!   same). Blank lines are ignored anywhere.
//! - The final (non-blank) line is torn only if it is not valid JSON (or not UTF-8),
//!   whether or not it ends in a newline. A complete final line without a newline is
//!   kept, as JSON Lines allows; the next append writes the newline first.
//! - Anything else that is wrong — bad JSON before the final line, a wrong version, a
//!   missing `session-meta`, an id that does not replay, a final line that is complete
//!   JSON but not a valid envelope — is an error naming the file and the line, because
//!   guessing would make replay give back something other than the conversation that
//!   was live (and cutting a complete line would lose data).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::SessionError;
use crate::message::Message;
use crate::transcript::envelope;
use crate::transcript::record::{Entry, Record, SessionMeta};
use crate::transcript::replay::Replayer;

/// A final line that is not valid JSON: what a crash mid-append leaves. Everything from
/// its start to the end of the file is cut off by a repair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TornTail {
    /// Its 1-based line number.
    pub line: usize,
    /// Where it starts: the length of the good prefix.
    pub offset: u64,
    /// How many bytes it has (up to the end of the file).
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
    needs_newline: bool,
}

/// One physical line of the file: `start..end` without its `\n`.
struct Line {
    start: usize,
    end: usize,
}

impl Line {
    fn text<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.start..self.end]
    }

    fn is_blank(&self, bytes: &[u8]) -> bool {
        self.text(bytes).iter().all(u8::is_ascii_whitespace)
    }
}

/// Splits at `\n`; a final line without one is a line too. (A `\r` before the `\n` is
/// JSON whitespace, so CRLF files need nothing special.)
fn split_lines(bytes: &[u8]) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        lines.push(Line { start, end });
        start = end + 1;
    }
    lines
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
        let mut torn_tail = None;
        let lines = split_lines(bytes);
        let last = lines.iter().rposition(|l| !l.is_blank(bytes));
        for (index, line) in lines.iter().enumerate() {
            if line.is_blank(bytes) {
                continue;
            }
            let number = index + 1;
            let raw = line.text(bytes);
            let parsed = std::str::from_utf8(raw)
                .map_err(|e| format!("not valid UTF-8: {e}"))
                .and_then(|text| {
                    serde_json::from_str::<serde_json::Value>(text).map_err(|e| format!("not valid JSON: {e}"))
                });
            let value = match parsed {
                Ok(value) => value,
                // The final line is torn when it is not even JSON: a partial write.
                Err(_) if Some(index) == last => {
                    torn_tail = Some(TornTail {
                        line: number,
                        offset: line.start as u64,
                        bytes: (bytes.len() - line.start) as u64,
                    });
                    break;
                }
                Err(problem) => {
                    return Err(malformed(
                        number,
                        format!("{problem} (only a torn final line is tolerated)"),
                    ));
                }
            };
            let decoded = envelope::decode_value(value).map_err(|problem| malformed(number, problem))?;
            if meta.is_none() {
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
        let needs_newline = good_len > 0 && bytes[good_len as usize - 1] != b'\n';
        Ok(Transcript {
            path: path.to_owned(),
            meta,
            entries,
            replayer,
            good_len,
            torn_tail,
            needs_newline,
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

    /// True when the kept part of the file does not end in a newline (a complete final
    /// line written without one, as JSON Lines allows): the next append writes one first.
    pub fn needs_newline(&self) -> bool {
        self.needs_newline
    }

    pub(crate) fn into_parts(self) -> (SessionMeta, Replayer, u64, Option<TornTail>, bool) {
        (
            self.meta,
            self.replayer,
            self.good_len,
            self.torn_tail,
            self.needs_newline,
        )
    }
}
