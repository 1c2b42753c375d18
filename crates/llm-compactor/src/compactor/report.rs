//! [`PlanReport`]: what a pass would do, computed without doing it.
//!
//! `compactor plan` prints this: it changes nothing and calls nothing, so an operator can
//! see why a conversation does or does not need compaction, where the cut falls, what
//! aging would reclaim and what a hard trim would cost, before spending a request.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{CompactOptions, Compactor};
use crate::conversation::Conversation;
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::{self, AgingIndex, CostReceipt, Eligible, Pairs};

/// Why a pass is (or is not) needed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum NeedReason {
    /// The conversation is over the trigger.
    OverTrigger,
    /// Aging is on, the eligible pool is a whole epoch, and the epoch pays for the cache
    /// write it causes (or the cost policy does not gate epochs).
    ReclaimablePool,
    /// Aging is on and the eligible pool is a whole epoch, but the epoch would cost more
    /// than it saves ([`crate::plan::policy::decide_epoch`]): no pass, the cache is kept.
    EpochDoesNotPay,
    /// Neither.
    NotNeeded,
}

/// What a hard trim would do now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TrimPreview {
    /// The last index it would drop.
    pub cut_index: usize,
    /// How many messages it would drop.
    pub dropped: usize,
    /// The tokens after it.
    pub tokens_after: usize,
}

/// A dry run of a pass over a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PlanReport {
    /// The counter's name.
    pub counter: String,
    /// Messages in the conversation.
    pub messages: usize,
    /// Tokens now.
    pub tokens: usize,
    /// The context budget (or the per-call target, when one is given, for `exhausted`).
    pub budget: usize,
    /// `ceil(budget x trigger_ratio)`.
    pub trigger: usize,
    /// What a pass aims at (the per-call target, else `ceil(budget x target_ratio)`).
    pub target: usize,
    /// True when `needs_compaction` would answer true.
    pub needs_compaction: bool,
    /// Why.
    pub reason: NeedReason,
    /// The cut (-1 when there is none).
    pub cut_index: i64,
    /// The first index of the recent window.
    pub recent_start: usize,
    /// Messages in the recent window.
    pub recent_messages: usize,
    /// Sticky messages anywhere.
    pub sticky_messages: usize,
    /// Non-sticky messages before the cut: what a summary would replace.
    pub middle_messages: usize,
    /// True when aging is on.
    pub aging: bool,
    /// The results aging would stub now (empty with aging off).
    pub eligible: Vec<Eligible>,
    /// Their summed chars.
    pub reclaimable_pool: usize,
    /// What a hard trim would do (none without a middle).
    pub trim: Option<TrimPreview>,
    /// The cost receipt of the elision epoch due below the trigger (the pass that would
    /// run, or that the cost policy declines); `None` when no epoch is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_receipt: Option<CostReceipt>,
}

impl Compactor {
    /// A dry run of a pass over `messages` with `options`' target and counter. Pure: it
    /// makes no request, waits for nothing and changes nothing.
    pub fn plan(&self, messages: &[Message], options: &CompactOptions) -> PlanReport {
        let counter = options.counter.clone().unwrap_or_else(|| Arc::clone(&self.counter));
        if counter.additive() {
            // Each message counted once: the total is their sum, and the trim preview
            // reads the same counts instead of counting its suffix again.
            let counts = counter.count_each(messages);
            let tokens = counts.iter().sum();
            return self.plan_counted(messages, tokens, Some(&counts), counter, options, None);
        }
        let tokens = counter.count_messages(messages);
        self.plan_counted(messages, tokens, None, counter, options, None)
    }

    /// [`Compactor::plan`] of a [`Conversation`]: its tokens are the counter's
    /// [`TokenCounter::count_conversation`], and when the conversation was counted by
    /// that (additive) counter the trim preview is planned over its cached counts
    /// ([`plan::TrimSearch::known_counts`]): no message is counted again. With aging on, the pairs
    /// and the eligible results are read from the conversation's aging index
    /// ([`AgingIndex::eligible`]), which the epoch decision keeps from round to round: no
    /// call is paired or parsed again either. The report equals [`Compactor::plan`]'s of
    /// the same messages (`tests/aging_index.rs` checks it on every prefix of generated
    /// runs).
    pub fn plan_in(&self, conversation: &Conversation, options: &CompactOptions) -> PlanReport {
        let counter = options.counter.clone().unwrap_or_else(|| Arc::clone(&self.counter));
        let tokens = counter.count_conversation(conversation);
        let known = (counter.additive() && conversation.counted_by(counter.as_ref())).then(|| conversation.counts());
        if !self.config.age_observations {
            return self.plan_counted(conversation.messages(), tokens, known, counter, options, None);
        }
        // With aging on, the conversation's aging index (kept from round to round for the
        // epoch decision) gives the pairs and the eligible results.
        conversation.with_aging_index(|index| {
            self.plan_counted(conversation.messages(), tokens, known, counter, options, Some(index))
        })
    }

    fn plan_counted(
        &self,
        messages: &[Message],
        tokens: usize,
        known: Option<&[usize]>,
        counter: Arc<dyn TokenCounter>,
        options: &CompactOptions,
        index: Option<&AgingIndex>,
    ) -> PlanReport {
        let built;
        let pairs = match index {
            Some(index) => index.pairs(),
            None => {
                built = Pairs::build(messages);
                &built
            }
        };
        let layout = plan::layout_with(messages, pairs, self.config.keep_recent);
        // The window as the pass would fit it to `max_recent_tokens`.
        let (layout, _) = self.fit_recent(messages, pairs, layout, counter.as_ref(), options);
        let aging = self.config.age_observations;
        let eligible = match (aging, index) {
            (false, _) => Vec::new(),
            (true, Some(index)) => layout
                .cut
                .map_or_else(Vec::new, |cut| index.eligible(messages, cut, self.aging_rules())),
            (true, None) => plan::eligible(messages, pairs, &layout, self.aging_rules()),
        };
        let pool = plan::reclaimable_pool(&eligible);
        let trigger = self.config.trigger();
        let epoch = if tokens > trigger {
            None
        } else {
            self.epoch_decision_with(messages, tokens, counter.as_ref(), options)
        };
        let reason = if tokens > trigger {
            NeedReason::OverTrigger
        } else if let Some((decision, _)) = &epoch {
            if decision.runs() {
                NeedReason::ReclaimablePool
            } else {
                NeedReason::EpochDoesNotPay
            }
        } else {
            NeedReason::NotNeeded
        };
        let target = options.target.unwrap_or(self.config.target());
        let search = plan::TrimSearch::new(messages, pairs, &layout, target).ceiling(tokens);
        let trim = match known {
            Some(counts) => search.known_counts(counts).choose(counter.as_ref()),
            None => search.choose(counter.as_ref()),
        }
        .map(|t| TrimPreview {
            cut_index: t.cut_index,
            dropped: t.dropped,
            tokens_after: t.tokens,
        });
        PlanReport {
            counter: counter.name().to_owned(),
            messages: messages.len(),
            tokens,
            budget: options.target.unwrap_or(self.config.context_budget),
            trigger,
            target,
            needs_compaction: matches!(reason, NeedReason::OverTrigger | NeedReason::ReclaimablePool),
            reason,
            cut_index: layout.cut_index(),
            recent_start: layout.recent_start,
            recent_messages: messages.len() - layout.recent_start,
            sticky_messages: messages.iter().filter(|m| m.is_sticky()).count(),
            middle_messages: layout.middle.len(),
            aging,
            eligible,
            reclaimable_pool: pool,
            trim,
            epoch_receipt: epoch.map(|(_, receipt)| receipt),
        }
    }
}
