//! The one decision before a request: does a pass run now, and why; and where a pass
//! forced by a provider's context-length rejection aims.
//!
//! Two loops ask these questions — the library's [`crate::session::ContextManager`] and
//! the proxy's sessions — and they must answer alike, or a conversation the library keeps
//! inside its window overflows it behind the proxy. So the rules live here, once, and
//! both loops call them. They are asked of a [`Conversation`] whose messages are counted
//! as they arrive, so a round costs its new messages: over the trigger is a comparison of
//! cached sums, and an elision epoch reads the conversation's aging index
//! ([`Compactor::epoch_decision_in`]).

use serde::Serialize;

use super::Compactor;
use crate::conversation::Conversation;
use crate::count::TokenCounter;

/// Why a pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CompactionReason {
    /// The compactor asked for one (over the trigger, or an elision epoch is due), or the
    /// whole request is over the trigger.
    Threshold,
    /// The request would not fit the backend's usable room.
    Room,
    /// The provider rejected the request as too long.
    ContextLengthExceeded,
    /// A pass prepared in the background was installed at the trigger (see
    /// [`crate::session::PrepareOptions`]).
    Prepared,
}

/// One request, as the decision sees it: [`RequestFit::new`], then `with_room` /
/// `with_counter` where known.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct RequestFit<'a> {
    /// The conversation it carries, counted as its messages arrived.
    pub conversation: &'a Conversation,
    /// The whole request's tokens: the conversation, tool declarations and context.
    pub request_tokens: usize,
    /// The backend's usable room for it, when known.
    pub room: Option<usize>,
    /// The counter the pass would count with (a per-call override, as
    /// [`super::CompactOptions::counter`]); the compactor's own when `None`.
    pub counter: Option<&'a dyn TokenCounter>,
}

impl<'a> RequestFit<'a> {
    /// A request of `request_tokens` carrying `conversation`; no known room, the
    /// compactor's counter.
    pub fn new(conversation: &'a Conversation, request_tokens: usize) -> Self {
        Self {
            conversation,
            request_tokens,
            room: None,
            counter: None,
        }
    }

    /// The backend's usable room for the request (`None`: unknown).
    pub fn with_room(mut self, room: Option<usize>) -> Self {
        self.room = room;
        self
    }

    /// The counter the pass would count with (`None`: the compactor's).
    pub fn with_counter(mut self, counter: Option<&'a dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }
}

impl std::fmt::Debug for RequestFit<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestFit")
            .field("messages", &self.conversation.len())
            .field("request_tokens", &self.request_tokens)
            .field("room", &self.room)
            .field("counter", &self.counter.map(TokenCounter::name))
            .finish()
    }
}

impl Compactor {
    /// Why a pass should run before `request` is sent, or `None`: the request over the
    /// backend's room ([`CompactionReason::Room`]: the pass then aims at the room); else
    /// the request over the trigger, the conversation over it, or an elision epoch due
    /// that pays for the cache write it causes ([`CompactionReason::Threshold`]).
    pub fn pass_due(&self, request: &RequestFit<'_>) -> Option<CompactionReason> {
        if request.room.is_some_and(|room| request.request_tokens > room) {
            return Some(CompactionReason::Room);
        }
        let counter = request.counter.unwrap_or(self.counter.as_ref());
        let due = request.request_tokens > self.config.trigger() || self.door_due(request.conversation.messages()) || {
            let tokens = counter.count_conversation(request.conversation);
            tokens > self.config.trigger()
                || self
                    .epoch_decision_counted(request.conversation, tokens, counter)
                    .is_some_and(|(decision, _)| decision.runs())
        };
        due.then_some(CompactionReason::Threshold)
    }

    /// The target of a pass forced by a provider's context-length rejection of a request
    /// our counter put at `request_tokens`: the usable `room` (the compactor's target
    /// without one), and at most three quarters of what was sent (the rejection proves
    /// the count too low).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use llm_compactor::{Compactor, CompactorConfig, count::HeuristicCounter};
    /// let compactor = Compactor::new(CompactorConfig::builder(10_000).build().unwrap(), Arc::new(HeuristicCounter));
    /// assert_eq!(compactor.context_length_target(8_000, Some(7_000)), 6_000);
    /// assert_eq!(compactor.context_length_target(40_000, Some(7_000)), 7_000);
    /// ```
    pub fn context_length_target(&self, request_tokens: usize, room: Option<usize>) -> usize {
        room.unwrap_or_else(|| self.config.target())
            .min(request_tokens.saturating_mul(3) / 4)
    }

    /// The target of a pass a client's own compaction threshold triggered (OpenAI's
    /// `compact_threshold`, the request's count having reached it): below the threshold
    /// as the compactor's own target is below its trigger (the threshold scaled by
    /// `target_ratio / trigger_ratio`), and never above `configured` (the caller's
    /// target; the compactor's own when `None`), so that a client's threshold can lower
    /// where a pass aims but never raise it.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use llm_compactor::{Compactor, CompactorConfig, count::HeuristicCounter};
    /// let config = CompactorConfig::builder(100_000).trigger_ratio(0.8).target_ratio(0.4).build().unwrap();
    /// let compactor = Compactor::new(config, Arc::new(HeuristicCounter));
    /// assert_eq!(compactor.threshold_target(10_000, None), 5_000);
    /// assert_eq!(compactor.threshold_target(1_000_000, None), 40_000);
    /// assert_eq!(compactor.threshold_target(10_000, Some(3_000)), 3_000);
    /// ```
    pub fn threshold_target(&self, threshold: usize, configured: Option<usize>) -> usize {
        let scaled = (threshold as f64 * self.config.target_ratio / self.config.trigger_ratio).floor() as usize;
        scaled.min(configured.unwrap_or_else(|| self.config.target())).max(1)
    }
}
