//! Whether a pass should run now, and the cost policy's decision on an elision epoch
//! below the trigger.
//!
//! The question is asked before every request of an agent loop, so its cost is the
//! loop's per-round overhead. Over the trigger the answer is one comparison. Below it,
//! with aging on, the answer needs the eligible results and what stubbing them would
//! cost and save: asked of a slice that is work proportional to the conversation every
//! round; asked of a [`Conversation`] it reads the conversation's
//! [`crate::plan::AgingIndex`] (each message learned once) and counts only the stubs of
//! newly eligible results. Both paths take the same decision: the rule lives once, in
//! the planning core.

use super::{CompactOptions, Compactor};
use crate::conversation::Conversation;
use crate::count::{ConversationCount, TokenCounter};
use crate::message::Message;
use crate::plan::policy::{ReceiptInput, horizon_of_turns};
use crate::plan::{self, CostReceipt, Elision, EpochDecision, Pairs};

impl Compactor {
    /// True when a pass should run now: the conversation is over the trigger (strictly),
    /// or, with aging on, the eligible results (before the recent window as the pass fits
    /// it to `max_recent_tokens`) add up to a whole epoch
    /// ([`CompactorConfig::epoch_chars`](super::CompactorConfig::epoch_chars)) and that epoch pays for the cache write it
    /// causes ([`Compactor::epoch_decision`]).
    pub fn needs_compaction(&self, messages: &[Message]) -> bool {
        let tokens = self.counter.count_messages(messages);
        if tokens > self.config.trigger() {
            return true;
        }
        self.epoch_decision(messages, tokens)
            .is_some_and(|(decision, _)| decision.runs())
    }

    /// [`Compactor::needs_compaction`] of a [`Conversation`]: its tokens are the
    /// counter's [`TokenCounter::count_conversation`] (cached counts, the calibrated
    /// anchor checked by prefix digest), and with aging on the epoch check reads the
    /// conversation's aging index ([`Compactor::epoch_decision_in`]), so a round costs
    /// its new messages, not the conversation.
    pub fn needs_compaction_in(&self, conversation: &Conversation) -> bool {
        let tokens = self.counter.count_conversation(conversation);
        if tokens > self.config.trigger() {
            return true;
        }
        self.epoch_decision_in(conversation, tokens)
            .is_some_and(|(decision, _)| decision.runs())
    }

    /// [`Compactor::epoch_decision`] of a [`Conversation`], the same decision and receipt:
    /// read from the conversation's aging index when the compactor's counter can count the
    /// stubbed copy from the conversation's cached counts
    /// ([`TokenCounter::conversation_count`]: an additive counter that counted it, or the
    /// calibrated counter over an additive fallback), each message's facts learned once;
    /// else the slice path.
    pub fn epoch_decision_in(
        &self,
        conversation: &Conversation,
        tokens: usize,
    ) -> Option<(EpochDecision, CostReceipt)> {
        self.epoch_decision_counted(conversation, tokens, self.counter.as_ref())
    }

    /// [`Compactor::epoch_decision_in`] with every count by `counter` (the counter the
    /// pass would run with).
    pub(crate) fn epoch_decision_counted(
        &self,
        conversation: &Conversation,
        tokens: usize,
        counter: &dyn TokenCounter,
    ) -> Option<(EpochDecision, CostReceipt)> {
        if !self.config.age_observations {
            return None;
        }
        let options = CompactOptions::default();
        let anchor = match counter.conversation_count(conversation) {
            ConversationCount::Sum => None,
            // A bill of one message or none would anchor a one-message list too (the
            // window fit counts messages one by one): rare enough for the slice path.
            ConversationCount::Anchored { messages, billed } if messages >= 2 => Some((messages, billed)),
            _ => return self.epoch_decision_with(conversation.messages(), tokens, counter, &options),
        };
        let messages = conversation.messages();
        let counts = conversation.counts();
        conversation.with_aging_index(|index| {
            // The window as the pass would fit it: read from its start to the end only,
            // unless it is over its token cap (then the pass's own fit, which reads more).
            let start = plan::recent_start(messages, index.pairs(), self.config.keep_recent);
            let cap = self.config.recent_cap(self.config.target());
            let cut = if conversation.tokens_in(start..) <= cap {
                start.checked_sub(1)
            } else {
                let layout = plan::layout_with(messages, index.pairs(), self.config.keep_recent);
                let (layout, _) = self.fit_recent_counted(messages, index.pairs(), layout, counts, counter, &options);
                layout.cut
            };
            let found = index.eligible_sums(messages, counts, cut?, self.aging_rules(), counter);
            if found.chars < self.config.epoch_chars() {
                return None;
            }
            // The receipt `CostReceipt::of_pass` would write for the stubbed copy: the
            // cache is kept up to the first stub; each stub changes its message's count.
            // Anchored on a bill, the conversation (and a copy that keeps the billed
            // prefix) counts the bill plus the counts after it; a copy that changes the
            // billed prefix counts the sum. The stubs are all at or after `first`, so
            // their counts are part of what is summed after the bill or in the sum.
            let first = found.first?;
            let stubbed = |counted: usize| counted.saturating_sub(found.tokens).saturating_add(found.stub_tokens);
            let (before, kept, after) = match anchor {
                // Saturating, as the counter's own count is: a bill is the provider's number.
                Some((n, billed)) if first >= n => (
                    billed.saturating_add(conversation.tokens_in(n..)),
                    billed.saturating_add(conversation.tokens_in(n..first)),
                    billed.saturating_add(stubbed(conversation.tokens_in(n..))),
                ),
                Some((n, billed)) => (
                    billed.saturating_add(conversation.tokens_in(n..)),
                    conversation.tokens_in(..first),
                    stubbed(conversation.tokens_in(..)),
                ),
                None => (
                    conversation.tokens_in(..),
                    conversation.tokens_in(..first),
                    stubbed(conversation.tokens_in(..)),
                ),
            };
            if after >= before {
                return None;
            }
            let policy = &self.config.cost_policy;
            let rounds = horizon_of_turns(policy, index.assistant_turns(), tokens, self.config.trigger());
            let receipt = CostReceipt::compute(
                &ReceiptInput {
                    tokens_before: before,
                    tokens_after: after,
                    cached_prefix_kept: kept,
                    rounds,
                    ..ReceiptInput::default()
                },
                policy,
            );
            Some(self.decide(receipt))
        })
    }

    /// The cost policy's decision on the elision epoch due below the trigger, and the
    /// receipt it was made on; `None` when no epoch is due (aging off, the pool short of
    /// an epoch, or stubbing would not shrink the conversation). `tokens` is the
    /// conversation's count.
    pub fn epoch_decision(&self, messages: &[Message], tokens: usize) -> Option<(EpochDecision, CostReceipt)> {
        self.epoch_decision_with(messages, tokens, self.counter.as_ref(), &CompactOptions::default())
    }

    /// [`Compactor::epoch_decision`] with the receipt counted by `counter` (a per-call
    /// override: every count of a plan uses the invocation's counter), for a pass run
    /// with `options`.
    pub(crate) fn epoch_decision_with(
        &self,
        messages: &[Message],
        tokens: usize,
        counter: &dyn TokenCounter,
        options: &CompactOptions,
    ) -> Option<(EpochDecision, CostReceipt)> {
        if !self.config.age_observations {
            return None;
        }
        let pairs = Pairs::build(messages);
        let layout = plan::layout_with(messages, &pairs, self.config.keep_recent);
        // The window as the pass will fit it to `max_recent_tokens`: what it shrinks off
        // is before the cut, and aged by the pass, so the decision must see it too.
        let (layout, _) = self.fit_recent(messages, &pairs, layout, counter, options);
        let eligible = plan::eligible(messages, &pairs, &layout, self.aging_rules());
        if plan::reclaimable_pool(&eligible) < self.config.epoch_chars() {
            return None;
        }
        let elisions: Vec<Elision> = eligible.into_iter().map(|e| self.elision(messages, e)).collect();
        let aged = plan::apply_elisions(messages, &elisions);
        let policy = &self.config.cost_policy;
        let rounds = plan::policy::horizon(policy, messages, tokens, self.config.trigger());
        let receipt = CostReceipt::of_pass(messages, &aged, counter, (0, 0), rounds, policy);
        if receipt.tokens_after >= receipt.tokens_before {
            return None;
        }
        Some(self.decide(receipt))
    }

    /// The cost policy's decision on an epoch priced by `receipt` (both paths end here).
    fn decide(&self, receipt: CostReceipt) -> (EpochDecision, CostReceipt) {
        let decision = plan::policy::decide_epoch(&receipt, &self.config.cost_policy);
        tracing::debug!(
            ?decision,
            net_cost = receipt.net_cost,
            rounds = receipt.rounds,
            "epoch decision"
        );
        (decision, receipt)
    }
}
