//! [`LedgerSummarizer`]: the summarizer with no model at all.
//!
//! It writes nothing itself: a compactor given it (with the ledger on, the default of
//! [`crate::Compactor::with_summarizer`] for it) uses the artifact ledger of the
//! replaced messages as the whole summary. Instant, deterministic, and it never invents
//! anything: the zero-configuration default when no API key is set and no local model
//! has been fetched.

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::summarize::{FailureKind, Summarizer, SummarizerError, SummaryReply, SummaryRequest};

/// The model-free summarizer: the compactor's ledger is the summary.
///
/// ```
/// use llm_compactor::backend::LedgerSummarizer;
/// use llm_compactor::Summarizer;
/// let ledger = LedgerSummarizer;
/// assert!(ledger.model_free());
/// assert_eq!(ledger.name(), "ledger");
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct LedgerSummarizer;

#[async_trait]
impl Summarizer for LedgerSummarizer {
    fn name(&self) -> &str {
        "ledger"
    }

    fn model_free(&self) -> bool {
        true
    }

    /// Never called by a compactor (it sees [`Summarizer::model_free`]); called
    /// directly, it has only the rendered transcript and declines.
    async fn summarize(
        &self,
        _request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        Err(SummarizerError::new(
            FailureKind::Unavailable,
            "the ledger summarizer writes no text: a compactor builds the ledger from the messages",
        ))
    }
}
