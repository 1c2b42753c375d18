//! What a compaction pass reports: [`CompactionResult`] and its parts.

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::plan::{CostReceipt, Repair, Truncation};
use crate::summarize::FailureClass;
use crate::usage::Usage;

pub use crate::plan::Elision;

/// Which request an attempt was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AttemptKind {
    /// A summary of the whole middle (or the last chunk of it).
    Summary,
    /// A summary of one chunk of a middle too big for the summarizer's input room.
    Chunk,
    /// The single retry after a summary that did not shrink the conversation enough.
    Tighten,
    /// A retry with a doubled output budget after a truncated summary.
    Expand,
    /// The ledger-only summary: `--summarizer ledger`, or the fallback before the hard
    /// trim when no model summary was accepted (no model call; see
    /// [`crate::plan::ledger`]).
    Ledger,
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// Its summary was taken.
    Accepted,
    /// It produced text, but the text was not taken (too long, truncated, a chunk
    /// summary that fed the next chunk, ...). See [`Attempt::note`].
    Rejected,
    /// A chunk summary that was carried into the next chunk's request.
    Carried,
    /// The call failed. See [`Attempt::class`].
    Failed,
}

/// One summarizer request made during a pass, failed or not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Attempt {
    /// Which request this was.
    pub kind: AttemptKind,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// The failure class, for a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<FailureClass>,
    /// The HTTP status, when a failure carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Milliseconds waited before this attempt was sent.
    pub wait_ms: u64,
    /// What this attempt was billed (failed attempts included).
    pub usage: Usage,
    /// Why it was rejected or failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Attempt {
    /// An attempt of `kind` that ended as `outcome`: no failure class or status, no
    /// wait, nothing billed, no note (set what applies).
    pub fn new(kind: AttemptKind, outcome: AttemptOutcome) -> Self {
        Attempt {
            kind,
            outcome,
            class: None,
            status: None,
            wait_ms: 0,
            usage: Usage::default(),
            note: None,
        }
    }
}

/// What `compact` did.
///
/// The shape is the seed's: the sticky prefix kept where it was, the middle replaced by
/// one summary message (or, with aging, only its fat tool results stubbed), the recent
/// window verbatim. `cut_index` and `elisions` are what a session transcript stores so
/// that replay gives back exactly `messages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionResult {
    /// The conversation to use from now on.
    pub messages: Vec<Message>,
    /// The whole content of the inserted summary (or hard-trim notice) message, header
    /// included; empty when none was inserted.
    pub summary: String,
    /// How many input messages were replaced by the summary or dropped by the trim.
    pub dropped: usize,
    /// Every non-sticky input message at or before this index was replaced by the
    /// summary message; -1 for a no-op or an elision-only pass.
    pub cut_index: i64,
    /// The conversation's tokens before the pass (with the pass's counter).
    pub tokens_before: usize,
    /// The conversation's tokens after the pass (with the pass's counter).
    pub tokens_after: usize,
    /// True when the summarizer could not produce an accepted summary and the oldest
    /// messages were dropped unsummarized (the hard trim).
    pub fallback: bool,
    /// True when even the best result does not fit the budget (or the per-call target):
    /// the next request is expected to fail, and the caller should say so.
    pub exhausted: bool,
    /// Every tool result whose content this pass replaced, by index into the input (the
    /// repaired input when `repairs` is not empty): each stub the pass made, including
    /// stubs the same pass then summarized or trimmed away (see
    /// [`CompactionResult::survived`]), and each recent-window result cut to fit
    /// `max_recent_tokens` (listed again in `truncations`). Applying them in order, then
    /// the cut, rebuilds `messages`: that is what a session transcript records.
    pub elisions: Vec<Elision>,
    /// Everything the summarizer was billed during this pass, failed calls included.
    pub usage: Usage,
    /// Every summarizer request of this pass, in order.
    pub attempts: Vec<Attempt>,
    /// The name of the summarizer the pass asked ([`crate::Summarizer::name`]); `None`
    /// when it asked none (nothing to replace, aging only, or no summarizer set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// What the pass did to the prompt cache (the kept prefix, the tokens rewritten, the
    /// summarizer's tokens) and its estimated net cost against not compacting, under the
    /// configuration's cost policy. `None` only in results built by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<CostReceipt>,
    /// How a broken input was repaired before the pass (orphan results dropped, unanswered
    /// calls given a synthetic answer); empty for a well-formed input. When not empty,
    /// `cut_index` and `elisions` index the repaired conversation
    /// ([`crate::plan::apply_repairs`] of the input and these repairs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<Repair>,
    /// Recent-window tool results cut head-and-tail to fit `max_recent_tokens` (their new
    /// content is in `elisions` too).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncations: Vec<Truncation>,
    /// When `exhausted`: the numbers of why (what nothing may shrink, against the limit);
    /// `None` otherwise (and for a prepared pass installed later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exhaustion: Option<Exhaustion>,
    /// The signed thinking blocks of `messages` (by signature, a redacted block by its
    /// data) that were valid in the input and now sit on a prefix the pass changed: a
    /// model with preserved thinking refuses them (send the request with its
    /// `drop_block` option, or strip them). Empty when the conversation holds none, and
    /// for a prepared pass installed later (its manager reports them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stale_thinking: Vec<String>,
}

/// Why a pass is `exhausted`, in numbers: the part of the conversation no pass may
/// summarize, trim or elide (the sticky messages, and the recent window shrunk as far as
/// it goes: the last turn, its biggest results cut) is over the limit on its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Exhaustion {
    /// The limit the result was judged by: the per-call target, else the context budget.
    pub limit: usize,
    /// The result's tokens.
    pub tokens_after: usize,
    /// Tokens of the sticky messages before the recent window.
    pub sticky_tokens: usize,
    /// Tokens of the recent window as kept.
    pub recent_tokens: usize,
    /// Messages in the recent window as kept.
    pub recent_messages: usize,
}

impl std::fmt::Display for Exhaustion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} tokens after the pass, over the limit of {}: the sticky messages take {} and the recent \
             window ({} messages, from the last turn on) {}",
            self.tokens_after, self.limit, self.sticky_tokens, self.recent_messages, self.recent_tokens
        )
    }
}

impl CompactionResult {
    /// True when the conversation came back unchanged.
    pub fn is_noop(&self) -> bool {
        self.dropped == 0 && self.elisions.is_empty() && self.repairs.is_empty()
    }

    /// True when `elision` is still in `messages`: the summary or the trim of the same
    /// pass did not replace it (only messages at or before `cut_index` are replaced).
    pub fn survived(&self, elision: &Elision) -> bool {
        usize::try_from(self.cut_index).map_or(true, |cut| elision.index > cut)
    }

    /// True for a pass that only stubbed tool results (no summary, nothing dropped).
    pub fn is_elision_only(&self) -> bool {
        self.dropped == 0 && !self.elisions.is_empty()
    }

    /// A pass that replaced nothing: `messages` (the input, or its elision-only copy)
    /// counting `tokens` (before and after, until the pass judges it), no cut
    /// (`cut_index` -1), no summary, nothing billed. Also the start of a result built by
    /// hand (tests, a caller's own strategy): set what the pass did.
    pub fn unchanged(messages: Vec<Message>, tokens: usize) -> Self {
        CompactionResult {
            messages,
            summary: String::new(),
            dropped: 0,
            cut_index: -1,
            tokens_before: tokens,
            tokens_after: tokens,
            fallback: false,
            exhausted: false,
            elisions: Vec::new(),
            usage: Usage::default(),
            attempts: Vec::new(),
            summarizer: None,
            receipt: None,
            repairs: Vec::new(),
            truncations: Vec::new(),
            exhaustion: None,
            stale_thinking: Vec::new(),
        }
    }

    /// A pass that replaced the middle through `cut_index` (`dropped` messages) by the
    /// message whose content is `summary` (a summary, or the hard trim's notice), leaving
    /// `messages` counting `tokens`.
    pub(crate) fn replaced(
        messages: Vec<Message>,
        summary: String,
        dropped: usize,
        cut_index: i64,
        tokens: usize,
    ) -> Self {
        CompactionResult {
            summary,
            dropped,
            cut_index,
            ..CompactionResult::unchanged(messages, tokens)
        }
    }

    /// Judged against the pass's input (`before` tokens) and its `limit` (the per-call
    /// target, else the context budget): exhausted when still over the limit.
    pub(crate) fn judged(mut self, before: usize, limit: usize) -> Self {
        self.tokens_before = before;
        self.exhausted = self.tokens_after > limit;
        self
    }

    /// With every stub the pass made (see [`CompactionResult::elisions`]).
    pub(crate) fn with_elisions(mut self, elisions: Vec<Elision>) -> Self {
        self.elisions = elisions;
        self
    }
}
