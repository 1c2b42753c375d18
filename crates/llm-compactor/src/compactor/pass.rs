//! One compaction pass, start to finish: [`Compactor::compact`].

use std::sync::Arc;

use tracing::Instrument;

use super::events::CompactionEvent;
use super::result::{CompactionResult, Elision};
use super::{CompactError, CompactOptions, Compactor};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::{self, CostReceipt, Layout, Pairs};
use crate::usage::Usage;

impl Compactor {
    /// Runs one compaction pass (like a manual `/compact`: it compacts even below the
    /// trigger).
    ///
    /// The result always satisfies the validator (no orphan result, no unanswered kept
    /// call, sticky messages in order, recent window byte-identical apart from the
    /// results cut to fit `max_recent_tokens`) and, when changed, is smaller than the
    /// input unless `exhausted` says otherwise. An input that is already broken is
    /// repaired first (see [`crate::plan::plan_repairs`]; the repairs are listed in
    /// `repairs`), so the output never carries an orphan a provider would reject. A
    /// failing summarizer is not an error: the pass ends in the hard trim with
    /// `fallback: true`.
    ///
    /// # Errors
    /// Invalid options (a target of 0 tokens); an input no repair can make valid (a tool
    /// call id used twice), naming the message index.
    pub async fn compact(
        &self,
        messages: &[Message],
        options: CompactOptions,
    ) -> Result<CompactionResult, CompactError> {
        if options.target == Some(0) {
            return Err(CompactError::InvalidOptions(
                "target must be greater than 0 tokens".into(),
            ));
        }
        let repairs = plan::plan_repairs(messages).map_err(|e| CompactError::InvalidInput {
            index: e.index,
            problem: e.problem,
        })?;
        let round = self.next_round();
        let span = tracing::info_span!("compaction", round, messages = messages.len());
        async move {
            let counter = options.counter.clone().unwrap_or_else(|| Arc::clone(&self.counter));
            let before = counter.count_messages(messages);
            self.emit(CompactionEvent::CompactionStarted {
                tokens_before: before,
                messages: messages.len(),
                round,
            });
            let repaired;
            let input = if repairs.is_empty() {
                messages
            } else {
                for repair in &repairs {
                    tracing::warn!(?repair, "repaired a broken input conversation");
                }
                repaired = plan::apply_repairs(messages, &repairs);
                repaired.as_slice()
            };
            let pass_before = if repairs.is_empty() {
                before
            } else {
                counter.count_messages(input)
            };
            let mut result = self.run_pass(input, &options, &counter, pass_before).await;
            result.tokens_before = before;
            result.repairs = repairs;
            result.receipt = Some(self.receipt(messages, &result, counter.as_ref(), before));
            self.emit(CompactionEvent::CompactionDone {
                tokens_before: result.tokens_before,
                tokens_after: result.tokens_after,
                dropped: result.dropped,
                fallback: result.fallback,
                exhausted: result.exhausted,
                elisions: result.elisions.len(),
                round,
                receipt: result.receipt.clone().map(Box::new),
            });
            Ok(result)
        }
        .instrument(span)
        .await
    }

    async fn run_pass(
        &self,
        original: &[Message],
        options: &CompactOptions,
        counter: &Arc<dyn TokenCounter>,
        before: usize,
    ) -> CompactionResult {
        let limit = options.target.unwrap_or(self.config.context_budget);
        let pairs = Pairs::build(original);
        let layout = plan::layout_with(original, &pairs, self.config.keep_recent);
        // The recent window's token cap: shrink it, and cut what still does not fit.
        let (layout, truncations) = self.fit_recent(original, &pairs, layout, counter.as_ref(), options);
        let cut_input;
        let (input, before) = if truncations.is_empty() {
            (original, before)
        } else {
            cut_input = plan::apply_elisions(original, &truncation_elisions(&truncations));
            let count = counter.count_messages(&cut_input);
            (cut_input.as_slice(), count)
        };
        let unchanged = |elisions: Vec<Elision>, messages: Vec<Message>, tokens: usize| {
            unchanged_result(before, limit, elisions, messages, tokens)
        };
        let mut result = if layout.is_noop() {
            tracing::info!("nothing between the sticky prefix and the recent window: no-op");
            unchanged(Vec::new(), input.to_vec(), before)
        } else {
            self.reduce(input, &pairs, &layout, counter, options, before, limit)
                .await
        };
        if let Err(violation) = plan::validate(input, &result.messages, layout.recent_start) {
            // Unreachable by construction; never hand back a broken conversation.
            tracing::error!(%violation, "compaction result failed validation; returning the input unchanged");
            let (usage, attempts) = (result.usage, result.attempts);
            result = unchanged(Vec::new(), input.to_vec(), before);
            result.usage = usage;
            result.attempts = attempts;
        }
        if !truncations.is_empty() {
            let mut elisions = truncation_elisions(&truncations);
            elisions.append(&mut result.elisions);
            result.elisions = elisions;
            result.truncations = truncations;
        }
        result
    }

    /// Aging, then a summary, then the hard trim: the pass over a conversation that has
    /// a middle.
    #[allow(clippy::too_many_arguments)]
    async fn reduce(
        &self,
        input: &[Message],
        pairs: &Pairs,
        layout: &Layout,
        counter: &Arc<dyn TokenCounter>,
        options: &CompactOptions,
        before: usize,
        limit: usize,
    ) -> CompactionResult {
        let unchanged = |elisions: Vec<Elision>, messages: Vec<Message>, tokens: usize| {
            unchanged_result(before, limit, elisions, messages, tokens)
        };
        // Aging first: stub every eligible result, recount.
        let (aged, elisions, aged_count) = self.age(input, pairs, layout, counter.as_ref(), before);
        if !elisions.is_empty() && self.elision_suffices(aged_count, before, options) {
            tracing::info!(elisions = elisions.len(), aged_count, "elision-only pass");
            return unchanged(elisions, aged, aged_count);
        }

        let outcome = self.summarize_phase(&aged, layout, aged_count, counter, options).await;
        let mut result = if let Some(accepted) = outcome.accepted {
            // Every stub of the pass is reported, though the summary replaced them all.
            CompactionResult {
                messages: accepted.messages,
                summary: accepted.content,
                dropped: accepted.dropped,
                cut_index: layout.cut_index(),
                tokens_before: before,
                tokens_after: accepted.tokens,
                fallback: false,
                exhausted: accepted.tokens > limit,
                elisions,
                usage: Usage::default(),
                attempts: Vec::new(),
                receipt: None,
                repairs: Vec::new(),
                truncations: Vec::new(),
            }
        } else {
            self.trim(
                input,
                &aged,
                pairs,
                layout,
                elisions,
                aged_count,
                counter.as_ref(),
                options,
                before,
                limit,
            )
        };
        result.usage = outcome.usage;
        result.attempts = outcome.attempts;
        result
    }

    /// Whether an elision-only pass that leaves `aged_count` tokens is enough: under a
    /// per-call target, that target; below the trigger (an epoch or a manual pass), the
    /// trigger; at the trigger, the cost policy's choice ([`plan::policy::choose_at_trigger`]).
    fn elision_suffices(&self, aged_count: usize, before: usize, options: &CompactOptions) -> bool {
        let trigger = self.config.trigger();
        match options.target {
            Some(target) => aged_count <= target,
            None if before <= trigger => aged_count <= trigger,
            None => {
                plan::policy::choose_at_trigger(aged_count, self.config.target(), trigger, &self.config.cost_policy)
                    == plan::TriggerAction::ElideOnly
            }
        }
    }

    /// The pass's cost receipt. Its horizon: below the trigger, the requests until the
    /// conversation left alone would reach it (the epoch gate's horizon); at the trigger,
    /// the configured expected remaining rounds.
    fn receipt(
        &self,
        input: &[Message],
        result: &CompactionResult,
        counter: &dyn TokenCounter,
        before: usize,
    ) -> CostReceipt {
        let policy = &self.config.cost_policy;
        let trigger = self.config.trigger();
        let rounds = if before > trigger {
            policy.expected_remaining_rounds
        } else {
            plan::policy::horizon(policy, input, before, trigger)
        };
        let summarizer = (result.usage.input_tokens, result.usage.output_tokens);
        CostReceipt::of_pass(input, &result.messages, counter, summarizer, rounds, policy)
    }

    /// The layout with its recent window fitted to the token cap, and the recent results
    /// cut to fit.
    pub(crate) fn fit_recent(
        &self,
        input: &[Message],
        pairs: &Pairs,
        layout: Layout,
        counter: &dyn TokenCounter,
        options: &CompactOptions,
    ) -> (Layout, Vec<plan::Truncation>) {
        let tokens: Vec<usize> = input
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if i >= layout.recent_start {
                    count_one(counter, m)
                } else {
                    0
                }
            })
            .collect();
        self.fit_recent_counted(input, pairs, layout, &tokens, counter, options)
    }

    /// [`Compactor::fit_recent`] with each message's tokens known (`tokens[i]` for every
    /// `i` from the window's start on).
    pub(crate) fn fit_recent_counted(
        &self,
        input: &[Message],
        pairs: &Pairs,
        layout: Layout,
        tokens: &[usize],
        counter: &dyn TokenCounter,
        options: &CompactOptions,
    ) -> (Layout, Vec<plan::Truncation>) {
        let goal = options.target.unwrap_or(self.config.target());
        let cap = self.config.recent_cap(goal);
        let mut count_one = |m: &Message| count_one(counter, m);
        let (layout, truncations) = plan::fit_recent(input, pairs, layout, tokens, cap, &mut count_one);
        for t in &truncations {
            tracing::warn!(
                index = t.index,
                cut_chars = t.cut_chars,
                cap,
                "cut a recent tool result to fit max_recent_tokens"
            );
        }
        (layout, truncations)
    }

    /// The aged conversation, its elisions and its count; the input unchanged when aging
    /// is off, finds nothing, or would not lower the count.
    fn age(
        &self,
        input: &[Message],
        pairs: &Pairs,
        layout: &Layout,
        counter: &dyn TokenCounter,
        before: usize,
    ) -> (Vec<Message>, Vec<Elision>, usize) {
        if !self.config.age_observations {
            return (input.to_vec(), Vec::new(), before);
        }
        let elisions: Vec<Elision> = plan::eligible(input, pairs, layout, self.aging_rules())
            .into_iter()
            .map(|e| self.elision(input, e))
            .collect();
        if elisions.is_empty() {
            return (input.to_vec(), Vec::new(), before);
        }
        let aged = plan::apply_elisions(input, &elisions);
        let aged_count = counter.count_messages(&aged);
        if aged_count >= before {
            return (input.to_vec(), Vec::new(), before);
        }
        (aged, elisions, aged_count)
    }

    /// The hard trim of the aged conversation (or, when no trim respects the pairing,
    /// the aged conversation itself).
    #[allow(clippy::too_many_arguments)]
    fn trim(
        &self,
        input: &[Message],
        aged: &[Message],
        pairs: &Pairs,
        layout: &Layout,
        elisions: Vec<Elision>,
        aged_count: usize,
        counter: &dyn TokenCounter,
        options: &CompactOptions,
        before: usize,
        limit: usize,
    ) -> CompactionResult {
        let goal = options.target.unwrap_or(self.config.target());
        match plan::plan_trim_counted(aged, pairs, layout, goal, aged_count, counter) {
            Some(trim) => {
                tracing::warn!(dropped = trim.dropped, tokens = trim.tokens, "hard trim");
                CompactionResult {
                    exhausted: trim.tokens >= before || trim.tokens > limit,
                    messages: trim.messages,
                    summary: trim.notice,
                    dropped: trim.dropped,
                    cut_index: trim.cut_index as i64,
                    tokens_before: before,
                    tokens_after: trim.tokens,
                    fallback: true,
                    // Every stub of the pass, trimmed away or not (see `survived`).
                    elisions,
                    usage: Usage::default(),
                    attempts: Vec::new(),
                    receipt: None,
                    repairs: Vec::new(),
                    truncations: Vec::new(),
                }
            }
            None => {
                tracing::error!("no hard trim keeps the tool-call pairing intact");
                let messages = if elisions.is_empty() {
                    input.to_vec()
                } else {
                    aged.to_vec()
                };
                CompactionResult {
                    messages,
                    summary: String::new(),
                    dropped: 0,
                    cut_index: -1,
                    tokens_before: before,
                    tokens_after: aged_count,
                    fallback: false,
                    exhausted: true,
                    elisions,
                    usage: Usage::default(),
                    attempts: Vec::new(),
                    receipt: None,
                    repairs: Vec::new(),
                    truncations: Vec::new(),
                }
            }
        }
    }
}

/// A result that replaced nothing (a no-op, or an elision-only pass when `elisions` is
/// not empty): `exhausted` when `tokens` is still over `limit`.
fn unchanged_result(
    before: usize,
    limit: usize,
    elisions: Vec<Elision>,
    messages: Vec<Message>,
    tokens: usize,
) -> CompactionResult {
    CompactionResult {
        messages,
        summary: String::new(),
        dropped: 0,
        cut_index: -1,
        tokens_before: before,
        tokens_after: tokens,
        fallback: false,
        exhausted: tokens > limit,
        elisions,
        usage: Usage::default(),
        attempts: Vec::new(),
        receipt: None,
        repairs: Vec::new(),
        truncations: Vec::new(),
    }
}

/// The truncations as elisions (index and new whole content), which is how they are
/// applied and recorded.
fn truncation_elisions(truncations: &[plan::Truncation]) -> Vec<Elision> {
    truncations
        .iter()
        .map(|t| Elision {
            index: t.index,
            stub: t.content.clone(),
        })
        .collect()
}

/// One message's tokens as a conversation of one. An additive counter counts it through
/// [`TokenCounter::count_some`], so a memo keeps the rest of its cache (a
/// `count_messages` of one message would leave the memo holding only that message, and
/// the next count of the conversation would tokenize it all again).
fn count_one(counter: &dyn TokenCounter, message: &Message) -> usize {
    let one = std::slice::from_ref(message);
    if counter.additive() {
        counter.count_some(one).iter().sum()
    } else {
        counter.count_messages(one)
    }
}
