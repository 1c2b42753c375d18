//! Reading a transcript's lines back into a [`Transcript`]: strict about everything
//! except a torn final line. Pure: bytes or lines in, a replayed transcript out; the
//! file ([`crate::session::Transcript::read`]) and the store
//! ([`crate::session::Transcript::from_store`]) are read by the shell.
//!
//! A process killed mid-append leaves at most one partial line, at the end. That is the
//! one defect the loader tolerates (and [`crate::session::repair`] cuts off the file): it
//! is reported as a [`TornTail`], never silently used. The rules, precisely:
//!
//! - Lines end in `\n` (a `\r` before it is JSON whitespace, so CRLF files read the
//!   same). Blank lines are ignored anywhere.
//! - The final (non-blank) line is torn only if it is not valid JSON (or not UTF-8),
//!   whether or not it ends in a newline. A complete final line without a newline is
//!   kept, as JSON Lines allows; the next append writes the newline first.
//! - Anything else that is wrong — bad JSON before the final line, a wrong version, a
//!   missing `session-meta`, an id that does not replay, a final line that is complete
//!   JSON but not a valid envelope — is a [`LoadError`] naming the source and the line,
//!   because guessing would make replay give back something other than the conversation
//!   that was live (and cutting a complete line would lose data).
//! - Lines a store keeps ([`Transcript::from_lines`]) are complete by construction: none
//!   of them is taken for a torn tail.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::envelope;
use super::record::{Entry, Record, SessionMeta};
use super::replay::Replayer;
use crate::message::Message;

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

/// A line of a transcript that does not read or replay (the shell reports it as
/// [`crate::session::SessionError::Malformed`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {problem}", path.display())]
#[non_exhaustive]
pub struct LoadError {
    /// The file (or the store key) the lines came from.
    pub path: PathBuf,
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub problem: String,
}

/// A transcript read and replayed: its opening line, every complete line, the live
/// conversation, and what a torn final line left.
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
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn text<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        &bytes[self.start..self.end]
    }

    fn is_blank(&self, bytes: &[u8]) -> bool {
        self.text(bytes).iter().all(u8::is_ascii_whitespace)
    }
}

/// Splits at `\n`; a final line without one is a line too. (A `\r` before the `\n` is
/// JSON whitespace, so CRLF files need nothing special.)
fn split_lines(bytes: &[u8]) -> Vec<Span> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        lines.push(Span { start, end });
        start = end + 1;
    }
    lines
}

/// A line's JSON, or why it is not JSON.
fn json_of(raw: &[u8]) -> Result<Value, String> {
    std::str::from_utf8(raw)
        .map_err(|e| format!("not valid UTF-8: {e}"))
        .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| format!("not valid JSON: {e}")))
}

/// The replay of a transcript's lines, one at a time: the one rule both sources share.
struct Reader<'p> {
    path: &'p Path,
    meta: Option<SessionMeta>,
    entries: Vec<Entry>,
    replayer: Replayer,
}

impl<'p> Reader<'p> {
    fn new(path: &'p Path) -> Self {
        Reader {
            path,
            meta: None,
            entries: Vec::new(),
            replayer: Replayer::new(),
        }
    }

    fn malformed(&self, line: usize, problem: String) -> LoadError {
        LoadError {
            path: self.path.to_owned(),
            line,
            problem,
        }
    }

    /// Decodes and replays line `number`.
    fn push(&mut self, number: usize, value: Value) -> Result<(), LoadError> {
        let decoded = envelope::decode_value(value).map_err(|problem| self.malformed(number, problem))?;
        if self.meta.is_none() {
            match &decoded.record {
                Record::Meta(m) => self.meta = Some(m.clone()),
                other => {
                    let problem = format!("the first line must be session-meta, not {}", other.kind());
                    return Err(self.malformed(number, problem));
                }
            }
        }
        self.replayer
            .apply(&decoded.id, &decoded.record)
            .map_err(|e| self.malformed(number, e.to_string()))?;
        self.entries.push(Entry {
            line: number,
            id: decoded.id,
            ts: decoded.ts,
            record: decoded.record,
        });
        Ok(())
    }

    fn finish(self, good_len: u64, torn_tail: Option<TornTail>, needs_newline: bool) -> Result<Transcript, LoadError> {
        let Some(meta) = self.meta.clone() else {
            let problem = if torn_tail.is_some() {
                "the transcript has no complete session-meta line (line 1 is torn)"
            } else {
                "the transcript is empty: it has no session-meta line"
            };
            return Err(self.malformed(1, problem.to_owned()));
        };
        Ok(Transcript {
            path: self.path.to_owned(),
            meta,
            entries: self.entries,
            replayer: self.replayer,
            good_len,
            torn_tail,
            needs_newline,
        })
    }
}

impl Transcript {
    /// Replays transcript bytes (a file's); `path` is only used to name errors. A torn
    /// final line is reported in [`Transcript::torn_tail`] (and ignored).
    ///
    /// # Errors
    /// A malformed line.
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Transcript, LoadError> {
        let mut reader = Reader::new(path);
        let mut torn_tail = None;
        let lines = split_lines(bytes);
        let last = lines.iter().rposition(|l| !l.is_blank(bytes));
        for (index, line) in lines.iter().enumerate() {
            if line.is_blank(bytes) {
                continue;
            }
            let number = index + 1;
            let value = match json_of(line.text(bytes)) {
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
                    let problem = format!("{problem} (only a torn final line is tolerated)");
                    return Err(reader.malformed(number, problem));
                }
            };
            reader.push(number, value)?;
        }
        let good_len = torn_tail.as_ref().map_or(bytes.len() as u64, |t| t.offset);
        let needs_newline = good_len > 0 && bytes[good_len as usize - 1] != b'\n';
        reader.finish(good_len, torn_tail, needs_newline)
    }

    /// Replays the complete lines a store keeps (each an envelope without its newline),
    /// in order, as the file they export to would replay; `name` (the store key) names
    /// errors. No line is taken for a torn tail: a store's lines are complete.
    ///
    /// ```
    /// use std::path::Path;
    /// use llm_compactor::Message;
    /// use llm_compactor::transcript::{Lines, Record, Replayer, Transcript};
    /// let (mut lines, mut replayer) = (Lines::default(), Replayer::new());
    /// lines.push_meta(&mut replayer, Default::default()).unwrap();
    /// lines.push(&mut replayer, Record::Message(Message::user("Fix the build."))).unwrap();
    /// let stored: Vec<String> = lines.take().into_iter().map(|line| line.text).collect();
    /// let transcript = Transcript::from_lines(Path::new("s"), stored.iter().map(String::as_str)).unwrap();
    /// assert_eq!(transcript.messages(), replayer.messages());
    /// ```
    ///
    /// # Errors
    /// A malformed line.
    pub fn from_lines<'a>(name: &Path, lines: impl IntoIterator<Item = &'a str>) -> Result<Transcript, LoadError> {
        let mut reader = Reader::new(name);
        let mut good_len = 0u64;
        for (index, line) in lines.into_iter().enumerate() {
            good_len += line.len() as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            let number = index + 1;
            let value = json_of(line.as_bytes()).map_err(|problem| reader.malformed(number, problem))?;
            reader.push(number, value)?;
        }
        reader.finish(good_len, None, false)
    }

    /// The file (or store key) it was read from.
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
