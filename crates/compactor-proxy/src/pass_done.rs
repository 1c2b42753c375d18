//! What a pass did, as a round reports it: the facts a trace's compaction event carries.
//! Its own file so that the session code and the telemetry both depend on it and not on
//! each other.

/// What a pass did, as a round reports it (to its trace span).
#[derive(Clone, Debug, PartialEq)]
pub struct PassDone {
    /// Tokens before.
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Messages replaced by the summary or the trim.
    pub messages_replaced: usize,
    /// Tool results stubbed.
    pub elisions: usize,
    /// The receipt's expected net cost (negative saves), when it has one.
    pub net_cost: Option<f64>,
    /// The whole text of the summary message the pass inserted; `None` when it inserted
    /// none (an elision-only pass).
    pub summary: Option<String>,
    /// What the pass's summarizer was billed.
    pub usage: llm_compactor::Usage,
}

impl PassDone {
    /// What `result` did.
    pub fn of(result: &llm_compactor::CompactionResult) -> PassDone {
        PassDone {
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            messages_replaced: result.dropped,
            elisions: result.elisions.len(),
            net_cost: result.receipt.as_ref().map(|r| r.net_cost),
            summary: (!result.summary.is_empty()).then(|| result.summary.clone()),
            usage: result.usage,
        }
    }
}
