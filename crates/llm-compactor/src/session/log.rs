//! [`Session`]: the append-only writer of one transcript.
//!
//! Every append is one `write` of its whole lines (one line, or a round's messages from
//! [`Session::append_messages`]) through an `O_APPEND` descriptor, so it reaches the OS
//! before `append_*` returns; whether it also reaches the disk is the [`Durability`]
//! policy (by default compaction and elision lines are fsynced, because losing one of
//! those would make replay rebuild a conversation that was never live, while losing the
//! last message only loses the last message). A failed write is rolled back by
//! truncating to the last good length, so a live writer never leaves a partial line in
//! the middle of the file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::SessionError;
use super::load::{TornTail, Transcript};
use super::lock::{SESSION_FILE_MODE, create_locked, open_locked, sync_parent};
use super::repair::{read_all, rewrite_prefix};
use crate::compactor::CompactionResult;
use crate::message::Message;
use crate::transcript::clock::{Clock, IdSource};
use crate::transcript::envelope;
use crate::transcript::line_source::{BatchIds, LineSource};
use crate::transcript::pass::{RecordedPass, plan_pass};
use crate::transcript::record::{CompactionRecord, ElisionItem, ElisionRecord, Record, SessionMeta};
use crate::transcript::replay::{ReplayError, Replayer};

/// A batch's line buffer grown past this (a huge message) is not kept for the next batch.
const KEEP_LINE_BYTES: usize = 1 << 20;

/// When a transcript line is fsynced (every line is always written to the OS at once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Every line.
    Always,
    /// Compaction and elision lines (and the opening line): the default.
    #[default]
    OnCompaction,
    /// Never (the OS decides; a power cut may lose recent lines).
    Never,
}

/// How a session writes: fsync policy, clock, id source, and the opening line's extras.
#[derive(Clone, Default)]
pub struct SessionOptions {
    durability: Durability,
    source: LineSource,
    meta: Map<String, Value>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("durability", &self.durability)
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl SessionOptions {
    /// The defaults: fsync on compaction, the system clock, random UUID v4 ids.
    pub fn new() -> Self {
        SessionOptions::default()
    }

    /// The fsync policy.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The clock that stamps each line.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.source = self.source.with_clock(clock);
        self
    }

    /// The source of new envelope ids.
    pub fn ids(mut self, ids: Arc<dyn IdSource>) -> Self {
        self.source = self.source.with_ids(ids);
        self
    }

    /// Extra fields for the `session-meta` line of a new session.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = meta;
        self
    }
}

/// What opening an existing session found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OpenReport {
    /// The torn final line that was removed, if there was one.
    pub repaired: Option<TornTail>,
}

/// An open, locked transcript: the conversation it replays to, and the writer that
/// appends to both.
pub struct Session {
    path: PathBuf,
    file: File,
    len: u64,
    meta: SessionMeta,
    replayer: Replayer,
    options: SessionOptions,
    poisoned: bool,
    /// The file ends in a complete line without its newline: write one before the next line.
    needs_newline: bool,
    /// The lines of the batch being written, kept between batches so that a round's
    /// append does not grow a fresh buffer (one grown past [`KEEP_LINE_BYTES`] is let go).
    lines: Vec<u8>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("path", &self.path)
            .field("len", &self.len)
            .field("messages", &self.replayer.messages().len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Creates a new transcript (mode 0600) and writes its `session-meta` line.
    ///
    /// # Errors
    /// The file exists ([`SessionError::AlreadyExists`]), or I/O.
    pub fn create(path: impl AsRef<Path>, options: SessionOptions) -> Result<Session, SessionError> {
        let path = path.as_ref().to_owned();
        let file = create_locked(&path, SESSION_FILE_MODE)?;
        let meta = SessionMeta {
            extra: options.meta.clone(),
            ..SessionMeta::default()
        };
        let mut session = Session {
            path,
            file,
            len: 0,
            meta: meta.clone(),
            replayer: Replayer::new(),
            options,
            poisoned: false,
            needs_newline: false,
            lines: Vec::new(),
        };
        let id = session.next_id();
        session.append(id, Record::Meta(meta), true)?;
        if session.options.durability != Durability::Never {
            sync_parent(&session.path)?;
        }
        Ok(session)
    }

    /// Opens an existing transcript for appending: locks it, replays it, and repairs a
    /// torn final line (reported in the [`OpenReport`] and by a `tracing` warning).
    ///
    /// # Errors
    /// A held lock ([`SessionError::Locked`]), I/O, or a malformed line other than a torn
    /// final one (then the file is left untouched).
    pub fn open(path: impl AsRef<Path>, options: SessionOptions) -> Result<(Session, OpenReport), SessionError> {
        let path = path.as_ref().to_owned();
        let mut file = open_locked(&path)?;
        let bytes = read_all(&path, &mut file)?;
        let transcript = Transcript::parse(&path, &bytes)?;
        let (meta, replayer, good_len, torn, needs_newline) = transcript.into_parts();
        if let Some(torn) = &torn {
            file = rewrite_prefix(&path, &file, &bytes[..good_len as usize], torn)?;
        }
        let session = Session {
            path,
            file,
            len: good_len,
            meta,
            replayer,
            options,
            poisoned: false,
            needs_newline,
            lines: Vec::new(),
        };
        Ok((session, OpenReport { repaired: torn }))
    }

    /// The transcript file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file was linked into place under another name (an atomic import).
    pub(super) fn set_path(&mut self, path: PathBuf) {
        self.path = path;
    }

    /// The opening line's payload.
    pub fn meta(&self) -> &SessionMeta {
        &self.meta
    }

    /// The conversation the transcript replays to, every message with its id.
    pub fn messages(&self) -> &[Message] {
        self.replayer.messages()
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True before the opening line is written (never, for a session that was created or
    /// opened successfully).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A fresh id from the session's id source (for a message the caller builds itself).
    /// Ids the transcript already uses are skipped, so a deterministic source that starts
    /// over after a reopen does not collide.
    pub fn next_id(&self) -> String {
        self.fresh_id(&BatchIds::default())
    }

    /// [`Session::next_id`], also skipping the ids of a batch about to be written.
    fn fresh_id(&self, batch: &BatchIds) -> String {
        self.options.source.fresh_id(&self.replayer, batch)
    }

    /// Where the session's ids and timestamps come from.
    pub(crate) fn source(&self) -> &LineSource {
        &self.options.source
    }

    /// Appends a message. A message without an id gets a fresh one; a message with one
    /// keeps it (it must not be in use). Returns the message as stored.
    ///
    /// # Errors
    /// A reused id ([`SessionError::Rejected`]), or I/O.
    pub fn append_message(&mut self, message: Message) -> Result<&Message, SessionError> {
        let stored = self.append_messages(std::iter::once(message))?;
        Ok(&stored[0])
    }

    /// Appends messages, a line each, with one `write` (a round's new messages, say: an
    /// assistant turn and its tool results). Each message gets an id as in
    /// [`Session::append_message`]. Returns the messages as stored. When one is refused
    /// (a reused id, in the transcript or in the batch), nothing is written.
    ///
    /// # Errors
    /// A reused id ([`SessionError::Rejected`]), or I/O.
    pub fn append_messages(&mut self, messages: impl IntoIterator<Item = Message>) -> Result<&[Message], SessionError> {
        let first = self.replayer.messages().len();
        let mut batch: Vec<(String, Record)> = Vec::new();
        let mut ids = BatchIds::default();
        for mut message in messages {
            let id = match message.id.take() {
                Some(id) => id,
                None => self.fresh_id(&ids),
            };
            let record_id = id.clone();
            message.id = Some(id);
            let record = Record::Message(message);
            let reused = !ids.insert(record_id.clone());
            let checked = if reused {
                Err(ReplayError::DuplicateId { id: record_id.clone() })
            } else {
                self.replayer.check(&record_id, &record)
            };
            checked.map_err(|source| SessionError::Rejected {
                path: self.path.clone(),
                source,
            })?;
            batch.push((record_id, record));
        }
        if !batch.is_empty() {
            let sync = self.options.durability == Durability::Always;
            self.write_checked(batch, sync)?;
        }
        Ok(&self.replayer.messages()[first..])
    }

    /// Appends an elision line: each named message's content becomes its stub. Returns the
    /// line's id.
    ///
    /// # Errors
    /// An id that is not a message of the conversation ([`SessionError::Rejected`]), or I/O.
    pub fn append_elision(&mut self, items: Vec<ElisionItem>) -> Result<String, SessionError> {
        let id = self.next_id();
        self.append_elision_with_id(id.clone(), ElisionRecord::new(items))?;
        Ok(id)
    }

    /// Writes a pass's lines, checked by [`crate::transcript::pass::plan_pass`], with one `write`.
    pub(crate) fn write_pass(&mut self, records: Vec<(String, Record)>) -> Result<(), SessionError> {
        if records.is_empty() {
            return Ok(());
        }
        let sync = self.options.durability != Durability::Never;
        self.write_checked(records, sync)
    }

    /// Records a pass that `compact` ran over exactly [`Session::messages`]: a repair line
    /// for `result.repairs`, an elision line for `result.elisions` (every stub the pass
    /// made, including those the same pass then summarized or trimmed away, and the
    /// recent results it cut to fit), then a compaction line for `result.cut_index >= 0`,
    /// with one `write`. Afterwards [`Session::messages`] equals `result.messages` (plus
    /// ids: the summary message gets the compaction line's id).
    ///
    /// # Errors
    /// [`SessionError::ResultMismatch`] when an index is out of range or replay would not
    /// rebuild `result.messages` (nothing is written then), or I/O.
    pub fn record_result(&mut self, result: &CompactionResult) -> Result<RecordedPass, SessionError> {
        let planned = plan_pass(self.replayer(), result, |replay, taken| {
            self.source().fresh_id(replay, taken)
        })
        .map_err(|problem| SessionError::ResultMismatch {
            path: self.path().to_owned(),
            problem,
        })?;
        self.write_pass(planned.records)?;
        Ok(planned.recorded)
    }

    fn append_elision_with_id(&mut self, id: String, elision: ElisionRecord) -> Result<(), SessionError> {
        let sync = self.options.durability != Durability::Never;
        self.append(id, Record::Elision(elision), sync)
    }

    /// Appends a compaction line with a fresh id, which becomes the summary message's id.
    /// Returns that id.
    ///
    /// # Errors
    /// `replaces_through_id` is not a message of the conversation, or I/O.
    pub fn append_compaction(&mut self, compaction: CompactionRecord) -> Result<String, SessionError> {
        let id = self.next_id();
        self.append_compaction_with_id(id.clone(), compaction)?;
        Ok(id)
    }

    fn append_compaction_with_id(&mut self, id: String, compaction: CompactionRecord) -> Result<(), SessionError> {
        let sync = self.options.durability != Durability::Never;
        self.append(id, Record::Compaction(compaction), sync)
    }

    /// Appends a line of a type replay skips (annotations of the caller's own).
    ///
    /// # Errors
    /// A reserved type name, a reused id, or I/O.
    pub fn append_custom(&mut self, kind: &str, payload: Value) -> Result<String, SessionError> {
        let record = Record::Unknown {
            kind: kind.to_owned(),
            payload,
        };
        if matches!(kind, "session-meta" | "message" | "compaction" | "elision" | "repair") {
            return Err(SessionError::Encode {
                path: self.path.clone(),
                problem: format!("{kind:?} is a reserved line type"),
            });
        }
        let id = self.next_id();
        let sync = self.options.durability == Durability::Always;
        self.append(id.clone(), record, sync)?;
        Ok(id)
    }

    /// Fsyncs everything written so far.
    ///
    /// # Errors
    /// I/O.
    pub fn sync(&self) -> Result<(), SessionError> {
        self.file.sync_data().map_err(|e| SessionError::io(&self.path, e))
    }

    pub(crate) fn replayer(&self) -> &Replayer {
        &self.replayer
    }

    /// The conversation with what is known of each message: counted by the counter
    /// [`Session::count_with`] gave it (a [`super::ContextManager`]'s), so that the
    /// manager reads the transcript's own messages instead of keeping a copy.
    pub(crate) fn conversation(&self) -> &crate::Conversation {
        self.replayer.conversation()
    }

    /// Counts every message with `counter` now, and each appended one as it arrives.
    pub(crate) fn count_with(&mut self, counter: Arc<dyn crate::count::TokenCounter>) {
        self.replayer.count_with(counter);
    }

    /// Stops counting (a session handed back by its manager).
    pub(crate) fn stop_counting(&mut self) {
        self.replayer.stop_counting();
    }

    fn append(&mut self, id: String, record: Record, sync: bool) -> Result<(), SessionError> {
        if self.poisoned {
            return Err(SessionError::Poisoned {
                path: self.path.clone(),
            });
        }
        self.replayer
            .check(&id, &record)
            .map_err(|source| SessionError::Rejected {
                path: self.path.clone(),
                source,
            })?;
        self.write_checked(vec![(id, record)], sync)
    }

    /// Writes checked records, one line each, with one `write` (rolled back by truncating
    /// when it fails), then applies them to the replay.
    fn write_checked(&mut self, records: Vec<(String, Record)>, sync: bool) -> Result<(), SessionError> {
        if self.poisoned {
            return Err(SessionError::Poisoned {
                path: self.path.clone(),
            });
        }
        let ts = self.options.source.timestamp();
        let mut lines = std::mem::take(&mut self.lines);
        lines.clear();
        if self.needs_newline {
            // The kept final line was written without one (JSON Lines allows it).
            lines.push(b'\n');
        }
        for (id, record) in &records {
            envelope::write_line(&mut lines, id, &ts, record).map_err(|e| SessionError::Encode {
                path: self.path.clone(),
                problem: e.to_string(),
            })?;
        }
        let written = self.file.write_all(&lines);
        let written_len = lines.len() as u64;
        self.lines = if lines.capacity() > KEEP_LINE_BYTES {
            Vec::new()
        } else {
            lines
        };
        if let Err(e) = written {
            if self.file.set_len(self.len).is_err() {
                self.poisoned = true;
            }
            return Err(SessionError::io(&self.path, e));
        }
        self.len += written_len;
        self.needs_newline = false;
        if sync {
            self.sync()?;
        }
        for (id, record) in records {
            self.replayer
                .apply_owned(id, record)
                .map_err(|source| SessionError::Rejected {
                    path: self.path.clone(),
                    source,
                })?;
        }
        Ok(())
    }
}
