//! One compaction pass, start to finish: [`Compactor::compact`].
//!
//! Every phase of a pass (aging, the summary, the hard trim) works on the same things:
//! the conversation as the pass sees it, its pairs and layout, the pass's counter and
//! options, its count and the limit a result is judged by. They travel together as a
//! [`Pass`] rather than as an argument list each phase repeats.

use std::sync::Arc;

use tracing::Instrument;

use super::events::CompactionEvent;
use super::result::{CompactionResult, Elision, Exhaustion};
use super::{CompactError, CompactOptions, Compactor};
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::{self, CostReceipt, Layout, Pairs};

/// What every phase of one pass shares.
pub(crate) struct Pass<'a> {
    /// The conversation the pass reduces (repaired, with recent results cut to fit).
    pub(crate) input: &'a [Message],
    /// Its tool-call pairs.
    pub(crate) pairs: &'a Pairs,
    /// Its layout, the recent window fitted to its token cap.
    pub(crate) layout: &'a Layout,
    /// The pass's counter (the per-call override, else the compactor's).
    pub(crate) counter: &'a Arc<dyn TokenCounter>,
    /// The per-call options.
    pub(crate) options: &'a CompactOptions,
    /// `input`'s tokens.
    pub(crate) before: usize,
    /// Over this, a result is exhausted (the per-call target, else the context budget).
    pub(crate) limit: usize,
}

impl Pass<'_> {
    /// A result that replaced nothing, judged against this pass.
    fn unchanged(&self, elisions: Vec<Elision>, messages: Vec<Message>, tokens: usize) -> CompactionResult {
        CompactionResult::unchanged(messages, tokens)
            .judged(self.before, self.limit)
            .with_elisions(elisions)
    }
}

/// The input with every eligible result stubbed (or the input itself, when aging is off,
/// finds nothing, or would not lower the count).
struct Aged {
    messages: Vec<Message>,
    elisions: Vec<Elision>,
    tokens: usize,
}

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
            if !result.attempts.is_empty() {
                result.summarizer = self.summarizer.as_ref().map(|s| s.name().to_owned());
            }
            result.receipt = Some(self.receipt(messages, &result, counter.as_ref(), before));
            if !plan::binding::thinking_names(&result.messages).is_empty() {
                result.stale_thinking = plan::binding::stale_thinking(input, &result.messages, &[], None);
            }
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
        given: &[Message],
        options: &CompactOptions,
        counter: &Arc<dyn TokenCounter>,
        given_before: usize,
    ) -> CompactionResult {
        let limit = options.target.unwrap_or(self.config.context_budget);
        // Budgets at the door first: what no conversation carries whole.
        let door = self.door_elisions(given);
        let door_input;
        let (original, before) = if door.is_empty() {
            (given, given_before)
        } else {
            door_input = plan::apply_elisions(given, &door);
            let count = counter.count_messages(&door_input);
            if self.elision_suffices(count, given_before, options) {
                tracing::info!(elisions = door.len(), tokens = count, "door-only pass");
                return CompactionResult::unchanged(door_input, count)
                    .judged(given_before, limit)
                    .with_elisions(door);
            }
            (door_input.as_slice(), count)
        };
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
        let pass = Pass {
            input,
            pairs: &pairs,
            layout: &layout,
            counter,
            options,
            before,
            limit,
        };
        let mut result = if layout.is_noop() {
            tracing::info!("nothing between the sticky prefix and the recent window: no-op");
            pass.unchanged(Vec::new(), input.to_vec(), before)
        } else {
            self.reduce(&pass).await
        };
        if let Err(violation) = plan::validate(input, &result.messages, layout.recent_start) {
            // Unreachable by construction; never hand back a broken conversation.
            tracing::error!(%violation, "compaction result failed validation; returning the input unchanged");
            let (usage, attempts) = (result.usage, result.attempts);
            result = pass.unchanged(Vec::new(), input.to_vec(), before);
            result.usage = usage;
            result.attempts = attempts;
        }
        if result.exhausted {
            result.exhaustion = Some(exhaustion(input, &layout, counter.as_ref(), limit, result.tokens_after));
        }
        if !truncations.is_empty() {
            // Said here, where the pass keeps them: the decision also fits the window
            // (to see what a pass would do), and a probe is no cut.
            for t in &truncations {
                tracing::warn!(
                    index = t.index,
                    cut_chars = t.cut_chars,
                    "cut a recent tool result to fit the recent window (its original stays in the transcript)"
                );
            }
            let mut elisions = truncation_elisions(&truncations);
            elisions.append(&mut result.elisions);
            result.elisions = elisions;
            result.truncations = truncations;
        }
        if !door.is_empty() {
            let mut elisions = door;
            elisions.append(&mut result.elisions);
            result.elisions = elisions;
        }
        result
    }

    /// Aging, then a summary, then the hard trim: the pass over a conversation that has
    /// a middle.
    async fn reduce(&self, pass: &Pass<'_>) -> CompactionResult {
        // Aging first: stub every eligible result, recount.
        let aged = self.age(pass);
        if !aged.elisions.is_empty() && self.elision_suffices(aged.tokens, pass.before, pass.options) {
            tracing::info!(
                elisions = aged.elisions.len(),
                aged_count = aged.tokens,
                "elision-only pass"
            );
            return pass.unchanged(aged.elisions, aged.messages, aged.tokens);
        }

        let outcome = self.summarize_phase(pass, &aged.messages, aged.tokens).await;
        let mut result = if let Some(accepted) = outcome.accepted {
            // Every stub of the pass is reported, though the summary replaced them all.
            CompactionResult::replaced(
                accepted.messages,
                accepted.content,
                accepted.dropped,
                pass.layout.cut_index(),
                accepted.tokens,
            )
            .judged(pass.before, pass.limit)
            .with_elisions(aged.elisions)
        } else {
            self.trim(pass, aged)
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
            None if before <= trigger && !options.ahead_of_trigger => aged_count <= trigger,
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
            .with_summarizer_cache_reads(result.usage.cache_read_tokens, policy)
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
        let mut count_one = |m: &Message| count_one(counter, m);
        // The room the budget leaves the window: what the unread results may take
        // before they are cut (the sticky messages and a summary go out beside them).
        let sticky: usize = input[..layout.recent_start.min(input.len())]
            .iter()
            .filter(|m| m.is_sticky())
            .map(&mut count_one)
            .sum();
        // Never more than three quarters of what the sticky prefix leaves under the limit: a
        // 1,547-token system prompt under a 1,847-token budget left a 339-token window
        // no room beside a summary, and the pass was `exhausted` where the last turn
        // alone fits (see [`plan::window_cap`]).
        let limit = options.target.unwrap_or(self.config.context_budget);
        let cap = plan::window_cap(self.config.recent_cap(goal), limit, sticky);
        let unread_cap = self
            .config
            .context_budget
            .saturating_sub(sticky + self.config.summary_max_tokens as usize);
        plan::fit_recent(input, pairs, layout, tokens, cap, unread_cap, &mut count_one)
    }

    /// The aged conversation, its elisions and its count; the input unchanged when aging
    /// is off, finds nothing, or would not lower the count.
    fn age(&self, pass: &Pass<'_>) -> Aged {
        let unchanged = || Aged {
            messages: pass.input.to_vec(),
            elisions: Vec::new(),
            tokens: pass.before,
        };
        if !self.config.age_observations {
            return unchanged();
        }
        let elisions: Vec<Elision> = plan::eligible(pass.input, pass.pairs, pass.layout, self.aging_rules())
            .into_iter()
            .map(|e| self.elision(pass.input, e))
            .collect();
        if elisions.is_empty() {
            return unchanged();
        }
        let messages = plan::apply_elisions(pass.input, &elisions);
        let tokens = pass.counter.count_messages(&messages);
        if tokens >= pass.before {
            return unchanged();
        }
        Aged {
            messages,
            elisions,
            tokens,
        }
    }

    /// The hard trim of the aged conversation (or, when no trim respects the pairing,
    /// the aged conversation itself).
    fn trim(&self, pass: &Pass<'_>, aged: Aged) -> CompactionResult {
        let goal = pass.options.target.unwrap_or(self.config.target());
        let trim = plan::TrimSearch::new(&aged.messages, pass.pairs, pass.layout, goal)
            .ceiling(aged.tokens)
            .plan(pass.counter.as_ref());
        match trim {
            // A trim must shrink: one that would not (a notice longer than the little
            // middle it replaces) leaves the conversation as it is.
            Some(trim) if trim.tokens >= aged.tokens => {
                tracing::warn!(tokens = trim.tokens, "no hard trim shrinks the conversation");
                let messages = if aged.elisions.is_empty() {
                    pass.input.to_vec()
                } else {
                    aged.messages
                };
                CompactionResult::unchanged(messages, aged.tokens)
                    .judged(pass.before, pass.limit)
                    .with_elisions(aged.elisions)
            }
            Some(trim) => {
                tracing::warn!(dropped = trim.dropped, tokens = trim.tokens, "hard trim");
                let mut result = CompactionResult::replaced(
                    trim.messages,
                    trim.notice,
                    trim.dropped,
                    trim.cut_index as i64,
                    trim.tokens,
                )
                .judged(pass.before, pass.limit)
                // Every stub of the pass, trimmed away or not (see `survived`).
                .with_elisions(aged.elisions);
                result.exhausted |= trim.tokens >= pass.before;
                result.fallback = true;
                result
            }
            None => {
                tracing::error!("no hard trim keeps the tool-call pairing intact");
                let messages = if aged.elisions.is_empty() {
                    pass.input.to_vec()
                } else {
                    aged.messages
                };
                let mut result = CompactionResult::unchanged(messages, aged.tokens)
                    .judged(pass.before, pass.limit)
                    .with_elisions(aged.elisions);
                result.exhausted = true;
                result
            }
        }
    }
}

/// The numbers of an exhausted result: the sticky messages before the recent window and
/// the window itself (as kept), counted by the pass's counter.
fn exhaustion(
    input: &[Message],
    layout: &Layout,
    counter: &dyn TokenCounter,
    limit: usize,
    tokens_after: usize,
) -> Exhaustion {
    let start = layout.recent_start.min(input.len());
    let sticky: Vec<Message> = input[..start].iter().filter(|m| m.is_sticky()).cloned().collect();
    Exhaustion {
        limit,
        tokens_after,
        sticky_tokens: if sticky.is_empty() {
            0
        } else {
            counter.count_messages(&sticky)
        },
        recent_tokens: counter.count_messages(&input[start..]),
        recent_messages: input.len() - start,
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
