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

use serde::{Deserialize, Serialize};

use super::cut::Layout;
use super::failed::is_failed_result;
use super::identity::IdentityTable;
use super::pairs::Pairs;
use super::stub::{is_stub, stub_chars, stub_text};
use crate::message::{Content, Message};

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
#[non_exhaustive]
pub enum EligibleReason {
    /// Fat, and an epoch of content has come after it.
    Aged,
    /// An older copy of a call answered again later (the loop breaker).
    Duplicate,
}

/// One tool result aging may stub.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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
    let graced = graced_from(messages, rules.reclaim_min);
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
        // A result in the grace whose call was answered once is never eligible, nor one
        // too short to be stubbed for its size: its chars are not needed.
        let aged_by_bytes = i < graced && may_exceed(&message.content, rules.min_chars);
        if !aged_by_bytes && answers.repeated(i).is_none() {
            continue;
        }
        let chars = message.content.chars();
        // An epoch of content follows `i` exactly when `i < graced` (see `graced_from`);
        // `judge` compares the chars after `i` with the epoch, so the epoch stands for them.
        let chars_after = if i < graced { rules.reclaim_min } else { 0 };
        let stub_chars = || stub_chars(chars, pairs.call(messages, i).map(|c| c.name.as_str()));
        if let Some(reason) = judge(i, chars, chars_after, &answers, stub_chars, rules) {
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

/// False only when `content` certainly has at most `chars` chars: a text's bytes bound
/// its chars, read without decoding them.
fn may_exceed(content: &Content, chars: usize) -> bool {
    match content {
        Content::Text(text) => text.len() > chars,
        _ => true,
    }
}

/// The first index whose following messages hold less than `reclaim_min` content chars
/// (the trailing grace starts after it): a message before it has at least an epoch of
/// content after it, one at or after it has not. Counted from the end, only as far back
/// as one epoch of content, not over the whole conversation.
fn graced_from(messages: &[Message], reclaim_min: usize) -> usize {
    // `after`: chars of messages[j + 1..]; message j has an epoch after it iff
    // after >= reclaim_min, and `after` only grows as j goes down.
    let mut after = 0usize;
    for j in (0..messages.len()).rev() {
        if after >= reclaim_min {
            return j + 1;
        }
        after += messages[j].content.chars();
    }
    0
}

/// The answers of every repeated call: per message its call identity (interned) and
/// whether it failed, per identity how often it was answered, its newest answer and its
/// newest answer that did not fail. Built one message at a time, so a growing
/// conversation ([`super::AgingIndex`]) extends it instead of recomputing it.
///
/// Whether an answer failed matters only once its call is answered again, so it is read
/// then (for the earlier answer too), not for every result: reading a message's extras
/// is one more visit to memory the pass has long left, and most calls are answered once.
#[derive(Clone, Debug, Default)]
pub(crate) struct Answers {
    ids: IdentityTable,
    /// Per message: its call's interned identity (results that answer a call only).
    identity: Vec<Option<u32>>,
    /// Per message: a failed tool result (read only for the answers of a repeated call;
    /// `false` for the others).
    failed: Vec<bool>,
    /// Per identity: (answers, newest answer, newest answer that did not fail, the
    /// latter kept from the second answer on).
    per_identity: Vec<(usize, usize, Option<usize>)>,
}

impl Answers {
    /// Indexes message `i` (the next one) of `messages`, paired by `pairs`; `messages`
    /// holds every message indexed before.
    pub(crate) fn push(&mut self, i: usize, pairs: &Pairs, messages: &[Message]) {
        debug_assert_eq!(i, self.identity.len());
        self.failed.push(false);
        let identity = pairs.call(messages, i).map(|c| self.ids.intern(&c.name, &c.arguments));
        if let Some(id) = identity {
            if id as usize == self.per_identity.len() {
                self.per_identity.push((0, i, None));
            }
            let (count, newest, _) = self.per_identity[id as usize];
            if count == 1 {
                // Answered again: the first answer's failure now matters.
                self.note_answer(id, newest, messages);
            }
            self.per_identity[id as usize].0 += 1;
            if count >= 1 {
                self.note_answer(id, i, messages);
            }
            self.per_identity[id as usize].1 = i;
        }
        self.identity.push(identity);
    }

    /// Reads whether answer `i` of identity `id` failed, and keeps it as the newest good
    /// answer when it did not (answers are noted in index order).
    fn note_answer(&mut self, id: u32, i: usize, messages: &[Message]) {
        let failed = is_failed_result(&messages[i]);
        self.failed[i] = failed;
        if !failed {
            self.per_identity[id as usize].2 = Some(i);
        }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::message::ToolCall;
    use crate::plan::cut::layout_with;
    use crate::plan::identity::call_identity;

    /// The rule as first written: every message's content chars summed from the end, for
    /// every index. What `eligible` computes lazily must equal it.
    fn eligible_reference(messages: &[Message], pairs: &Pairs, layout: &Layout, rules: AgingRules) -> Vec<Eligible> {
        let Some(cut) = layout.cut else { return Vec::new() };
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
            let message = &messages[i];
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

    /// A run of turns: each an assistant turn calling one of a few tools with one of a few
    /// arguments, answered by a result of multi-byte text (so bytes and chars differ), or
    /// a user turn.
    fn conversation() -> impl Strategy<Value = Vec<Message>> {
        let turn = (
            0u8..3,
            0u8..3,
            0usize..400,
            prop::bool::ANY,
            prop::bool::weighted(0.2),
            prop::bool::weighted(0.3),
        );
        prop::collection::vec(turn, 0..24).prop_map(|turns| {
            let mut messages = vec![Message::system("sys")];
            for (n, (tool, arg, size, wide, user, failed)) in turns.into_iter().enumerate() {
                if user {
                    messages.push(Message::user("é".repeat(size / 8)));
                    continue;
                }
                let id = format!("c{n}");
                let name = ["read", "bash", "grep"][tool as usize];
                let arguments = format!("{{\"path\": \"f{arg}\"}}");
                messages.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(id.clone(), name, arguments)]));
                let unit = if wide { "日本" } else { "ab" };
                let mut result = Message::tool(id, unit.repeat(size / 2));
                if failed {
                    result.extras.insert("is_error".into(), true.into());
                }
                messages.push(result);
            }
            messages
        })
    }

    /// `Answers::repeated` of every message as first written: every result's identity and
    /// failure read up front, the counts summed over the whole conversation.
    fn repeated_reference(messages: &[Message], pairs: &Pairs) -> Vec<Option<(bool, bool)>> {
        let identity: Vec<Option<String>> = (0..messages.len())
            .map(|i| pairs.call(messages, i).map(|c| call_identity(&c.name, &c.arguments)))
            .collect();
        let failed: Vec<bool> = messages.iter().map(is_failed_result).collect();
        (0..messages.len())
            .map(|i| {
                let mine = identity[i].as_ref()?;
                let answers: Vec<usize> = (0..messages.len())
                    .filter(|&j| identity[j].as_ref() == Some(mine))
                    .collect();
                if answers.len() < 2 {
                    return None;
                }
                let newest = *answers.last()?;
                let newest_good = answers.iter().rev().find(|&&j| !failed[j]);
                let superseded = newest_good.is_some_and(|&good| good > i);
                Some((superseded, !superseded && (!failed[i] || newest == i)))
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn eligible_equals_the_rule_summed_over_every_index(
            messages in conversation(),
            keep_recent in 0usize..6,
            min_chars in 0usize..300,
            reclaim_min in 0usize..2_000,
        ) {
            let pairs = Pairs::build(&messages);
            let layout = layout_with(&messages, &pairs, keep_recent);
            let rules = AgingRules { min_chars, reclaim_min };
            prop_assert_eq!(
                eligible(&messages, &pairs, &layout, rules),
                eligible_reference(&messages, &pairs, &layout, rules)
            );
        }

        #[test]
        fn answers_read_failures_lazily_and_judge_as_if_read_up_front(messages in conversation()) {
            let pairs = Pairs::build(&messages);
            let mut answers = Answers::default();
            for i in 0..messages.len() {
                answers.push(i, &pairs, &messages);
            }
            let lazy: Vec<_> = (0..messages.len()).map(|i| answers.repeated(i)).collect();
            prop_assert_eq!(lazy, repeated_reference(&messages, &pairs));
        }
    }
}
