//! The session transcript: an append-only JSONL record that replays byte-identically.
//!
//! A long agent run outlives its process: it is resumed, audited, and asked "why does the
//! model seem to have forgotten everything?" months later. The transcript answers all
//! three because it records not only the messages but every pass that changed them — the
//! compaction that replaced the middle by a summary, the elision epoch that stubbed old
//! tool results — by id, so that replay rebuilds exactly the conversation that was live:
//! same messages, same ids, same bytes.
//!
//! ```text
//! {"id":"…","payload":{"created_by":"llm-compactor 0.1.0"},"ts":"2025-01-01T00:00:00.000000Z","type":"session-meta","v":1}
//! {"id":"…","payload":{"id":"…","role":"user","content":"Fix the build."},"ts":"…","type":"message","v":1}
//! {"id":"…","payload":{"items":[{"id":"…","stub":"[elided by the harness: …]"}]},"ts":"…","type":"elision","v":1}
//! {"id":"…","payload":{"fallback":false,"replaces_through_id":"…","summary":"…",…},"ts":"…","type":"compaction","v":1}
//! ```
//!
//! The pure half (records, envelope, ids and clock, replay, load, the expand lookup,
//! [`Lines`]) lives in [`crate::transcript`] and is re-exported here; this module keeps
//! the file, the reads of a file or a store ([`Transcript::read`],
//! [`Transcript::from_store`]) and the loop.
//!
//! Layout: [`Session`] writes (one locked writer, mode 0600, a configurable fsync policy),
//! [`Transcript`] reads (strict, except that a torn final line is reported), [`repair`]
//! removes a torn final line atomically, [`Replayer`] is the pure replay both share,
//! [`Session::record_result`] turns a [`crate::CompactionResult`] into lines ([`Lines`] does the
//! same for lines a store keeps: one writer, see [`LineSource`]), and
//! [`ContextManager`] is the agent-loop glue that ties counter, compactor and session
//! together.

mod context;
mod error;
mod expand;
mod import;
mod load;
mod lock;
mod log;
mod manager;
mod prepared;
mod repair;
mod stale_line;
mod store_mirror;

pub use crate::compactor::CompactionReason;
pub use crate::transcript::{
    CONTINUED, Clock, CompactionRecord, EXPAND_TOOL_NAME, ElisionItem, ElisionRecord, Entry, Expansion, FixedClock,
    IdSource, Line, LineError, LineSource, Lines, MIN_EXPAND_ROOM, RandomIds, Record, RecordedPass, RepairRecord,
    ReplayError, Replayer, SOURCE_FORMAT_KEY, SequentialIds, SessionMeta, SyntheticAnswerItem, SystemClock,
    TYPE_COMPACTION, TYPE_ELISION, TYPE_MESSAGE, TYPE_META, TYPE_REPAIR, VERSION, answer_expand, answer_expand_within,
    continued_in, decode_line, encode_line, expand_in, expand_tool_definition, format_timestamp, requested_handles,
    same_but_id, summary_message, synthetic_answer_id,
};
pub use context::{ContextEvent, ContextObserver, ManagerError, PassReport, RequestShape};
pub use error::SessionError;
pub use load::{LoadError, TornTail, Transcript};
pub use lock::SESSION_FILE_MODE;
pub use log::{Durability, OpenReport, Session, SessionOptions};
pub use manager::{BackendRoom, ContextManager, DEFAULT_MAX_FORCED_COMPACTIONS, Prepared, PreparedRef, UsageRecorder};
pub use prepared::{DEFAULT_PREPARE_RATIO, PrepareOptions, TYPE_PREPARED};
pub use repair::repair;
pub use stale_line::{TYPE_STALE_THINKING, stale_thinking_line};
pub use store_mirror::{MirrorError, StoreMirror, restore_session};
