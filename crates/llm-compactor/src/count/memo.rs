//! [`MemoCounter`]: per-message counts remembered between calls.
//!
//! An agent loop counts its conversation every round, and the conversation grows by one
//! turn per round; recounting it would tokenize the whole transcript each time
//! (quadratic over a run, and ~100 ms per round at 1M tokens with an exact BPE). The memo
//! caches each message's count under a fingerprint of the message, so a round costs the
//! tokenization of the new messages only.
//!
//! Why a fingerprint cache and not a prefix ledger (counts per position, reused while
//! the prefix is unchanged):
//!
//! - A ledger must still prove that the prefix is unchanged, which means looking at every
//!   message anyway (or trusting lengths or addresses, which is wrong the moment an
//!   elision rewrites a middle message in place).
//! - A compaction removes the middle and shifts every later position: a ledger would
//!   recount every kept turn, a fingerprint cache still hits the system prompt and the
//!   kept recent turns. The compactor's own candidate counts (aged, summarized, trimmed
//!   variants of one conversation) share most messages and hit too.
//!
//! The fingerprint is foldhash's quality variant (seeded randomly per memo) over every
//! field of the message that a counter can see (not its stable id, not its wire
//! `extras`: a wrapped counter must not read those, and none of this crate's do), plus
//! the content's length. Hashing runs at GB/s against tens of
//! MB/s for BPE, so a round costs one new message's tokenization plus a hash pass that is
//! two orders of magnitude cheaper than a recount (see `benches/counting.rs`). A 64-bit
//! collision among the few thousand messages of one conversation has odds around 1e-12;
//! a collision would cost a wrong count for one message, never a panic.
//!
//! Memory is bounded: after each [`TokenCounter::count_messages`] the cache holds exactly
//! the messages of that call (entries not seen in the last call are evicted). A single
//! [`TokenCounter::count_message`] reads the cache but does not fill it. A memo made with
//! [`MemoCounter::keeping_all`] keeps every count instead (the simulator's, which
//! replays one trajectory once per strategy).
//!
//! A memo made with [`MemoCounter::with_capacity`] keeps the most recently seen counts up
//! to a number of entries instead: for a counter shared by callers that count different
//! conversations in turn. One call holding exactly its own messages makes such callers
//! evict each other's counts: the proxy counts a client's whole history and then the
//! rewrite that stands for it, and a compaction pass counts the conversation and then
//! its candidates, so every pass tokenized the whole client history again (two thirds of
//! a Claude Code pass's time at a 40k budget). Its single counts fill the cache too (the
//! message a conversation counts as it arrives is counted again by the next pass).
//! [`crate::count::counter_by_name`] makes its memo this way.
//!
//! Only additive counters can be memoized message by message; over a non-additive one
//! (see [`TokenCounter::additive`]) the memo delegates every call unchanged.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use foldhash::quality::RandomState;
use serde_json::Value;

use crate::count::TokenCounter;
use crate::count::fingerprint::hash_message;
use crate::message::{Content, Message};

/// A message's cache key: a 64-bit fingerprint and the content's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    hash: u64,
    len: usize,
}

/// Hits and misses of a [`MemoCounter`] since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoStats {
    /// Messages whose count came from the cache.
    pub hits: u64,
    /// Messages the wrapped counter had to count.
    pub misses: u64,
    /// Messages in the cache now.
    pub entries: usize,
}

/// Remembers the wrapped counter's per-message counts; gives back its numbers exactly.
///
/// ```
/// use llm_compactor::count::{HeuristicCounter, MemoCounter, TokenCounter};
/// use llm_compactor::Message;
///
/// let memo = MemoCounter::new(HeuristicCounter);
/// let mut conversation = vec![Message::system("rules"), Message::user("task")];
/// assert_eq!(memo.count_messages(&conversation), HeuristicCounter.count_messages(&conversation));
/// conversation.push(Message::assistant("on it"));
/// let before = memo.stats().misses;
/// assert_eq!(memo.count_messages(&conversation), HeuristicCounter.count_messages(&conversation));
/// assert_eq!(memo.stats().misses - before, 1); // only the new message was counted
/// ```
pub struct MemoCounter<C> {
    inner: C,
    keys: RandomState,
    /// Each entry's count and the stamp of the last call that saw it.
    cache: Mutex<HashMap<Key, (usize, u64)>>,
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    /// What the cache keeps.
    policy: Keep,
}

/// What a [`MemoCounter`]'s cache keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// The messages of the last call ([`MemoCounter::new`]).
    LastCall,
    /// The most recently seen, up to this many entries, and at least the last call's
    /// messages ([`MemoCounter::with_capacity`]); single counts fill it too.
    Recent(usize),
    /// Every count ([`MemoCounter::keeping_all`]): nothing is evicted, and a single
    /// message's count fills the cache too.
    All,
}

impl Keep {
    /// A single message's count joins the cache.
    fn fills_on_single(self) -> bool {
        self != Keep::LastCall
    }
}

impl<C: TokenCounter> std::fmt::Debug for MemoCounter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoCounter")
            .field("inner", &self.inner.name())
            .field("stats", &self.stats())
            .finish()
    }
}

impl<C: TokenCounter> MemoCounter<C> {
    /// Memoizes `inner`.
    pub fn new(inner: C) -> Self {
        MemoCounter {
            inner,
            keys: RandomState::default(),
            cache: Mutex::new(HashMap::new()),
            generation: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            policy: Keep::LastCall,
        }
    }

    /// Memoizes `inner` and keeps the counts of the most recently seen messages, up to
    /// `entries` of them (never fewer than the last call's messages): for a counter
    /// shared by callers that count different conversations in turn (sessions of a
    /// proxy, a pass and its candidates), which [`MemoCounter::new`]'s cache of the last
    /// call alone would make evict each other's counts. An entry is a few dozen bytes.
    ///
    /// ```
    /// use llm_compactor::count::{HeuristicCounter, MemoCounter, TokenCounter};
    /// use llm_compactor::Message;
    ///
    /// let memo = MemoCounter::with_capacity(HeuristicCounter, 1_000);
    /// let history = vec![Message::user("a long history"), Message::assistant("of turns")];
    /// let rewrite = vec![Message::user("its summary")];
    /// memo.count_messages(&history);
    /// memo.count_messages(&rewrite);
    /// let before = memo.stats().misses;
    /// assert_eq!(memo.count_messages(&history), HeuristicCounter.count_messages(&history));
    /// assert_eq!(memo.stats().misses, before); // the history's counts were kept
    /// ```
    pub fn with_capacity(inner: C, entries: usize) -> Self {
        MemoCounter {
            policy: Keep::Recent(entries),
            ..MemoCounter::new(inner)
        }
    }

    /// Memoizes `inner` and keeps every count it learns (memory grows with the distinct
    /// messages seen): for a caller that replays one finite history many times, as the
    /// simulator does once per strategy, where the bounded memo would count the same
    /// messages again on every replay.
    pub fn keeping_all(inner: C) -> Self {
        MemoCounter {
            policy: Keep::All,
            ..MemoCounter::new(inner)
        }
    }

    /// The wrapped counter.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// Hits, misses and cache size.
    pub fn stats(&self) -> MemoStats {
        MemoStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            entries: self.lock().len(),
        }
    }

    /// Empties the cache.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn key(&self, message: &Message) -> Key {
        let mut hasher = self.keys.build_hasher();
        hash_message(message, &mut hasher);
        Key {
            hash: hasher.finish(),
            len: content_len(&message.content),
        }
    }

    /// Each message's count, from the cache or the wrapped counter; afterwards the cache
    /// holds exactly these messages. The cache is updated in place (stamped entries, and
    /// a sweep only when some entry was not seen), so a round that appends to the last
    /// call's conversation inserts its new messages and evicts nothing.
    ///
    /// With `evict` false (a piece of a conversation, [`TokenCounter::count_some`]) the
    /// new counts join the cache under the last call's stamp and nothing is evicted.
    fn remembered_counts(&self, messages: &[Message], evict: bool) -> Vec<usize> {
        let keys: Vec<Key> = messages.iter().map(|m| self.key(m)).collect();
        let mut counts: Vec<Option<usize>> = {
            let cache = self.lock();
            keys.iter().map(|k| cache.get(k).map(|e| e.0)).collect()
        };
        // Tokenize the misses outside the lock.
        let mut misses = 0u64;
        for (count, message) in counts.iter_mut().zip(messages) {
            if count.is_none() {
                *count = Some(self.inner.count_message(message));
                misses += 1;
            }
        }
        let counts: Vec<usize> = counts.into_iter().map(|c| c.unwrap_or_default()).collect();
        let mut cache = self.lock();
        if evict && self.policy != Keep::All {
            let stamp = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
            let mut seen = 0usize;
            for (key, &count) in keys.iter().zip(&counts) {
                if cache.insert(*key, (count, stamp)).is_none_or(|old| old.1 != stamp) {
                    seen += 1;
                }
            }
            match self.policy {
                Keep::Recent(entries) => evict_oldest(&mut cache, entries.max(seen), stamp),
                _ if cache.len() > seen => cache.retain(|_, entry| entry.1 == stamp),
                _ => {}
            }
        } else {
            let stamp = self.generation.load(Ordering::Relaxed);
            for (key, &count) in keys.iter().zip(&counts) {
                cache.entry(*key).or_insert((count, stamp));
            }
        }
        drop(cache);
        self.misses.fetch_add(misses, Ordering::Relaxed);
        self.hits.fetch_add(messages.len() as u64 - misses, Ordering::Relaxed);
        counts
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Key, (usize, u64)>> {
        self.cache.lock().unwrap_or_else(|poisoned| {
            self.cache.clear_poison();
            poisoned.into_inner()
        })
    }
}

impl<C: TokenCounter> TokenCounter for MemoCounter<C> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        let key = self.key(message);
        let cached = self.lock().get(&key).map(|e| e.0);
        match cached {
            Some(count) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                count
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                let count = self.inner.count_message(message);
                if self.policy.fills_on_single() {
                    let stamp = self.generation.load(Ordering::Relaxed);
                    let mut cache = self.lock();
                    // A bounded cache takes single counts while it has room (they share
                    // the last call's stamp, so a sweep could not tell them apart).
                    if !matches!(self.policy, Keep::Recent(cap) if cache.len() >= cap) {
                        cache.insert(key, (count, stamp));
                    }
                }
                count
            }
        }
    }

    fn count_messages(&self, messages: &[Message]) -> usize {
        if !self.inner.additive() {
            return self.inner.count_messages(messages);
        }
        self.remembered_counts(messages, true).iter().sum()
    }

    fn count_each(&self, messages: &[Message]) -> Vec<usize> {
        if !self.inner.additive() {
            return self.inner.count_each(messages);
        }
        self.remembered_counts(messages, true)
    }

    fn count_some(&self, messages: &[Message]) -> Vec<usize> {
        if !self.inner.additive() {
            return self.inner.count_some(messages);
        }
        self.remembered_counts(messages, false)
    }

    fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
        if !self.inner.additive() {
            return self.inner.count_request(messages, tools, context);
        }
        self.count_messages(messages) + self.inner.count_request_overhead(tools, context)
    }

    fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
        self.inner.count_request_overhead(tools, context)
    }

    fn additive(&self) -> bool {
        self.inner.additive()
    }
}

/// Evicts the entries seen longest ago once the cache holds more than `cap`, down to
/// about three quarters of it (so a sweep runs once per quarter of `cap` new entries, not
/// on every call); entries stamped `current` are always kept.
fn evict_oldest(cache: &mut HashMap<Key, (usize, u64)>, cap: usize, current: u64) {
    if cache.len() <= cap {
        return;
    }
    let keep = (cap - cap / 4).max(1);
    let mut stamps: Vec<u64> = cache.values().map(|entry| entry.1).collect();
    // The `keep`-th newest stamp: entries as old as it go (fewer than `keep` are newer),
    // save the current call's.
    let (_, cutoff, _) = stamps.select_nth_unstable_by(keep - 1, |a, b| b.cmp(a));
    let cutoff = *cutoff;
    cache.retain(|_, entry| entry.1 > cutoff || entry.1 == current);
}

fn content_len(content: &Content) -> usize {
    match content {
        Content::Absent | Content::Null => 0,
        Content::Text(text) => text.len(),
        Content::Parts(parts) => parts.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::count::HeuristicCounter;
    use crate::message::Part;

    #[test]
    fn a_poisoned_cache_is_recovered() {
        let memo = Arc::new(MemoCounter::new(HeuristicCounter));
        let messages = [Message::user("hello"), Message::assistant("world")];
        assert_eq!(
            memo.count_messages(&messages),
            HeuristicCounter.count_messages(&messages)
        );
        let m = memo.clone();
        let joined = std::thread::spawn(move || {
            let _guard = m.cache.lock();
            panic!("poison the cache while holding it");
        })
        .join();
        assert!(joined.is_err() && memo.cache.is_poisoned());
        assert_eq!(
            memo.count_messages(&messages),
            HeuristicCounter.count_messages(&messages)
        );
        assert_eq!(memo.stats().entries, 2);
    }

    #[test]
    fn every_field_changes_the_fingerprint() {
        let memo = MemoCounter::new(HeuristicCounter);
        let base = Message::user("same text");
        let mut variants = vec![base.clone(), base.clone().sticky(), base.clone().at_depth(2)];
        let mut named = base.clone();
        named.name = Some("n".into());
        variants.push(named);
        let mut parts = base.clone();
        parts.content = Content::Parts(vec![Part::text("same text")]);
        variants.push(parts);
        let mut null = base.clone();
        null.content = Content::Null;
        variants.push(null);
        let mut absent = base.clone();
        absent.content = Content::Absent;
        variants.push(absent);
        let mut keys: Vec<Key> = variants.iter().map(|m| memo.key(m)).collect();
        keys.sort_by_key(|k| (k.hash, k.len));
        keys.dedup();
        assert_eq!(keys.len(), variants.len());
        assert_eq!(memo.key(&base), memo.key(&base.clone()));
        // What no counter reads does not split the cache.
        let mut extra = base.clone().with_id("x");
        extra.extras.insert("k".into(), Value::from(1));
        assert_eq!(memo.key(&base), memo.key(&extra));
    }
}
