//! [`LineSource`]: where a transcript writer takes the ids and timestamps of new lines.
//!
//! Both writers of transcript lines (the file's [`crate::session::Session`] and the in-memory
//! [`super::Lines`]) and the pass plan that both record through (`pass.rs`) take their
//! fresh ids here; it lives below all three so that none of them reaches into another
//! for it.

use std::collections::HashSet;
use std::sync::Arc;

use super::clock::{Clock, IdSource, RandomIds, SystemClock, format_timestamp};
use super::replay::Replayer;

/// The ids of a batch of lines being written (each must differ from the others too).
pub(crate) type BatchIds = HashSet<String, foldhash::quality::RandomState>;

/// Where a transcript writer takes the ids and timestamps of new lines from.
#[derive(Clone)]
pub struct LineSource {
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdSource>,
}

impl Default for LineSource {
    fn default() -> Self {
        LineSource {
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
        }
    }
}

impl std::fmt::Debug for LineSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineSource").finish_non_exhaustive()
    }
}

impl LineSource {
    /// Ids from `ids`, timestamps from `clock`.
    pub fn new(clock: Arc<dyn Clock>, ids: Arc<dyn IdSource>) -> Self {
        LineSource { clock, ids }
    }

    /// The same ids, timestamps from `clock`.
    pub(crate) fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same clock, ids from `ids`.
    pub(crate) fn with_ids(mut self, ids: Arc<dyn IdSource>) -> Self {
        self.ids = ids;
        self
    }

    /// A fresh id: neither used by a line `replayer` applied nor in `batch`. A
    /// deterministic source that starts over after a reopen skips the ids it gave before.
    pub fn fresh_id(&self, replayer: &Replayer, batch: &BatchIds) -> String {
        let taken = |id: &str| replayer.is_used(id) || batch.contains(id);
        let mut id = self.ids.next_id();
        for _ in 0..10_000 {
            if !taken(&id) {
                break;
            }
            id = self.ids.next_id();
        }
        id
    }

    /// The timestamp of lines written now.
    pub fn timestamp(&self) -> String {
        format_timestamp(self.clock.now())
    }
}
