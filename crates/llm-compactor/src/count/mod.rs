//! Token counting.
//!
//! Counting is a trait, [`TokenCounter`], because the right number depends on who asks:
//! the heuristic is free and tokenizer-agnostic, the BPE counters are exact for OpenAI's
//! encodings, and the calibrated usage counter is anchored on what the provider actually
//! billed. The compactor proves every compaction with the counter it was given (or the
//! per-call override), and never mixes units of two tokenizers.
//!
//! The pieces compose through `Arc<dyn TokenCounter>`:
//!
//! - [`HeuristicCounter`]: `8 + ceil(chars / 4)` per message.
//! - [`BpeCounter`] (feature `bpe`): exact `o200k_base` / `cl100k_base` counts with the
//!   OpenAI chat framing of [`framing`].
//! - [`CalibratedCounter`]: the provider's last bill plus a fallback count of what came
//!   after it; the counter an agent loop should share with its compactor.
//! - [`MemoCounter`]: remembers per-message counts so that a conversation growing by one
//!   turn per round costs one message's tokenization, not a recount.
//! - [`RequestCounter`]: the complete-request adapter (conversation + tool declarations +
//!   runtime context) a loop passes to the compactor as a per-call override.
//! - [`counter_by_name`]: the factory behind `--counter heuristic|o200k|cl100k`.

use serde_json::Value;

use crate::message::Message;

/// Counts tokens of text, messages and whole requests.
///
/// Implementations are `Send + Sync` so one instance can be shared (behind an
/// `Arc<dyn TokenCounter>`) by the agent loop and the compactor: the loop's counter is the
/// one that has been calibrated against the provider's bills.
///
/// Contract for wrappers: for every counter,
/// `count_request(m, tools, context) == count_messages(m) + count_request_overhead(tools, context)`
/// whenever [`TokenCounter::additive`] is true, and an additive counter's
/// `count_messages(m)` is the sum of `count_message` over `m`. Wrappers
/// ([`MemoCounter`], [`RequestCounter`]) rely on it to give back the wrapped counter's
/// numbers exactly.
pub trait TokenCounter: Send + Sync {
    /// A short name for reports (`heuristic`, `o200k`, `cl100k`, `calibrated`, ...).
    fn name(&self) -> &str;

    /// Tokens of a bare text.
    fn count_text(&self, text: &str) -> usize;

    /// Tokens of one message, framing overhead included.
    fn count_message(&self, message: &Message) -> usize;

    /// Tokens of a conversation. The default sums [`TokenCounter::count_message`];
    /// counters that are not additive (the calibrated one) override it.
    fn count_messages(&self, messages: &[Message]) -> usize {
        messages.iter().map(|m| self.count_message(m)).sum()
    }

    /// Each message's tokens, in order: `count_message` of each. A memo overrides it to
    /// remember the counts, so that planning which counts every message once (the hard
    /// trim's prefix sums) fills the same cache a whole-conversation count does.
    fn count_each(&self, messages: &[Message]) -> Vec<usize> {
        messages.iter().map(|m| self.count_message(m)).collect()
    }

    /// Each message's tokens, like [`TokenCounter::count_each`], for a caller that counts
    /// one piece of a conversation at a time (the hard trim counts from the end only as
    /// far back as it needs): a memo remembers these counts without forgetting the
    /// others, where `count_each` leaves it holding exactly the messages of the call.
    fn count_some(&self, messages: &[Message]) -> Vec<usize> {
        self.count_each(messages)
    }

    /// Tokens of a [`crate::Conversation`]. The default reads the conversation's cached counts
    /// (one subtraction) when this additive counter is the one that counted them
    /// ([`crate::Conversation::counted_by`]), and counts its messages otherwise. The calibrated
    /// counter checks its anchor against the conversation's chained prefix digest, in
    /// constant time per round.
    fn count_conversation(&self, conversation: &dyn ConversationView) -> usize {
        if self.additive() && counted_by(conversation, self) {
            conversation.tokens_from(0)
        } else {
            self.count_messages(conversation.messages())
        }
    }

    /// [`TokenCounter::count_request`] of a [`crate::Conversation`], from its cached counts as
    /// [`TokenCounter::count_conversation`] does.
    fn count_conversation_request(&self, conversation: &dyn ConversationView, tools: &[Value], context: &str) -> usize {
        if self.additive() && counted_by(conversation, self) {
            conversation.tokens_from(0) + self.count_request_overhead(tools, context)
        } else {
            self.count_request(conversation.messages(), tools, context)
        }
    }

    /// Tokens of a complete request: the conversation, the tool declarations it carries
    /// and any runtime context sent beside it.
    fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
        self.count_messages(messages) + self.count_request_overhead(tools, context)
    }

    /// What a request adds to its conversation: the tool declarations (as their compact
    /// JSON array) and the runtime context. The default counts both as text; the BPE
    /// counters add the reply priming of the chat format.
    fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
        let tools_tokens = if tools.is_empty() {
            0
        } else {
            self.count_text(&serde_json::to_string(tools).unwrap_or_default())
        };
        let context_tokens = if context.is_empty() {
            0
        } else {
            self.count_text(context)
        };
        tools_tokens + context_tokens
    }

    /// How this counter counts `conversation` and the lists derived from it (a stubbed
    /// copy, a prefix), in terms of the conversation's cached per-message counts: what lets
    /// a caller count such a variant without building it. The default: the sum of the
    /// counts when this additive counter is the one that counted them, else
    /// [`ConversationCount::Opaque`]. The calibrated counter says where its bill anchors.
    fn conversation_count(&self, conversation: &dyn ConversationView) -> ConversationCount {
        if self.additive() && counted_by(conversation, self) {
            ConversationCount::Sum
        } else {
            ConversationCount::Opaque
        }
    }

    /// True when [`TokenCounter::count_messages`] is the sum of
    /// [`TokenCounter::count_message`] (and `count_request` is `count_messages` plus
    /// [`TokenCounter::count_request_overhead`]). Counters whose count of a conversation
    /// depends on the conversation as a whole (the calibrated counter, the request
    /// adapter) say `false`, and wrappers then delegate instead of summing.
    fn additive(&self) -> bool {
        true
    }
}

/// How a counter counts a [`crate::Conversation`] and the lists derived from it (copies whose
/// messages differ from some index on), in terms of the conversation's cached counts
/// ([`TokenCounter::conversation_count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConversationCount {
    /// The sum of the per-message counts.
    Sum,
    /// A list that starts with the conversation's first `messages` messages counts
    /// `billed` plus the per-message counts of the rest; any other list, the sum of its
    /// per-message counts (the calibrated counter anchored on a bill).
    Anchored {
        /// How many leading messages the bill covers.
        messages: usize,
        /// The tokens billed for them.
        billed: usize,
    },
    /// Neither: a list must be counted itself.
    Opaque,
}

/// A shared counter shows its name (so `Arc<dyn TokenCounter>` fits in `Debug` types).
impl std::fmt::Debug for dyn TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter").field("name", &self.name()).finish()
    }
}

#[cfg(feature = "bpe")]
mod ascii_pieces;
#[cfg(feature = "bpe")]
mod bpe;
#[cfg(feature = "bpe")]
mod bpe_pieces;
mod by_name;
mod calibrated;
#[cfg(feature = "bpe")]
mod encoding;
mod fingerprint;
pub mod framing;
#[cfg(feature = "bpe")]
mod heap_merge;
mod heuristic;
mod memo;
#[cfg(feature = "bpe")]
mod pretokenizer;
#[cfg(feature = "bpe")]
#[allow(dead_code)] // shared with build.rs: it writes with half of this file, the counter reads with the rest
mod rank_hash;
#[cfg(feature = "bpe")]
mod rank_table;
mod request;
mod view;

#[cfg(feature = "bpe")]
pub use bpe::BpeCounter;
pub use by_name::{COUNTER_NAMES, CounterByNameError, MEMO_ENTRIES, counter_by_name};
pub use calibrated::{CalibratedCounter, CalibrationRecord};
#[cfg(feature = "bpe")]
pub use encoding::Encoding;
pub use heuristic::{HeuristicCounter, MESSAGE_OVERHEAD, message_chars};
pub use memo::{MemoCounter, MemoStats};
pub use request::RequestCounter;
pub use view::{ConversationView, counted_by};

macro_rules! forward_token_counter {
    ($($wrapper:ty),*) => {$(
        /// Forwards every method to the pointee, so wrappers and `Arc<dyn TokenCounter>`
        /// compose.
        impl<T: TokenCounter + ?Sized> TokenCounter for $wrapper {
            fn name(&self) -> &str {
                (**self).name()
            }
            fn count_text(&self, text: &str) -> usize {
                (**self).count_text(text)
            }
            fn count_message(&self, message: &Message) -> usize {
                (**self).count_message(message)
            }
            fn count_messages(&self, messages: &[Message]) -> usize {
                (**self).count_messages(messages)
            }
            fn count_each(&self, messages: &[Message]) -> Vec<usize> {
                (**self).count_each(messages)
            }
            fn count_some(&self, messages: &[Message]) -> Vec<usize> {
                (**self).count_some(messages)
            }
            fn count_conversation(&self, conversation: &dyn ConversationView) -> usize {
                (**self).count_conversation(conversation)
            }
            fn count_conversation_request(&self, conversation: &dyn ConversationView, tools: &[Value], context: &str) -> usize {
                (**self).count_conversation_request(conversation, tools, context)
            }
            fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
                (**self).count_request(messages, tools, context)
            }
            fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
                (**self).count_request_overhead(tools, context)
            }
            fn additive(&self) -> bool {
                (**self).additive()
            }
            fn conversation_count(&self, conversation: &dyn ConversationView) -> ConversationCount {
                (**self).conversation_count(conversation)
            }
        }
    )*};
}

forward_token_counter!(std::sync::Arc<T>, Box<T>, &T);
