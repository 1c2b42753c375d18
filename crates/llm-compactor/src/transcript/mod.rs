//! The transcript's pure room: what a transcript line is and how lines become a
//! conversation, with no file in sight.
//!
//! [`Record`] and its payloads are the line format, [`encode_line`] / [`decode_line`] the
//! envelope, [`Clock`] and [`IdSource`] the timestamps and ids, [`Replayer`] the replay
//! that rebuilds the live conversation, [`Transcript`] the lines read back (from bytes
//! or a store's lines: strict except for a torn final line), [`RecordedPass`] the pure
//! half of recording a pass, [`expand_in`] and [`answer_expand`] the expand lookup behind
//! a handle, and [`Lines`] the in-memory writer a store keeps (one
//! writer with the file's, through [`LineSource`]). The JSONL file (its log, lock, the
//! reads of a file or a store, repair, import, store mirror) and the agent loop stay in
//! [`crate::session`], which re-exports all of this under its old names.

pub(crate) mod clock;
pub(crate) mod envelope;
pub(crate) mod expand;
pub(crate) mod line_source;
pub(crate) mod load;
pub(crate) mod message_line;
pub(crate) mod pass;
pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod writer;

pub use clock::{Clock, FixedClock, IdSource, RandomIds, SequentialIds, SystemClock, format_timestamp};
pub use envelope::{decode_line, encode_line};
pub use expand::{
    EXPAND_TOOL_NAME, Expansion, MIN_EXPAND_ROOM, answer_expand, answer_expand_within, expand_in,
    expand_tool_definition, requested_handles,
};
pub use line_source::LineSource;
pub use load::{LoadError, TornTail, Transcript};
pub use pass::{RecordedPass, same_but_id};
pub use record::{
    CompactionRecord, ElisionItem, ElisionRecord, Entry, Record, RepairRecord, SOURCE_FORMAT_KEY, SessionMeta,
    SyntheticAnswerItem, TYPE_COMPACTION, TYPE_ELISION, TYPE_MESSAGE, TYPE_META, TYPE_REPAIR, VERSION,
    synthetic_answer_id,
};
pub use replay::{ReplayError, Replayer, summary_message};
pub use writer::{CONTINUED, Line, LineError, Lines, continued_in};
