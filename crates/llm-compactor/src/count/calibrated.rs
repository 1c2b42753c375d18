//! The calibrated usage counter: the provider's last bill plus a count of what came
//! after it.
//!
//! No local tokenizer knows what a provider will bill: it adds tool declarations, hidden
//! system text and its own framing, and for most models its tokenizer is not public. The
//! provider tells us, though, after every call: `prompt_tokens` for the conversation it
//! was sent. So the counter an agent loop should hold keeps ONE record of the last bill
//! (message count N, billed prompt tokens P, the digest of those N messages, the model)
//! and counts a conversation as `P + fallback(m[N..])` while the conversation still
//! starts with exactly those N messages and the model is the same. A list that does not
//! start with them (a compaction or an elision rewrote the prefix, a shorter list, a
//! compactor's candidate) is counted with the fallback alone: a stale anchor is worse
//! than arithmetic. The record itself is kept until the next bill replaces it (or a bill
//! from another model forgets it): counting is a question and must not change the next
//! answer. It used to forget the record on the first list that did not match, so the
//! compactor's epoch decision, which counts a stubbed copy of the conversation, wiped
//! the loop's calibration and gave a different receipt when asked twice.
//!
//! The counter is shared (`Arc<dyn TokenCounter>`) between the loop, which records bills,
//! and the compactor, which counts; the record sits behind a `Mutex`. A poisoned lock is
//! recovered (the record is a plain value, never left half-written).
//!
//! Per round the counter must not redo work proportional to the whole conversation at
//! SHA-256 speed (that was four SHA-256 passes over the canonical JSON of the billed
//! prefix per round, ~270 ms at 1M tokens). So beside the record it keeps a ledger: each
//! recorded message's fast fingerprint (see `fingerprint.rs`) and the SHA-256 state over
//! the newline-joined message digests. The anchor check compares fingerprints (a hash
//! pass at GB/s, no JSON, no SHA), and a new bill over a conversation that extends the
//! recorded one computes the message digests of the new messages only, continuing the
//! saved SHA-256 state; the recorded [`conversation_digest`] is the same value as a
//! from-scratch computation.
//!
//! Over a [`crate::Conversation`] (what `ContextManager` keeps) a round is constant-time in the
//! conversation's length: the anchor check compares the recorded digest with the
//! conversation's chained prefix digest (one SHA-256 finalization), the new messages'
//! counts are the conversation's cached ones, and a bill extends the ledger by the new
//! messages only.

use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use foldhash::quality::RandomState;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::count::fingerprint::hash_message;
use crate::count::view::{ConversationView, counted_by};
use crate::count::{ConversationCount, HeuristicCounter, TokenCounter};
use crate::message::Message;
#[cfg(doc)]
use crate::message::conversation_digest;
use crate::message::digest::{lower_hex, message_digest_hex};
use crate::usage::Usage;

/// The one bill the calibrated counter remembers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CalibrationRecord {
    /// How many messages were sent (N).
    pub messages: usize,
    /// The prompt tokens billed for them (P), cached ones included.
    pub billed_prompt_tokens: u64,
    /// [`conversation_digest`] of those N messages.
    pub digest: String,
    /// The model that billed them.
    pub model: String,
}

/// `P + fallback(m[N..])` anchored on the last bill; the fallback alone otherwise.
///
/// ```
/// use std::sync::Arc;
/// use llm_compactor::count::{CalibratedCounter, TokenCounter};
/// use llm_compactor::{Message, Usage};
///
/// let counter = Arc::new(CalibratedCounter::new());
/// let mut conversation = vec![Message::system("be brief"), Message::user("hi")];
/// counter.record(&conversation, "gpt-4o", Some(1234));
/// conversation.push(Message::assistant("hello")); // heuristic: 8 + ceil(5 / 4) = 10
/// assert_eq!(counter.count_messages(&conversation), 1234 + 10);
///
/// // The loop reports the next call's usage; a usage report works the same way.
/// counter.record_usage(&conversation, "gpt-4o", &Usage { input_tokens: 1300, ..Usage::default() });
/// assert_eq!(counter.count_messages(&conversation), 1300);
/// ```
pub struct CalibratedCounter {
    fallback: Arc<dyn TokenCounter>,
    keys: RandomState,
    record: Mutex<Option<Anchored>>,
}

/// The record and its ledger, always replaced together.
#[derive(Clone)]
struct Anchored {
    record: CalibrationRecord,
    /// The fingerprint of each of the `record.messages` recorded messages.
    fingerprints: Arc<Vec<u64>>,
    /// SHA-256 fed with the newline-joined digests of those messages (not finalized).
    joined: Sha256,
}

impl Default for CalibratedCounter {
    fn default() -> Self {
        CalibratedCounter::new()
    }
}

impl std::fmt::Debug for CalibratedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CalibratedCounter")
            .field("fallback", &self.fallback.name())
            .field("record", &self.calibration())
            .finish()
    }
}

impl CalibratedCounter {
    /// A counter with no record, falling back to the [`HeuristicCounter`].
    pub fn new() -> Self {
        CalibratedCounter::with_fallback(Arc::new(HeuristicCounter))
    }

    /// A counter with no record, falling back to `fallback` (for example an exact BPE
    /// counter, memoized).
    pub fn with_fallback(fallback: Arc<dyn TokenCounter>) -> Self {
        CalibratedCounter {
            fallback,
            keys: RandomState::default(),
            record: Mutex::new(None),
        }
    }

    /// The fallback counter.
    pub fn fallback(&self) -> &Arc<dyn TokenCounter> {
        &self.fallback
    }

    /// The current record, if any.
    pub fn calibration(&self) -> Option<CalibrationRecord> {
        self.lock().as_ref().map(|a| a.record.clone())
    }

    fn fingerprint(&self, message: &Message) -> u64 {
        let mut hasher = self.keys.build_hasher();
        hash_message(message, &mut hasher);
        hasher.finish()
    }

    /// The ledger of `messages`: their fingerprints and the SHA-256 state over their
    /// joined digests, continuing `previous` when `messages` extends what it recorded
    /// (only the new messages are digested then).
    fn ledger(&self, messages: &[Message], previous: Option<&Anchored>) -> (Arc<Vec<u64>>, Sha256) {
        let fingerprints: Arc<Vec<u64>> = Arc::new(messages.iter().map(|m| self.fingerprint(m)).collect());
        let (mut joined, from) = match previous {
            Some(p) if fingerprints.starts_with(&p.fingerprints) => (p.joined.clone(), p.fingerprints.len()),
            _ => (Sha256::new(), 0),
        };
        for (i, message) in messages.iter().enumerate().skip(from) {
            if i > 0 {
                joined.update(b"\n");
            }
            joined.update(message_digest_hex(message));
        }
        (fingerprints, joined)
    }

    /// Forgets the record.
    pub fn forget(&self) {
        *self.lock() = None;
    }

    /// Reports a model call: `messages` were sent to `model` and billed
    /// `billed_prompt_tokens` prompt tokens (cached ones included).
    ///
    /// With a bill, the record becomes this call. Without one (the provider sent no
    /// usage), the old record is kept, unless `model` is not its model, which forgets it.
    pub fn record(&self, messages: &[Message], model: &str, billed_prompt_tokens: Option<u64>) {
        match billed_prompt_tokens {
            Some(billed) => {
                // Digest outside the lock, continuing the current ledger when it can.
                let previous = self.lock().clone();
                let (fingerprints, joined) = self.ledger(messages, previous.as_ref());
                self.anchor_on(messages.len(), billed, model, fingerprints, joined);
            }
            None => {
                let mut record = self.lock();
                if record.as_ref().is_some_and(|a| a.record.model != model) {
                    tracing::debug!(
                        model,
                        "calibrated counter: model changed without usage, record forgotten"
                    );
                    *record = None;
                }
            }
        }
    }

    /// [`CalibratedCounter::record`] of a [`crate::Conversation`]: the record's digest is the
    /// conversation's chained prefix digest, and when the conversation extends the
    /// recorded one (checked by that digest) only the new messages are fingerprinted, so
    /// a round's bill costs its new messages, not the conversation.
    pub fn record_conversation(
        &self,
        conversation: &dyn ConversationView,
        model: &str,
        billed_prompt_tokens: Option<u64>,
    ) {
        let Some(billed) = billed_prompt_tokens else {
            return self.record(conversation.messages(), model, None);
        };
        let messages = conversation.messages();
        let previous = self.lock().take();
        let mut fingerprints = match previous {
            Some(p)
                if p.record.messages <= messages.len()
                    && conversation.prefix_digest(p.record.messages).as_deref() == Some(p.record.digest.as_str()) =>
            {
                let from = p.record.messages;
                let mut fingerprints = Arc::try_unwrap(p.fingerprints).unwrap_or_else(|shared| (*shared).clone());
                fingerprints.truncate(from);
                fingerprints
            }
            _ => Vec::with_capacity(messages.len()),
        };
        let from = fingerprints.len();
        fingerprints.extend(messages[from..].iter().map(|m| self.fingerprint(m)));
        let joined = conversation.prefix_state(messages.len()).unwrap_or_default();
        self.anchor_on(messages.len(), billed, model, Arc::new(fingerprints), joined);
    }

    /// Carries the record over an edit of the conversation: `old` (whose start the record
    /// anchors) became `new`. What the last bill held beyond the fallback's count of its
    /// messages (tool declarations, hidden framing, the fallback's own error) is kept as
    /// a synthetic record of `new`, so a conversation that forked is not counted with the
    /// fallback alone until its next bill (a request counted that way went out over its
    /// budget). The next real bill replaces it. Nothing happens without a matching record.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use llm_compactor::count::{CalibratedCounter, TokenCounter};
    /// use llm_compactor::Message;
    ///
    /// let counter = CalibratedCounter::new();
    /// let old = vec![Message::system("be brief"), Message::user("hi")];
    /// let raw = counter.count_messages(&old);
    /// counter.record(&old, "m", Some(raw as u64 + 5_000)); // 5,000 tokens of tools
    /// let new = vec![Message::system("be brief"), Message::user("hello there")];
    /// counter.rebase(&old, &new);
    /// assert_eq!(counter.count_messages(&new), counter.fallback().count_messages(&new) + 5_000);
    /// ```
    pub fn rebase(&self, old: &[Message], new: &[Message]) {
        let Some((n, billed)) = self.anchor(old) else {
            return;
        };
        let Some(model) = self.calibration().map(|r| r.model) else {
            return;
        };
        let overhead = billed as i64 - self.fallback.count_messages(&old[..n]) as i64;
        let estimate = (self.fallback.count_messages(new) as i64 + overhead).max(0) as u64;
        self.record(new, &model, Some(estimate));
    }

    /// Makes the bill of `messages` messages the record: its digest is `joined` finalized.
    fn anchor_on(&self, messages: usize, billed: u64, model: &str, fingerprints: Arc<Vec<u64>>, joined: Sha256) {
        let digest = lower_hex(&joined.clone().finalize().into());
        *self.lock() = Some(Anchored {
            record: CalibrationRecord {
                messages,
                billed_prompt_tokens: billed,
                digest,
                model: model.to_owned(),
            },
            fingerprints,
            joined,
        });
    }

    /// [`CalibratedCounter::record_conversation`] with an optional [`Usage`], as
    /// [`CalibratedCounter::record_optional_usage`] reads it.
    pub fn record_conversation_usage(&self, conversation: &dyn ConversationView, model: &str, usage: Option<&Usage>) {
        let billed = usage.and_then(|u| (!u.is_zero()).then_some(u.input_tokens));
        self.record_conversation(conversation, model, billed);
    }

    /// [`CalibratedCounter::record`] with a [`Usage`]: the billed prompt tokens are
    /// `usage.input_tokens`, which is OpenAI's `prompt_tokens` (cached included) and
    /// Anthropic's `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`.
    /// A zero usage is taken as "no usage reported".
    pub fn record_usage(&self, messages: &[Message], model: &str, usage: &Usage) {
        let billed = (!usage.is_zero()).then_some(usage.input_tokens);
        self.record(messages, model, billed);
    }

    /// [`CalibratedCounter::record`] with an optional [`Usage`] (a response that carried
    /// none keeps the record, unless the model changed).
    pub fn record_optional_usage(&self, messages: &[Message], model: &str, usage: Option<&Usage>) {
        match usage {
            Some(usage) => self.record_usage(messages, model, usage),
            None => self.record(messages, model, None),
        }
    }

    /// Counts `messages` about to be sent to `model`: a record for another model is
    /// forgotten first.
    pub fn count_for_model(&self, messages: &[Message], model: &str) -> usize {
        self.forget_other_model(model);
        self.count_messages(messages)
    }

    /// [`CalibratedCounter::count_for_model`] of a [`crate::Conversation`]: from its cached counts
    /// when this counter counted it (see [`TokenCounter::count_conversation`]).
    pub fn count_conversation_for_model(&self, conversation: &dyn ConversationView, model: &str) -> usize {
        self.forget_other_model(model);
        self.count_conversation(conversation)
    }

    fn forget_other_model(&self, model: &str) {
        let mut record = self.lock();
        if record.as_ref().is_some_and(|a| a.record.model != model) {
            tracing::debug!(model, "calibrated counter: model changed, record forgotten");
            *record = None;
        }
    }

    /// The anchor `(N, P)` when `messages` starts with the recorded prefix, else `None`
    /// (the record is kept: see the module docs). The prefix is compared by the
    /// recorded fingerprints, outside the lock, so concurrent counts do not serialize on
    /// it.
    fn anchor(&self, messages: &[Message]) -> Option<(usize, u64)> {
        let (current, fingerprints) = {
            let anchored = self.lock();
            let anchored = anchored.as_ref()?;
            (anchored.record.clone(), Arc::clone(&anchored.fingerprints))
        };
        let n = current.messages;
        if messages.len() >= n
            && messages[..n]
                .iter()
                .zip(fingerprints.iter())
                .all(|(m, &f)| self.fingerprint(m) == f)
        {
            return Some((n, current.billed_prompt_tokens));
        }
        None
    }

    /// [`CalibratedCounter::anchor`] of a conversation: the recorded digest against the
    /// conversation's chained prefix digest (constant time once the prefix is digested).
    fn anchor_conversation(&self, conversation: &dyn ConversationView) -> Option<(usize, u64)> {
        let current = self.lock().as_ref()?.record.clone();
        let n = current.messages;
        if conversation.prefix_digest(n).as_deref() == Some(current.digest.as_str()) {
            return Some((n, current.billed_prompt_tokens));
        }
        None
    }

    /// The fallback's tokens of `conversation.messages()[from..]`: the conversation's
    /// cached counts when this counter counted them (they are the fallback's per-message
    /// counts) and the fallback is additive.
    fn fallback_from(&self, conversation: &dyn ConversationView, from: usize) -> usize {
        if self.fallback.additive() && counted_by(conversation, self) {
            conversation.tokens_from(from)
        } else {
            self.fallback.count_messages(&conversation.messages()[from..])
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Anchored>> {
        self.record.lock().unwrap_or_else(|poisoned| {
            self.record.clear_poison();
            poisoned.into_inner()
        })
    }
}

fn saturating_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

impl TokenCounter for CalibratedCounter {
    fn name(&self) -> &str {
        "calibrated"
    }

    fn count_text(&self, text: &str) -> usize {
        self.fallback.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        self.fallback.count_message(message)
    }

    fn count_messages(&self, messages: &[Message]) -> usize {
        match self.anchor(messages) {
            Some((n, billed)) => saturating_usize(billed).saturating_add(self.fallback.count_messages(&messages[n..])),
            None => self.fallback.count_messages(messages),
        }
    }

    /// The bill already includes the tool declarations and context it was sent with, so
    /// an anchored request is `P + fallback(m[N..])`; an unanchored one is the
    /// fallback's whole request count.
    fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
        match self.anchor(messages) {
            Some((n, billed)) => saturating_usize(billed).saturating_add(self.fallback.count_messages(&messages[n..])),
            None => self.fallback.count_request(messages, tools, context),
        }
    }

    fn count_conversation(&self, conversation: &dyn ConversationView) -> usize {
        match self.anchor_conversation(conversation) {
            Some((n, billed)) => saturating_usize(billed).saturating_add(self.fallback_from(conversation, n)),
            None => self.fallback_from(conversation, 0),
        }
    }

    fn count_conversation_request(&self, conversation: &dyn ConversationView, tools: &[Value], context: &str) -> usize {
        match self.anchor_conversation(conversation) {
            Some((n, billed)) => saturating_usize(billed).saturating_add(self.fallback_from(conversation, n)),
            None if self.fallback.additive() && counted_by(conversation, self) => {
                conversation.tokens_from(0) + self.fallback.count_request_overhead(tools, context)
            }
            None => self.fallback.count_request(conversation.messages(), tools, context),
        }
    }

    fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
        self.fallback.count_request_overhead(tools, context)
    }

    fn additive(&self) -> bool {
        false
    }

    /// Anchored on the bill when the conversation starts with the billed prefix, else the
    /// sum: per message this counter is its fallback, and a list that does not start with
    /// the billed prefix is the fallback's sum (when the fallback is additive and this
    /// counter counted the conversation; otherwise opaque).
    fn conversation_count(&self, conversation: &dyn ConversationView) -> ConversationCount {
        if !(self.fallback.additive() && counted_by(conversation, self)) {
            return ConversationCount::Opaque;
        }
        match self.anchor_conversation(conversation) {
            Some((messages, billed)) => ConversationCount::Anchored {
                messages,
                billed: saturating_usize(billed),
            },
            None => ConversationCount::Sum,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_recovered() {
        let counter = Arc::new(CalibratedCounter::new());
        let messages = [Message::user("hi")];
        counter.record(&messages, "m", Some(42));
        let c = counter.clone();
        let joined = std::thread::spawn(move || {
            let _guard = c.record.lock();
            panic!("poison the record while holding it");
        })
        .join();
        assert!(joined.is_err() && counter.record.is_poisoned());
        assert_eq!(counter.count_messages(&messages), 42);
        assert!(!counter.record.is_poisoned());
    }
}
