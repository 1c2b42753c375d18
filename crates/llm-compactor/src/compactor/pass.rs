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
    /// The result always satisfies the validator (no new orphan, no unanswered kept
    /// call, sticky messages in order, recent window byte-identical) and, when changed,
    /// is smaller than the input unless `exhausted` says otherwise. A failing summarizer
    /// is not an error: the pass ends in the hard trim with `fallback: true`.
    ///
    /// # Errors
    /// Only for invalid options (a target of 0 tokens).
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
            let mut result = self.run_pass(messages, &options, &counter, before).await;
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
        input: &[Message],
        options: &CompactOptions,
        counter: &Arc<dyn TokenCounter>,
        before: usize,
    ) -> CompactionResult {
        let limit = options.target.unwrap_or(self.config.context_budget);
        let pairs = Pairs::build(input);
        let layout = plan::layout_with(input, &pairs, self.config.keep_recent);
        let unchanged = |elisions: Vec<Elision>, messages: Vec<Message>, tokens: usize| CompactionResult {
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
        };
        if layout.is_noop() {
            tracing::info!("nothing between the sticky prefix and the recent window: no-op");
            return unchanged(Vec::new(), input.to_vec(), before);
        }

        // Aging first: stub every eligible result, recount.
        let (aged, elisions, aged_count) = self.age(input, &pairs, &layout, counter.as_ref(), before);
        if !elisions.is_empty() && self.elision_suffices(aged_count, before, options) {
            tracing::info!(elisions = elisions.len(), aged_count, "elision-only pass");
            return unchanged(elisions, aged, aged_count);
        }

        let outcome = self.summarize_phase(&aged, &layout, aged_count, counter, options).await;
        let mut result = if let Some(accepted) = outcome.accepted {
            CompactionResult {
                messages: accepted.messages,
                summary: accepted.content,
                dropped: accepted.dropped,
                cut_index: layout.cut_index(),
                tokens_before: before,
                tokens_after: accepted.tokens,
                fallback: false,
                exhausted: accepted.tokens > limit,
                elisions: Vec::new(),
                usage: Usage::default(),
                attempts: Vec::new(),
                receipt: None,
            }
        } else {
            self.trim(
                input,
                &aged,
                &pairs,
                &layout,
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
        if let Err(violation) = plan::validate(input, &result.messages, layout.recent_start) {
            // Unreachable by construction; never hand back a broken conversation.
            tracing::error!(%violation, "compaction result failed validation; returning the input unchanged");
            let (usage, attempts) = (result.usage, result.attempts);
            result = unchanged(Vec::new(), input.to_vec(), before);
            result.usage = usage;
            result.attempts = attempts;
        }
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
            .map(|e| Elision {
                index: e.index,
                stub: e.stub,
            })
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
                let survivors = elisions.into_iter().filter(|e| e.index > trim.cut_index).collect();
                CompactionResult {
                    exhausted: trim.tokens >= before || trim.tokens > limit,
                    messages: trim.messages,
                    summary: trim.notice,
                    dropped: trim.dropped,
                    cut_index: trim.cut_index as i64,
                    tokens_before: before,
                    tokens_after: trim.tokens,
                    fallback: true,
                    elisions: survivors,
                    usage: Usage::default(),
                    attempts: Vec::new(),
                    receipt: None,
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
                }
            }
        }
    }
}
