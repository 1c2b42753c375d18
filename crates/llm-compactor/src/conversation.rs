//! [`Conversation`]: a growing conversation that remembers what it knows about each
//! message, so that an agent loop's round costs its new messages, not the transcript.
//!
//! Why an owning type: a function that takes `&[Message]` cannot know which messages it
//! saw last round. It must read every message again to prove the prefix unchanged (the
//! memo's fingerprint pass, the calibrated counter's anchor check), which makes every
//! round linear in the conversation: at 1M tokens that was tens of times the cost of
//! tokenizing the round's two new messages. A conversation that owns its messages sees
//! every change, so it can keep, per message:
//!
//! - its token count under the conversation's counter, counted once when the message
//!   arrives, and the running sums of those counts (the tokens of any range are one
//!   subtraction);
//! - the chained digest of the prefix: the SHA-256 state over the newline-joined message
//!   digests of the first `i` messages, so [`Conversation::prefix_digest`] of any prefix
//!   is one finalization once computed. Digests are computed lazily, the first time a
//!   prefix is asked for (a loop with a calibrated counter asks every round; a loop
//!   without one never pays for SHA-256), and each message is digested once.
//!
//! The only ways to change the messages are the methods here (appending, truncating,
//! replacing the whole conversation after a compaction), and each one invalidates exactly
//! what it changed. The slice-based API ([`TokenCounter::count_messages`],
//! `Compactor::needs_compaction`) keeps working on [`Conversation::messages`].

use std::ops::{Bound, RangeBounds};
use std::sync::{Arc, Mutex, MutexGuard};

use sha2::{Digest, Sha256};

use crate::count::{ConversationView, TokenCounter, counted_by};
use crate::message::digest::{lower_hex, message_digest_hex};
use crate::message::{Content, Message};
use crate::plan::AgingIndex;

/// A conversation with each message's token count and the chained digest of its
/// prefixes, extended as it grows.
///
/// ```
/// use std::sync::Arc;
/// use llm_compactor::count::{HeuristicCounter, TokenCounter};
/// use llm_compactor::message::conversation_digest;
/// use llm_compactor::{Conversation, Message};
///
/// let mut conversation = Conversation::new(Arc::new(HeuristicCounter));
/// conversation.push(Message::system("be brief"));
/// conversation.push(Message::user("hi"));
/// // Counted once, when each message arrived: the total is a lookup.
/// assert_eq!(conversation.tokens(), HeuristicCounter.count_messages(conversation.messages()));
/// assert_eq!(conversation.tokens_in(1..), 9); // 8 + ceil(2 / 4)
/// // The digest of any prefix, the same value `conversation_digest` computes from scratch.
/// assert_eq!(
///     conversation.prefix_digest(1).unwrap(),
///     conversation_digest(&conversation.messages()[..1])
/// );
/// ```
pub struct Conversation {
    messages: Vec<Message>,
    counter: Arc<dyn TokenCounter>,
    /// `counts[i]`: `counter.count_message(&messages[i])`.
    counts: Vec<usize>,
    /// `sums[i]`: the sum of `counts[..i]` (`sums.len() == messages.len() + 1`).
    sums: Vec<usize>,
    /// `chain[i]`: SHA-256 fed with the newline-joined digests of `messages[..i]`, not
    /// finalized; computed up to the longest prefix asked for.
    chain: Mutex<Vec<Sha256>>,
    /// What the elision epoch decision knows of each message, extended lazily (a loop
    /// with aging off never builds it); reset by anything but an append.
    aging: Mutex<AgingIndex>,
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("messages", &self.messages.len())
            .field("counter", &self.counter.name())
            .field("tokens", &self.tokens_in(..))
            .finish()
    }
}

impl Clone for Conversation {
    fn clone(&self) -> Self {
        Conversation {
            messages: self.messages.clone(),
            counter: Arc::clone(&self.counter),
            counts: self.counts.clone(),
            sums: self.sums.clone(),
            chain: Mutex::new(self.chain().clone()),
            aging: Mutex::new(lock(&self.aging).clone()),
        }
    }
}

impl Conversation {
    /// An empty conversation whose messages are counted by `counter` (share the `Arc`
    /// the compactor counts with: the cached counts are used only by that counter).
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        Conversation {
            messages: Vec::new(),
            counter,
            counts: Vec::new(),
            sums: vec![0],
            chain: Mutex::new(vec![Sha256::new()]),
            aging: Mutex::new(AgingIndex::default()),
        }
    }

    /// A conversation of `messages`, each counted once.
    pub fn from_messages(counter: Arc<dyn TokenCounter>, messages: Vec<Message>) -> Self {
        let mut conversation = Conversation::new(counter);
        conversation.replace(messages);
        conversation
    }

    /// The messages.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, consumed.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// True when there is no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The counter the messages are counted by.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// True when `counter` is this conversation's counter (the same instance), so that
    /// the cached counts are its `count_message` of each message.
    pub fn counted_by<C: TokenCounter + ?Sized>(&self, counter: &C) -> bool {
        counted_by(self, counter)
    }

    /// Each message's tokens (the counter's `count_message`), in order.
    pub fn counts(&self) -> &[usize] {
        &self.counts
    }

    /// The summed per-message counts of the messages in `range` (out-of-range bounds are
    /// clamped): one subtraction.
    pub fn tokens_in(&self, range: impl RangeBounds<usize>) -> usize {
        let n = self.messages.len();
        let start = match range.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        }
        .min(n);
        let end = match range.end_bound() {
            Bound::Included(&e) => e.saturating_add(1),
            Bound::Excluded(&e) => e,
            Bound::Unbounded => n,
        }
        .clamp(start, n);
        self.sums[end] - self.sums[start]
    }

    /// The conversation's tokens as its counter counts a conversation
    /// ([`TokenCounter::count_conversation`]): the summed cached counts for an additive
    /// counter; the calibrated counter's anchored count for that one.
    pub fn tokens(&self) -> usize {
        self.counter.count_conversation(self)
    }

    /// Appends a message, counting it (once).
    pub fn push(&mut self, message: Message) -> &Message {
        let tokens = self.counter.count_message(&message);
        self.counts.push(tokens);
        self.sums.push(self.sums[self.sums.len() - 1] + tokens);
        self.messages.push(message);
        &self.messages[self.messages.len() - 1]
    }

    /// Appends messages, counting each (once).
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.push(message);
        }
    }

    /// Keeps the first `len` messages (what is known of them is kept).
    pub fn truncate(&mut self, len: usize) {
        if len >= self.messages.len() {
            return;
        }
        self.messages.truncate(len);
        self.forget_from(len);
    }

    /// Drops what is known of the messages from `len` on (the messages themselves are
    /// the caller's to have removed).
    fn forget_from(&mut self, len: usize) {
        self.counts.truncate(len);
        self.sums.truncate(len + 1);
        self.chain_mut().truncate(len + 1);
        // Pairs and answers of the dropped messages are spread through the index: it
        // is rebuilt on the next question (a truncation follows a compaction, which is
        // linear anyway).
        self.reset_aging();
    }

    fn reset_aging(&mut self) {
        *self.aging.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()) = AgingIndex::default();
    }

    /// Replaces the whole conversation (after a compaction). What is known of the
    /// longest common prefix is kept; the other messages are counted once (through
    /// [`TokenCounter::count_some`], so a memoized counter's cache serves them).
    pub fn replace(&mut self, mut messages: Vec<Message>) {
        let common = self.messages.iter().zip(&messages).take_while(|(a, b)| a == b).count();
        let tail = messages.split_off(common);
        self.splice_tail(common, |_| tail);
    }

    /// Replaces the messages from `from` on with what `rebuild` makes of them (the
    /// transcript's compaction and repair): the first `from` messages and what is known
    /// of them are kept, the rebuilt tail is counted once (through
    /// [`TokenCounter::count_some`]). Nothing is copied: the tail is moved out and the
    /// rebuilt one moved in.
    pub(crate) fn splice_tail(&mut self, from: usize, rebuild: impl FnOnce(Vec<Message>) -> Vec<Message>) {
        let from = from.min(self.messages.len());
        if from < self.messages.len() {
            // What is known of an untouched conversation (an append) is kept whole.
            self.forget_from(from);
        }
        let tail = self.messages.split_off(from);
        let rebuilt = rebuild(tail);
        let counts = self.counter.count_some(&rebuilt);
        self.counts.extend(counts);
        self.messages.extend(rebuilt);
        self.sum_from(from);
    }

    /// The running sums from message `first` on, from the counts.
    fn sum_from(&mut self, first: usize) {
        self.sums.truncate(first + 1);
        for i in first..self.counts.len() {
            self.sums.push(self.sums[i] + self.counts[i]);
        }
    }

    /// Sets the content of the messages at these positions (the transcript's elision:
    /// a stub in place of a result), counting each edited message again; what is known
    /// of the messages before the first edited one is kept. Positions past the end are
    /// ignored.
    pub(crate) fn set_contents(&mut self, edits: impl IntoIterator<Item = (usize, Content)>) {
        let mut first = self.messages.len();
        for (at, content) in edits {
            let Some(message) = self.messages.get_mut(at) else {
                continue;
            };
            message.content = content;
            self.counts[at] = self.counter.count_message(message);
            first = first.min(at);
        }
        if first == self.messages.len() {
            return;
        }
        self.sum_from(first);
        self.chain_mut().truncate(first + 1);
        self.reset_aging();
    }

    /// Counts every message again with `counter`, which the conversation counts with
    /// from now on (the digests, which no counter changes, are kept).
    pub(crate) fn recount_with(&mut self, counter: Arc<dyn TokenCounter>) {
        self.counter = counter;
        self.counts = self.counter.count_some(&self.messages);
        self.sum_from(0);
        self.reset_aging();
    }

    /// [`crate::message::conversation_digest`] of the first `n` messages (`None` past the
    /// end): one finalization once the prefix was digested; the first time, each message
    /// not digested yet is digested once.
    pub fn prefix_digest(&self, n: usize) -> Option<String> {
        self.prefix_state(n).map(|state| lower_hex(&state.finalize().into()))
    }

    /// [`Conversation::prefix_digest`] of the whole conversation.
    pub fn digest(&self) -> String {
        self.prefix_digest(self.messages.len()).unwrap_or_default()
    }

    /// The SHA-256 state over the joined digests of the first `n` messages (not
    /// finalized), extending the chain as needed.
    pub(crate) fn prefix_state(&self, n: usize) -> Option<Sha256> {
        if n > self.messages.len() {
            return None;
        }
        let mut chain = self.chain();
        while chain.len() <= n {
            let i = chain.len() - 1;
            let mut state = chain[i].clone();
            if i > 0 {
                state.update(b"\n");
            }
            state.update(message_digest_hex(&self.messages[i]));
            chain.push(state);
        }
        Some(chain[n].clone())
    }

    /// Runs `f` on the aging index, first extended to every message.
    pub(crate) fn with_aging_index<R>(&self, f: impl FnOnce(&mut AgingIndex) -> R) -> R {
        let mut index = lock(&self.aging);
        index.extend(&self.messages);
        f(&mut index)
    }

    fn chain(&self) -> MutexGuard<'_, Vec<Sha256>> {
        lock(&self.chain)
    }

    fn chain_mut(&mut self) -> &mut Vec<Sha256> {
        self.chain.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The mutex's value, poisoned or not: what it guards is a cache that every method
/// leaves consistent between its steps, and a panic elsewhere must not disable it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| {
        mutex.clear_poison();
        poisoned.into_inner()
    })
}

/// What the counters read of a conversation (see [`ConversationView`]).
impl ConversationView for Conversation {
    fn messages(&self) -> &[Message] {
        Conversation::messages(self)
    }

    fn counter(&self) -> &Arc<dyn TokenCounter> {
        Conversation::counter(self)
    }

    fn tokens_from(&self, from: usize) -> usize {
        self.tokens_in(from..)
    }

    fn prefix_digest(&self, n: usize) -> Option<String> {
        Conversation::prefix_digest(self, n)
    }

    fn prefix_state(&self, n: usize) -> Option<Sha256> {
        Conversation::prefix_state(self, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::HeuristicCounter;
    use crate::message::conversation_digest;

    #[test]
    fn a_poisoned_chain_is_recovered() {
        let conversation = Arc::new(Conversation::from_messages(
            Arc::new(HeuristicCounter),
            vec![Message::user("a"), Message::assistant("b")],
        ));
        let c = Arc::clone(&conversation);
        let joined = std::thread::spawn(move || {
            let _guard = c.chain.lock();
            panic!("poison the chain while holding it");
        })
        .join();
        assert!(joined.is_err());
        assert_eq!(conversation.digest(), conversation_digest(conversation.messages()));
    }
}
