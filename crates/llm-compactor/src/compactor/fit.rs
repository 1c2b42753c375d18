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
use crate::plan::ledger::{Ledger, LedgerPolicy, instructions_kept, ledger_room, request_kept, sized_ledgers};
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

/// What a summary must fit: the pass's request to the ledger.
pub(crate) struct Fit<'a> {
    pub(crate) aged: &'a [Message],
    pub(crate) layout: &'a Layout,
    pub(crate) aged_count: usize,
    pub(crate) counter: &'a Arc<dyn TokenCounter>,
    /// What a ledger aims at, in order: the pass's goal (the per-call target, else the
    /// configured target), then the trigger (a result under it does not call for
    /// another pass at once), then the limit (a result under it is not `exhausted`);
    /// with a per-call target, that target three times.
    pub(crate) aims: [usize; 3],
    /// Over this a summary is not taken: it would be `exhausted` (the per-call target,
    /// else the context budget).
    pub(crate) limit: usize,
}

impl Fit<'_> {
    /// The summary built from `text`, when it is valid, shrinks the conversation and
    /// counts at most `ceiling`.
    pub(crate) fn prove(&self, text: &str, ceiling: usize) -> Option<Accepted> {
        let cut = self.layout.cut?;
        let content = plan::summary_content(text.trim());
        let (messages, dropped) = plan::assemble(self.aged, cut, &content);
        let tokens = self.counter.count_messages(&messages);
        plan::validate(self.aged, &messages, self.layout.recent_start).ok()?;
        let fits = tokens < self.aged_count && tokens <= ceiling;
        fits.then_some(Accepted {
            content,
            messages,
            dropped,
            tokens,
        })
    }

    /// The conversation's tokens with `prefix` as the whole summary: what every ledger
    /// appended to it is added to.
    pub(crate) fn frame(&self, prefix: &str) -> usize {
        let Some(cut) = self.layout.cut else { return usize::MAX };
        let content = plan::summary_content(prefix.trim());
        self.counter.count_messages(&plan::assemble(self.aged, cut, &content).0)
    }

    /// The summary `prefix` + the ledger, the ledger sized to the room each aim leaves
    /// (see [`sized_ledgers`]): the first that fits its aim, aims in order.
    ///
    /// A ledger that reaches the target by cutting an instruction (see
    /// [`instructions_kept`]) is taken only when the trigger's keeps no more of them:
    /// the target is an aim, and what the user said is worth a result between the
    /// target and the trigger (not over it: that would call for another pass at once,
    /// unless nothing under the trigger keeps the last request).
    pub(crate) fn sized(&self, prefix: &str, ledger: &Ledger, policy: &LedgerPolicy) -> Option<Accepted> {
        let frame = self.frame(prefix);
        let mut tried: Option<usize> = None;
        // The ledger that kept the most instructions so far (the earliest aim's among
        // equals), and how many.
        let mut best: Option<(usize, Accepted)> = None;
        // The room of an aim whose largest ledger was taken: a later aim with the same
        // room has no larger one.
        let mut whole_room: Option<usize> = None;
        for (k, aim) in self.aims.into_iter().enumerate() {
            if tried.is_some_and(|t| t >= aim) {
                continue;
            }
            // The limit is the last resort: a result over the trigger calls for another
            // pass at once, so it is taken only when nothing under the trigger keeps the
            // last request (a tiny ledger under it that lost the request would lose what
            // the agent is working on: tau-bench at 2,000 tokens, 27 -> 25 of 30 probes).
            if k == self.aims.len() - 1 && best.as_ref().is_some_and(|(_, f)| request_kept(ledger, &f.content)) {
                break;
            }
            tried = Some(aim);
            let room = ledger_room(aim, frame, policy.max_tokens);
            if whole_room == Some(room) {
                continue;
            }
            let found = sized_ledgers(ledger, room, policy.max_tokens)
                .into_iter()
                .enumerate()
                .find_map(|(k, text)| Some((k, self.prove(&format!("{prefix}{text}"), aim)?)));
            if let Some((k, found)) = found {
                if k == 0 {
                    whole_room = Some(room);
                }
                let (kept, total) = instructions_kept(ledger, &found.content);
                if kept == total {
                    return Some(found);
                }
                if best.as_ref().is_none_or(|(most, _)| kept > *most) {
                    best = Some((kept, found));
                }
            }
        }
        best.map(|(_, found)| found)
    }
}
