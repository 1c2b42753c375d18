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
//! The rule itself is not copied: one function of the planning core (`judge` in
//! [`super::eligibility`]) decides each result for the slice API and for this index, and
//! `tests/aging_index.rs` checks the two agree on every prefix of generated conversations.

use super::eligibility::{AgingRules, Answers, Found, judge};
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
            if message.is_tool_result() && !is_pinned(messages, self.pairs.pairs(), i) && !is_stub(&message.content) {
                let tool = self.pairs.pairs().call(messages, i).map(|c| c.name.as_str());
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
    /// the index): a pass over the candidate results, with no message touched.
    pub(crate) fn eligible_upto(&self, cut: usize, rules: AgingRules) -> Vec<Found> {
        let n = self.len();
        let total = self.char_sums[n];
        let mut out = Vec::new();
        for &(i, stub_chars) in self.candidates.iter().take_while(|(i, _)| *i <= cut) {
            let chars = self.char_sums[i + 1] - self.char_sums[i];
            let after = total - self.char_sums[i + 1];
            if let Some(reason) = judge(i, chars, after, &self.answers, || stub_chars, rules) {
                out.push(Found {
                    index: i,
                    chars,
                    reason,
                });
            }
        }
        out
    }

    /// `counter`'s count of message `index` with its content replaced by `found`'s
    /// stub: counted the first time, remembered after.
    pub(crate) fn stub_tokens(&mut self, messages: &[Message], found: &Found, counter: &dyn TokenCounter) -> usize {
        if let Some(tokens) = self.stub_tokens[found.index] {
            return tokens;
        }
        let original = &messages[found.index];
        let tool = self.pairs().call(messages, found.index).map(|c| c.name.as_str());
        let stubbed = Message {
            id: original.id.clone(),
            role: original.role.clone(),
            content: Content::Text(stub_text(found.chars, tool)),
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
        self.stub_tokens[found.index] = Some(tokens);
        tokens
    }
}
