//! What a summary must fit, and what proved it fits: the words the summarizing phase
//! (`summary.rs`) and the ledger's part in a pass (`ledger.rs`) share.
//!
//! The summarizing phase produces a [`SummaryOutcome`]; the ledger's part grounds its
//! accepted summary, or writes the ledger-only one, and proves either against the same
//! [`Fit`]. Apart from both so that the ledger does not reach back into the phase that
//! calls it.

use std::sync::Arc;

use super::result::Attempt;
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::{self, Layout};
use crate::usage::Usage;

/// A summary that proved it shrank the conversation.
pub(crate) struct Accepted {
    pub(crate) content: String,
    pub(crate) messages: Vec<Message>,
    pub(crate) dropped: usize,
    pub(crate) tokens: usize,
}

/// What the summarizing phase produced.
pub(crate) struct SummaryOutcome {
    pub(crate) accepted: Option<Accepted>,
    pub(crate) attempts: Vec<Attempt>,
    pub(crate) usage: Usage,
}

/// What a summary must fit.
pub(crate) struct Fit<'a> {
    pub(crate) aged: &'a [Message],
    pub(crate) layout: &'a Layout,
    pub(crate) aged_count: usize,
    pub(crate) counter: &'a Arc<dyn TokenCounter>,
    pub(crate) target: Option<usize>,
}

impl Fit<'_> {
    /// The summary built from `text`, when it is valid and shrinks the conversation
    /// (and meets the target).
    pub(crate) fn prove(&self, text: &str) -> Option<Accepted> {
        let cut = self.layout.cut?;
        let content = plan::summary_content(text.trim());
        let (messages, dropped) = plan::assemble(self.aged, cut, &content);
        let tokens = self.counter.count_messages(&messages);
        plan::validate(self.aged, &messages, self.layout.recent_start).ok()?;
        let fits = tokens < self.aged_count && self.target.is_none_or(|t| tokens <= t);
        fits.then_some(Accepted {
            content,
            messages,
            dropped,
            tokens,
        })
    }
}
