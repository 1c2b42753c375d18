//! Where transcript timestamps and envelope ids come from.
//!
//! Both are injected rather than read from the world inside the writer, so that a test can
//! pin them and compare a transcript byte for byte: a [`Clock`] gives the time of each
//! line, an [`IdSource`] the id of each new envelope.

use std::sync::atomic::{AtomicU64, Ordering};

use time::OffsetDateTime;
use time::format_description::FormatItem;
use time::macros::format_description;

/// The time of each transcript line.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> OffsetDateTime;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that always answers the same instant (tests, reproducible transcripts).
#[derive(Clone, Copy, Debug)]
pub struct FixedClock(pub OffsetDateTime);

impl FixedClock {
    /// 2025-01-01T00:00:00Z, a convenient fixed instant.
    pub fn epoch() -> Self {
        FixedClock(time::macros::datetime!(2025-01-01 00:00:00 UTC))
    }
}

impl Clock for FixedClock {
    fn now(&self) -> OffsetDateTime {
        self.0
    }
}

const TS_FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z");

/// An instant as the transcript writes it: RFC 3339, UTC, microseconds
/// (`2025-01-01T00:00:00.000000Z`).
///
/// ```
/// use llm_compactor::session::{format_timestamp, FixedClock};
/// assert_eq!(format_timestamp(FixedClock::epoch().0), "2025-01-01T00:00:00.000000Z");
/// ```
pub fn format_timestamp(instant: OffsetDateTime) -> String {
    instant
        .to_offset(time::UtcOffset::UTC)
        .format(TS_FORMAT)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00.000000Z"))
}

/// The id of each new envelope (and so of each new message).
pub trait IdSource: Send + Sync {
    /// A fresh id, unique within the session.
    fn next_id(&self) -> String;
}

/// Random UUID v4 ids: the default.
#[derive(Clone, Copy, Debug, Default)]
pub struct RandomIds;

impl IdSource for RandomIds {
    fn next_id(&self) -> String {
        // The thread's CSPRNG, not a `getrandom` system call per id (`Uuid::new_v4`).
        uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string()
    }
}

/// Deterministic ids shaped like UUID v4 (`00000000-0000-4000-8000-000000000001`, ...),
/// counting up from 1: for tests and reproducible transcripts.
#[derive(Debug, Default)]
pub struct SequentialIds {
    next: AtomicU64,
}

impl SequentialIds {
    /// A source whose first id ends in `...001`.
    pub fn new() -> Self {
        SequentialIds::default()
    }
}

impl IdSource for SequentialIds {
    fn next_id(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!("00000000-0000-4000-8000-{n:012x}")
    }
}
