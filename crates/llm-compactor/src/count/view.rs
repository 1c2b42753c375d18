//! What a counter needs of a conversation it counts from cached counts: a view.
//!
//! A [`crate::Conversation`] keeps each message's count by its counter, running sums
//! and chained prefix digests, so that a counter can answer for the whole conversation
//! in constant time. The counters need only that much of it, so they ask for this small
//! trait, which `Conversation` implements, rather than for the type itself: the counters
//! stay leaves of the crate (the conversation depends on them, not they on it).

use std::sync::Arc;

use sha2::Sha256;

use super::TokenCounter;
use crate::message::Message;

/// A conversation with cached per-message counts, as a counter reads it.
pub trait ConversationView {
    /// The messages, in order.
    fn messages(&self) -> &[Message];

    /// The counter whose `count_message` of each message is cached.
    fn counter(&self) -> &Arc<dyn TokenCounter>;

    /// The summed cached counts of the messages from index `from` on (0 past the end).
    fn tokens_from(&self, from: usize) -> usize;

    /// [`crate::message::conversation_digest`] of the first `n` messages (`None` past the
    /// end).
    fn prefix_digest(&self, n: usize) -> Option<String>;

    /// The SHA-256 state over the joined digests of the first `n` messages, not
    /// finalized (what a calibration record keeps to extend its digest later).
    #[doc(hidden)]
    fn prefix_state(&self, n: usize) -> Option<Sha256>;
}

/// True when `counter` is the conversation's counter (the same instance), so that the
/// cached counts are its `count_message` of each message.
pub fn counted_by<C: TokenCounter + ?Sized>(conversation: &(impl ConversationView + ?Sized), counter: &C) -> bool {
    let ours = conversation.counter();
    std::ptr::addr_eq(Arc::as_ptr(ours), counter as *const C) && ours.name() == counter.name()
}
