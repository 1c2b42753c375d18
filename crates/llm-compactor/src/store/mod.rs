//! Durable session stores: where a session's transcript lives when it is not (only) a file.
//!
//! A single agent process is well served by the JSONL file of [`crate::session`]. Several
//! processes — proxy instances behind a load balancer, agent workers on many machines —
//! must see the same sessions, and must not compact the same session twice at once. A
//! [`SessionStore`] is that shared place: per session, an append-only log of transcript
//! lines (each exactly the JSONL envelope the file would hold, so an export is
//! byte-identical to the file and replays with [`crate::session::Transcript`]), the
//! current *rewrite* a proxy serves in place of an agent's full history, and a lease that
//! keeps compaction of one session to one holder at a time.
//!
//! The trait is object safe and async (a store does I/O); it lives in the shell, and the
//! pure planning core never sees it. Implementations: [`MemoryStore`] (tests, one
//! process), and behind features an embedded SQLite file and a shared PostgreSQL.

mod jsonl;
mod memory;
mod open;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use jsonl::events_from_jsonl;
pub use memory::MemoryStore;
pub use open::{open_store, redact};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresStore, PostgresStoreBuilder};
#[cfg(feature = "sqlite")]
pub use sqlite::{SCHEMA_VERSION, SqliteStore};

/// Why a store operation failed. Never carries a credential (connection strings are
/// redacted before they reach an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The backing database or file could not be reached (down, refused, timed out).
    /// Transient: the same call may succeed later.
    #[error("the session store is unavailable: {0}")]
    Unavailable(String),
    /// The session named does not exist.
    #[error("no session {0:?} in the store")]
    NoSuchSession(String),
    /// A line given to append is not a valid transcript envelope, or breaks replay (an
    /// unknown id, a duplicate message id).
    #[error("rejected event for session {session:?}: {reason}")]
    Rejected {
        /// The session appended to.
        session: String,
        /// What is wrong with the event.
        reason: String,
    },
    /// The schema is newer than this build, a migration failed, or stored data is corrupt.
    #[error("session store error: {0}")]
    Backend(String),
}

/// One stored transcript line of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredEvent {
    /// Position in the session's log, from 1, gap-free, unique per session.
    pub seq: u64,
    /// The envelope id (unique per session: appending an id twice stores it once).
    pub id: String,
    /// The envelope type (`session-meta`, `message`, `elision`, `compaction`, ...).
    pub kind: String,
    /// The whole envelope, exactly as the JSONL transcript holds it, without the newline.
    pub line: String,
}

/// A line to append: its envelope id, type and exact text (no newline).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEvent {
    /// The envelope id; an id already in the session makes the append of it a no-op.
    pub id: String,
    /// The envelope type.
    pub kind: String,
    /// The whole envelope text, without the newline.
    pub line: String,
}

/// What a proxy serves instead of an agent's full history: when the first
/// `original_len` messages of a request digest to `original_digest`, they are replaced by
/// `replacement` (the compacted messages, in native JSON), and the rest is appended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewrite {
    /// How many leading messages of a request this rewrite replaces.
    pub original_len: usize,
    /// The conversation digest of those messages ([`crate::message::conversation_digest`]).
    pub original_digest: String,
    /// The replacement messages, as a JSON array of native messages.
    pub replacement: String,
    /// A number that grows with every new rewrite of the session (for ordering and for
    /// compare-and-set).
    pub generation: u64,
}

/// A line of `compactor proxy sessions`: one session and its size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session key.
    pub session: String,
    /// How many events its log holds.
    pub events: u64,
    /// The timestamp (`ts`) of its last event, as written.
    pub last_ts: Option<String>,
}

impl SessionInfo {
    /// The session `session`, with `events` events, the last written at `last_ts`.
    pub fn new(session: impl Into<String>, events: u64, last_ts: Option<String>) -> SessionInfo {
        SessionInfo {
            session: session.into(),
            events,
            last_ts,
        }
    }
}

/// A durable, shareable home for session transcripts.
///
/// Every method is safe to call concurrently from many tasks and (for shared backends)
/// many processes. Appends are idempotent by envelope id, so a retried append after a
/// lost reply never duplicates an event.
#[async_trait]
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Appends `events` to `session` in order, creating the session when it does not exist.
    /// Events whose id the session already holds are skipped. Returns the session's
    /// last sequence number after the append.
    async fn append(&self, session: &str, events: &[NewEvent]) -> Result<u64, StoreError>;

    /// The events of `session` with `seq > after`, in order (all of them with `after == 0`).
    /// An unknown session has no events.
    async fn events(&self, session: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError>;

    /// Every session, ordered by key.
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError>;

    /// The session's current rewrite, if any.
    async fn rewrite(&self, session: &str) -> Result<Option<Rewrite>, StoreError>;

    /// Replaces the session's rewrite when its current generation is `expected_generation`
    /// (0 = none yet); returns false, changing nothing, when another writer got there first.
    async fn set_rewrite(&self, session: &str, expected_generation: u64, rewrite: &Rewrite)
    -> Result<bool, StoreError>;

    /// Takes the session's compaction lease for `ttl` when it is free, expired, or already
    /// held by `holder` (renewal). Returns whether `holder` holds it now.
    async fn try_lease(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError>;

    /// Gives the lease back if `holder` holds it (a no-op otherwise).
    async fn release_lease(&self, session: &str, holder: &str) -> Result<(), StoreError>;
}

/// The JSONL transcript of a session: every stored line followed by a newline, in order.
/// It is byte-identical to the file a [`crate::session::Session`] would have written.
pub async fn export_jsonl(store: &dyn SessionStore, session: &str) -> Result<String, StoreError> {
    let events = store.events(session, 0).await?;
    if events.is_empty() {
        return Err(StoreError::NoSuchSession(session.to_owned()));
    }
    let mut out = String::with_capacity(events.iter().map(|e| e.line.len() + 1).sum());
    for event in events {
        out.push_str(&event.line);
        out.push('\n');
    }
    Ok(out)
}
