//! [`AgingIndex`]: what the elision epoch decision knows of each message, learned once.
//!
//! Why: with aging on, an agent loop asks before every request whether an elision epoch
//! is due. Asked of a slice, that question rebuilds the pair index, the call identity of
//! every result (canonical JSON of its arguments), the chars of every message, stubs a
//! copy of the whole conversation and counts it again: all of it proportional to the
//! conversation, every round, and most rounds the answer is "not yet" or "does not pay".
//! On a 100,000-message replay that was three quarters of the time.
//!
//! A conversation that grows only at its end lets all of that be learned once per
//! message: the pairs, each result's call identity and failure, the running sums of
//! content chars (so "chars after `i`" is one subtraction), the assistant turns (the
//! growth rate of the horizon) and, the first time a result is found eligible, the token
//! count of its stub. A round then reads arrays: no hashing, no JSON, no allocation of
//! messages, no tokenizing but the stubs of newly eligible results.
//!
//! What a round asks of the results (their chars, tokens and stubs' tokens summed over
//! the eligible ones before the recent window, and the first of them) is kept in
//! binary indexed trees ([`super::fenwick`]): a result is judged again only when
//! something its judgment reads has changed (it is new, an epoch of content has now
//! passed it, or its call was just answered again), so a round costs its new messages and
//! the few results they change, not a pass over every result.
//!
//! The rule itself is not copied: one function of the planning core (`judge` in
//! [`super::eligibility`]) decides each result for the slice API and for this index, and
//! `tests/aging_index.rs` checks the two agree on every prefix of generated conversations.

use super::eligibility::{AgingRules, Answers, Eligible, Found, judge};
use super::fenwick::Fenwick;
use super::pairs::{Pairs, PairsBuilder};
use super::pinned::is_pinned;
use super::stub::{is_stub, stub_chars, stub_text};
use crate::count::TokenCounter;
use crate::message::{Content, Message, Role};

/// Per-message facts for the epoch decision of a growing conversation.
///
/// The owner keeps it in step with its messages: [`AgingIndex::extend`] after appending
/// (it indexes what it has not seen), a fresh index after anything else changed.
#[derive(Clone, Debug)]
pub struct AgingIndex {
    pairs: PairsBuilder,
    answers: Answers,
    /// `char_sums[i]`: the content chars of the first `i` messages.
    char_sums: Vec<usize>,
    assistant_turns: usize,
    /// The tool results aging may consider (not pinned, not already a stub), in order,
    /// each with the length of its stub: the only messages a round reads.
    candidates: Vec<(usize, usize)>,
    /// The counter's count of message `i` with its content replaced by its stub, once
    /// asked for.
    stub_tokens: Vec<Option<usize>>,
    /// Per interned call identity: the candidates (positions in `candidates`) that
    /// answer it, whose judgment a new answer of the same call may change.
    by_identity: Vec<Vec<usize>>,
    /// The candidates' judgments and the sums over the eligible ones.
    judged: Judged,
}

/// Every candidate's eligibility under one set of rules, and the sums over the eligible
/// ones, position by position (a position is an index into `candidates`).
#[derive(Clone, Debug, Default)]
struct Judged {
    /// The rules judged under; other rules judge everything again.
    rules: Option<AgingRules>,
    eligible: Vec<bool>,
    /// The candidates before this one have an epoch of content after them (and keep it:
    /// the conversation only grows).
    aged_through: usize,
    /// Candidates to judge again at the next question.
    dirty: Vec<usize>,
    /// Call identities answered again since the last question: their candidates are
    /// judged again (listed once per identity, however often it was repeated).
    repeated: Vec<usize>,
    /// 1 per eligible candidate, for the first of them.
    number: Fenwick,
    /// The chars, the tokens (the conversation's count) and the stub's tokens of each
    /// eligible candidate.
    chars: Fenwick,
    tokens: Fenwick,
    stubs: Fenwick,
}

/// What stubbing the eligible results of `0..=cut` comes to: see
/// [`AgingIndex::eligible_sums`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EligibleSums {
    /// The first eligible result (a message index).
    pub(crate) first: Option<usize>,
    /// Their content chars: the reclaimable pool.
    pub(crate) chars: usize,
    /// Their tokens as the conversation counted them.
    pub(crate) tokens: usize,
    /// Their stubs' tokens (the counter's count of each message with its stub).
    pub(crate) stub_tokens: usize,
}

impl Default for AgingIndex {
    fn default() -> Self {
        AgingIndex {
            pairs: PairsBuilder::default(),
            answers: Answers::default(),
            char_sums: vec![0],
            assistant_turns: 0,
            candidates: Vec::new(),
            stub_tokens: Vec::new(),
            by_identity: Vec::new(),
            judged: Judged::default(),
        }
    }
}

impl AgingIndex {
    /// How many messages are indexed.
    pub fn len(&self) -> usize {
        self.stub_tokens.len()
    }

    /// True when nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.stub_tokens.is_empty()
    }

    /// Indexes `messages[self.len()..]`: `messages` is the whole conversation, whose
    /// first `len()` messages are the ones already indexed.
    pub fn extend(&mut self, messages: &[Message]) {
        for i in self.len()..messages.len() {
            let message = &messages[i];
            self.pairs.push(message);
            self.answers.push(i, self.pairs.pairs(), messages);
            let chars = message.content.chars();
            self.char_sums.push(self.char_sums[i] + chars);
            if message.role == Role::Assistant {
                self.assistant_turns += 1;
            }
            let identity = self.answers.identity(i).map(|id| id as usize);
            if let Some(id) = identity {
                // A new answer of this call may supersede or protect the earlier ones.
                if id >= self.by_identity.len() {
                    self.by_identity.resize_with(id + 1, Vec::new);
                }
                self.judged.repeated.push(id);
            }
            if message.is_tool_result() && !is_pinned(messages, self.pairs.pairs(), i) && !is_stub(&message.content) {
                let tool = self.pairs.pairs().call(messages, i).map(|c| c.name.as_str());
                if let Some(id) = identity {
                    self.by_identity[id].push(self.candidates.len());
                }
                self.candidates.push((i, stub_chars(chars, tool)));
            }
            self.stub_tokens.push(None);
        }
    }

    /// The pairs of the indexed messages.
    pub fn pairs(&self) -> &Pairs {
        self.pairs.pairs()
    }

    /// How many indexed messages are assistant turns.
    pub fn assistant_turns(&self) -> usize {
        self.assistant_turns
    }

    /// The eligible results of `0..=cut` ([`super::eligible`]'s rule, [`judge`], read from
    /// the index) summed: their chars, their tokens in `counts` (the conversation's count
    /// of each message), their stubs' tokens by `counter`, and the first of them. Only the
    /// results whose judgment may have changed since the last question are judged again;
    /// a result's stub is counted the first time it is eligible.
    pub(crate) fn eligible_sums(
        &mut self,
        messages: &[Message],
        counts: &[usize],
        cut: usize,
        rules: AgingRules,
        counter: &dyn TokenCounter,
    ) -> EligibleSums {
        if self.judged.rules != Some(rules) {
            self.judged = Judged {
                rules: Some(rules),
                ..Judged::default()
            };
        }
        // New candidates: judged for the first time.
        for position in self.judged.eligible.len()..self.candidates.len() {
            self.judged.eligible.push(false);
            for tree in [
                &mut self.judged.number,
                &mut self.judged.chars,
                &mut self.judged.tokens,
                &mut self.judged.stubs,
            ] {
                tree.push(0);
            }
            self.judged.dirty.push(position);
        }
        // Candidates an epoch of content has now passed (a prefix of them: the chars
        // after a result shrink with its position).
        let total = self.char_sums[self.len()];
        while let Some(&(i, _)) = self.candidates.get(self.judged.aged_through) {
            if total - self.char_sums[i + 1] < rules.reclaim_min {
                break;
            }
            self.judged.dirty.push(self.judged.aged_through);
            self.judged.aged_through += 1;
        }
        let mut dirty = std::mem::take(&mut self.judged.dirty);
        let mut repeated = std::mem::take(&mut self.judged.repeated);
        repeated.sort_unstable();
        repeated.dedup();
        for &id in &repeated {
            dirty.extend_from_slice(&self.by_identity[id]);
        }
        repeated.clear();
        self.judged.repeated = repeated;
        dirty.sort_unstable();
        dirty.dedup();
        for &position in &dirty {
            let (i, stub_chars) = self.candidates[position];
            let chars = self.char_sums[i + 1] - self.char_sums[i];
            let after = total - self.char_sums[i + 1];
            let eligible = judge(i, chars, after, &self.answers, || stub_chars, rules).is_some();
            if eligible == self.judged.eligible[position] {
                continue;
            }
            let stub = self.stub_tokens(messages, i, chars, counter);
            let tokens = counts.get(i).copied().unwrap_or_default();
            let sign = |value: usize| {
                if eligible {
                    value as u64
                } else {
                    (value as u64).wrapping_neg()
                }
            };
            self.judged.number.add(position, sign(1));
            self.judged.chars.add(position, sign(chars));
            self.judged.tokens.add(position, sign(tokens));
            self.judged.stubs.add(position, sign(stub));
            self.judged.eligible[position] = eligible;
        }
        dirty.clear();
        self.judged.dirty = dirty;
        let end = self.candidates.partition_point(|&(i, _)| i <= cut);
        let judged = &self.judged;
        let first = match judged.number.prefix(end) {
            0 => None,
            _ => judged
                .number
                .first_reaching(1)
                .map(|position| self.candidates[position].0),
        };
        EligibleSums {
            first,
            chars: judged.chars.prefix(end) as usize,
            tokens: judged.tokens.prefix(end) as usize,
            stub_tokens: judged.stubs.prefix(end) as usize,
        }
    }

    /// The eligible results of `0..=cut` as [`super::eligible`] lists them for the same
    /// messages, read from the index: each candidate up to `cut` judged by the same rule
    /// (one function decides both) from the index's chars, answers and stub lengths,
    /// without pairing, parsing or counting the conversation again. Read-only: the
    /// judgments kept for the epoch decision are neither read nor changed. `messages` are
    /// the indexed messages.
    pub fn eligible(&self, messages: &[Message], cut: usize, rules: AgingRules) -> Vec<Eligible> {
        let total = self.char_sums[self.len()];
        self.candidates
            .iter()
            .take_while(|&&(i, _)| i <= cut)
            .filter_map(|&(i, stub_chars)| {
                let chars = self.char_sums[i + 1] - self.char_sums[i];
                let after = total - self.char_sums[i + 1];
                let reason = judge(i, chars, after, &self.answers, || stub_chars, rules)?;
                Some(
                    Found {
                        index: i,
                        chars,
                        reason,
                    }
                    .with_stub(messages, self.pairs()),
                )
            })
            .collect()
    }

    /// `counter`'s count of message `index` (of `chars` content chars) with its content
    /// replaced by its stub: counted the first time, remembered after.
    fn stub_tokens(&mut self, messages: &[Message], index: usize, chars: usize, counter: &dyn TokenCounter) -> usize {
        if let Some(tokens) = self.stub_tokens[index] {
            return tokens;
        }
        let original = &messages[index];
        let tool = self.pairs().call(messages, index).map(|c| c.name.as_str());
        let stubbed = Message {
            id: original.id.clone(),
            role: original.role.clone(),
            content: Content::Text(stub_text(chars, tool)),
            tool_calls: original.tool_calls.clone(),
            tool_call_id: original.tool_call_id.clone(),
            name: original.name.clone(),
            sticky: original.sticky,
            sysprompt: original.sysprompt,
            depth: original.depth,
            extras: original.extras.clone(),
        };
        let tokens = if counter.additive() {
            counter.count_some(std::slice::from_ref(&stubbed)).iter().sum()
        } else {
            counter.count_message(&stubbed)
        };
        self.stub_tokens[index] = Some(tokens);
        tokens
    }
}
