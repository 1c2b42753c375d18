//! Events a pass reports to an observer: one when it starts, one when it is done.
//!
//! "The model seems to have forgotten everything" must be answerable after the fact, so
//! the done event says what happened (tokens, dropped, fallback, elisions).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::plan::CostReceipt;

/// Something a compaction pass did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CompactionEvent {
    /// A pass started.
    CompactionStarted {
        /// Tokens before the pass, with the pass's counter.
        tokens_before: usize,
        /// Messages in the input.
        messages: usize,
        /// The pass's sequence number on this compactor (1 for the first).
        round: u64,
    },
    /// A summary came back truncated even after the doubled-budget retry; it is used
    /// with a `[summary truncated]` marker at its end.
    SummaryTruncated {
        /// The index of its attempt in the result's `attempts`.
        attempt: usize,
        /// The output budget it was truncated at.
        max_output_tokens: u32,
    },
    /// A pass ended.
    CompactionDone {
        /// Tokens before the pass.
        tokens_before: usize,
        /// Tokens after the pass.
        tokens_after: usize,
        /// Messages replaced or dropped.
        dropped: usize,
        /// True when it ended in the hard trim.
        fallback: bool,
        /// True when even the result does not fit.
        exhausted: bool,
        /// How many tool results were stubbed.
        elisions: usize,
        /// The pass's sequence number on this compactor.
        round: u64,
        /// What the pass did to the prompt cache and its expected net cost.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receipt: Option<Box<CostReceipt>>,
    },
}

/// A callback that receives every event (it must be quick; it runs inline).
pub type Observer = Arc<dyn Fn(&CompactionEvent) + Send + Sync>;
