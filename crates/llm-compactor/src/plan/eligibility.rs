//! Which old tool results aging may stub, and how much that would reclaim.
//!
//! Aging is a bet that the model will not go back to the raw bytes of an old result.
//! The rules keep the bet safe and cheap:
//! - only tool results in the middle (before the recent window, never sticky, never
//!   already a stub);
//! - either the result is fat (more than `min_chars`) AND a whole epoch of content
//!   (`reclaim_min` chars) has come after it (the trailing grace),
//! - or it is an older copy of a call that was answered more than once in the whole
//!   conversation: the loop breaker. The newest answer of such a call is protected
//!   forever (never stubbed, not even for its size), and every older copy is eligible
//!   whatever its size or distance. A newer answer supersedes an older one only if it
//!   did not fail ([`super::is_failed_result`]): a failed re-read leaves the last good
//!   copy protected, since a stub telling the model to re-run a call that just failed
//!   would lose the only good copy.
//!
//! One refinement of ours: a result is never stubbed when the stub would not be shorter
//! than the content (a tiny duplicate), so an elision always reclaims something and an
//! elision-only pass is a proven shrink.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::cut::Layout;
use super::failed::is_failed_result;
use super::identity::call_identity;
use super::pairs::Pairs;
use super::stub::{is_stub, stub_chars, stub_text};
use crate::message::Message;

/// The two numbers aging is governed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgingRules {
    /// A result must be longer than this (chars) to be stubbed for its size.
    pub min_chars: usize,
    /// The epoch size (chars): the trailing grace and the reclaimable-pool floor.
    pub reclaim_min: usize,
}

/// Why a result is eligible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EligibleReason {
    /// Fat, and an epoch of content has come after it.
    Aged,
    /// An older copy of a call answered again later (the loop breaker).
    Duplicate,
}

/// One tool result aging may stub.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Eligible {
    /// Its index in the conversation.
    pub index: usize,
    /// Its content size in chars.
    pub chars: usize,
    /// The tool's name, from the asking call.
    pub tool: Option<String>,
    /// Why it is eligible.
    pub reason: EligibleReason,
    /// The stub that would replace it.
    pub stub: String,
}

/// Every eligible tool result of `messages` under `layout`, in index order.
pub fn eligible(messages: &[Message], pairs: &Pairs, layout: &Layout, rules: AgingRules) -> Vec<Eligible> {
    let Some(cut) = layout.cut else { return Vec::new() };
    // Chars of all content after each index.
    let mut after = vec![0usize; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        after[i] = after[i + 1] + messages[i].content.chars();
    }
    let mut answers = Answers::default();
    for i in 0..messages.len() {
        answers.push(i, pairs, messages);
    }
    let mut out = Vec::new();
    for &i in &layout.middle {
        // A layout of another conversation is ignored where it does not fit this one.
        let Some(message) = messages.get(i) else { continue };
        if i > cut || !message.is_tool_result() || message.is_sticky() || is_stub(&message.content) {
            continue;
        }
        let chars = after[i] - after[i + 1];
        let stub_chars = || stub_chars(chars, pairs.call(messages, i).map(|c| c.name.as_str()));
        if let Some(reason) = judge(i, chars, after[i + 1], &answers, stub_chars, rules) {
            out.push(
                Found {
                    index: i,
                    chars,
                    reason,
                }
                .with_stub(messages, pairs),
            );
        }
    }
    out
}

/// The answers of every repeated call: per message its call identity (interned) and
/// whether it failed, per identity how often it was answered, its newest answer and its
/// newest answer that did not fail. Built one message at a time, so a growing
/// conversation ([`super::AgingIndex`]) extends it instead of recomputing it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Answers {
    ids: HashMap<String, u32, foldhash::quality::RandomState>,
    /// Per message: its call's interned identity (results that answer a call only).
    identity: Vec<Option<u32>>,
    /// Per message: a failed tool result.
    failed: Vec<bool>,
    /// Per identity: (answers, newest answer, newest answer that did not fail).
    per_identity: Vec<(usize, usize, Option<usize>)>,
}

impl Answers {
    /// Indexes message `i` (the next one) of `messages`, paired by `pairs`.
    pub(crate) fn push(&mut self, i: usize, pairs: &Pairs, messages: &[Message]) {
        debug_assert_eq!(i, self.identity.len());
        let failed = is_failed_result(&messages[i]);
        let identity = pairs
            .call(messages, i)
            .map(|c| call_identity(&c.name, &c.arguments))
            .map(|identity| {
                let next = self.ids.len() as u32;
                let id = *self.ids.entry(identity).or_insert(next);
                if id as usize == self.per_identity.len() {
                    self.per_identity.push((0, i, None));
                }
                let entry = &mut self.per_identity[id as usize];
                entry.0 += 1;
                entry.1 = i;
                if !failed {
                    entry.2 = Some(i);
                }
                id
            });
        self.identity.push(identity);
        self.failed.push(failed);
    }

    /// The interned identity of the call message `i` answers, if it answers one.
    pub(crate) fn identity(&self, i: usize) -> Option<u32> {
        self.identity.get(i).copied().flatten()
    }

    /// The repeated call's state of the answer at `i`: `None` when its call was answered
    /// once (or it answers none); else whether a newer answer that did not fail
    /// supersedes it, and whether it is the protected copy (the newest good one, or the
    /// newest when every answer failed).
    fn repeated(&self, i: usize) -> Option<(bool, bool)> {
        let id = self.identity.get(i).copied().flatten()?;
        let (count, newest, newest_good) = self.per_identity[id as usize];
        if count < 2 {
            return None;
        }
        let superseded = newest_good.is_some_and(|good| good > i);
        let protected = !superseded && (!self.failed[i] || newest == i);
        Some((superseded, protected))
    }
}

/// The rule for one result of the middle that is neither pinned nor a stub: whether it is
/// eligible, and why. `chars_after` is the content chars of every message after it;
/// `stub_chars` the length of its stub (asked only when it would be eligible).
pub(crate) fn judge(
    i: usize,
    chars: usize,
    chars_after: usize,
    answers: &Answers,
    stub_chars: impl FnOnce() -> usize,
    rules: AgingRules,
) -> Option<EligibleReason> {
    let repeated = answers.repeated(i);
    // The protected answer of a repeated call is kept, whatever its size or age: the
    // model re-ran the call because it needed those bytes. An older copy is dead weight
    // only when a newer answer that did not fail replaces it.
    if repeated.is_some_and(|(_, protected)| protected) {
        return None;
    }
    let duplicate = repeated.is_some_and(|(superseded, _)| superseded);
    let aged = chars > rules.min_chars && chars_after >= rules.reclaim_min;
    let reason = if duplicate {
        EligibleReason::Duplicate
    } else if aged {
        EligibleReason::Aged
    } else {
        return None;
    };
    // A stub must be shorter than what it replaces.
    (stub_chars() < chars).then_some(reason)
}

/// An eligible result before its stub is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) index: usize,
    pub(crate) chars: usize,
    pub(crate) reason: EligibleReason,
}

impl Found {
    /// The eligible result with its tool's name and stub.
    pub(crate) fn with_stub(self, messages: &[Message], pairs: &Pairs) -> Eligible {
        let tool = pairs.call(messages, self.index).map(|c| c.name.clone());
        let stub = stub_text(self.chars, tool.as_deref());
        Eligible {
            index: self.index,
            chars: self.chars,
            tool,
            reason: self.reason,
            stub,
        }
    }
}

/// The summed content chars of the eligible results: what one elision epoch reclaims
/// (before the stubs' own few dozen chars).
pub fn reclaimable_pool(eligible: &[Eligible]) -> usize {
    eligible.iter().map(|e| e.chars).sum()
}
