//! [`CostReceipt`]: what a pass did to the prompt cache and what it is expected to cost.
//!
//! The arithmetic, in base-input-token units under the policy's pricing, over the next
//! `rounds` requests (the new messages each request appends cost the same either way and
//! are left out):
//! - not compacting: every request reads the whole current conversation from the cache,
//!   `rounds x tokens_before x cache_read`;
//! - compacting: the first request reads the kept prefix and writes the rest,
//!   `cached_prefix_kept x cache_read + tokens_rewritten x cache_write`, the others read
//!   the smaller conversation, `(rounds - 1) x tokens_after x cache_read`, and the
//!   summarizer's own call is billed at `summarizer_price` times the agent's prices:
//!   uncached, except the input its provider reported read from the cache (the
//!   cache-reading summary request, the default when the summarizer is the agent's own
//!   model), which [`CostReceipt::with_summarizer_cache_reads`] bills at the cache-read
//!   price: the engine applies it to every pass's receipt.
//!
//! `net_cost` is the second minus the first: negative when the pass saves money.
//!
//! Two numbers that users confuse are kept apart: `tokens_shed` is how much smaller the
//! conversation got (before minus after), a count of tokens, not of money; `net_cost` is
//! the net billed cost of the pass. A pass can shed tokens and still cost more, when it
//! rewrites a long cached prefix for a run too short to read the smaller conversation
//! often enough ([`CostReceipt::sheds_but_costs`]).

use serde::{Deserialize, Serialize};

use super::CostPolicy;
use crate::count::TokenCounter;
use crate::message::Message;

/// The numbers a receipt is computed from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiptInput {
    /// Tokens of the conversation before the pass.
    pub tokens_before: usize,
    /// Tokens after it.
    pub tokens_after: usize,
    /// Tokens of the output's leading messages identical to the input's.
    pub cached_prefix_kept: usize,
    /// Input tokens of the summarizer's calls.
    pub summarizer_input_tokens: u64,
    /// Output tokens of the summarizer's calls.
    pub summarizer_output_tokens: u64,
    /// The horizon in requests (at least 1 is used).
    pub rounds: u32,
}

/// What one pass did to the prompt cache, and its expected net cost.
///
/// Fields are declared in sorted order, so the receipt serializes with sorted keys like
/// every line of a session transcript (where a pass's receipt is recorded too).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CostReceipt {
    /// Tokens up to the first changed message: still read from the cache next request.
    pub cached_prefix_kept: usize,
    /// Estimated cost of the pass (summarizer included) and the next `rounds` requests.
    pub cost_with: f64,
    /// Estimated cost of the next `rounds` requests if the conversation is left as it was.
    pub cost_without: f64,
    /// `cost_with - cost_without`: negative when the pass saves money.
    pub net_cost: f64,
    /// The pricing preset of the estimate.
    pub pricing: String,
    /// The horizon the cost is estimated over, in requests.
    pub rounds: u32,
    /// Of `summarizer_input_tokens`, those the provider billed as cache reads (a summary
    /// request that reads the agent's own prompt cache: see
    /// `docs/prepared-compaction.md`); the rest,
    /// [`CostReceipt::summarizer_uncached_input_tokens`], was billed at the full rate.
    /// Absent from a transcript when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub summarizer_cache_read_tokens: u64,
    /// The summarizer's input tokens, cached or not (0 for a pass that did not summarize).
    pub summarizer_input_tokens: u64,
    /// The summarizer's output tokens.
    pub summarizer_output_tokens: u64,
    /// The summarizer's price relative to the agent model's.
    pub summarizer_price: f64,
    /// Tokens after the pass.
    pub tokens_after: usize,
    /// Tokens before the pass.
    pub tokens_before: usize,
    /// Tokens from the first changed message on: written to the cache again.
    pub tokens_rewritten: usize,
    /// `tokens_before - tokens_after` (0 when the pass grew the conversation): tokens
    /// shed, not money saved; `net_cost` is the money.
    #[serde(default)]
    pub tokens_shed: usize,
}

impl CostReceipt {
    /// The receipt of a pass described by `input`, priced by `policy`.
    pub fn compute(input: &ReceiptInput, policy: &CostPolicy) -> CostReceipt {
        let p = &policy.pricing;
        let rounds = input.rounds.max(1);
        let kept = input.cached_prefix_kept.min(input.tokens_after);
        let rewritten = input.tokens_after - kept;
        let changed = input.tokens_before != input.tokens_after || kept != input.tokens_after;
        let cost_without = f64::from(rounds) * input.tokens_before as f64 * p.cache_read;
        let cost_with = if changed {
            kept as f64 * p.cache_read
                + rewritten as f64 * p.cache_write
                + f64::from(rounds - 1) * input.tokens_after as f64 * p.cache_read
                + policy.summarizer_price
                    * (input.summarizer_input_tokens as f64 * p.uncached
                        + input.summarizer_output_tokens as f64 * p.output)
        } else {
            cost_without
                + policy.summarizer_price
                    * (input.summarizer_input_tokens as f64 * p.uncached
                        + input.summarizer_output_tokens as f64 * p.output)
        };
        CostReceipt {
            tokens_before: input.tokens_before,
            tokens_after: input.tokens_after,
            cached_prefix_kept: kept,
            tokens_rewritten: if changed { rewritten } else { 0 },
            summarizer_cache_read_tokens: 0,
            tokens_shed: input.tokens_before.saturating_sub(input.tokens_after),
            summarizer_input_tokens: input.summarizer_input_tokens,
            summarizer_output_tokens: input.summarizer_output_tokens,
            rounds,
            pricing: p.name.to_owned(),
            summarizer_price: policy.summarizer_price,
            cost_without,
            cost_with,
            net_cost: cost_with - cost_without,
        }
    }

    /// The receipt of a pass from `input` to `output`, counted with `counter`.
    pub fn of_pass(
        input: &[Message],
        output: &[Message],
        counter: &dyn TokenCounter,
        summarizer_tokens: (u64, u64),
        rounds: u32,
        policy: &CostPolicy,
    ) -> CostReceipt {
        let shared = input.iter().zip(output).take_while(|(a, b)| a == b).count();
        let kept = counter.count_messages(&output[..shared]);
        let before = counter.count_messages(input);
        let after = if shared == output.len() && shared == input.len() {
            before
        } else {
            counter.count_messages(output)
        };
        CostReceipt::compute(
            &ReceiptInput {
                tokens_before: before,
                tokens_after: after,
                cached_prefix_kept: kept,
                summarizer_input_tokens: summarizer_tokens.0,
                summarizer_output_tokens: summarizer_tokens.1,
                rounds,
            },
            policy,
        )
    }

    /// The same receipt with `cached` of the summarizer's input tokens billed as cache
    /// reads (capped at its input): their price drops from the uncached rate to the
    /// cache-read rate of `policy` (the policy the receipt was computed under), and
    /// `cost_with` and `net_cost` with it.
    ///
    /// ```
    /// use llm_compactor::plan::policy::{CostPolicy, CostReceipt, ReceiptInput};
    /// let input = ReceiptInput { tokens_before: 10_000, tokens_after: 4_000, summarizer_input_tokens: 9_000,
    ///     summarizer_output_tokens: 500, rounds: 5, ..ReceiptInput::default() };
    /// let policy = CostPolicy::default();
    /// let plain = CostReceipt::compute(&input, &policy);
    /// let cached = plain.clone().with_summarizer_cache_reads(8_000, &policy);
    /// assert_eq!((cached.summarizer_cache_read_tokens, cached.summarizer_uncached_input_tokens()), (8_000, 1_000));
    /// assert!(cached.cost_with < plain.cost_with);
    /// ```
    pub fn with_summarizer_cache_reads(mut self, cached: u64, policy: &CostPolicy) -> CostReceipt {
        let pricing = &policy.pricing;
        let cached = cached.min(self.summarizer_input_tokens);
        let newly = cached.saturating_sub(self.summarizer_cache_read_tokens);
        let saving = self.summarizer_price * newly as f64 * (pricing.uncached - pricing.cache_read);
        self.summarizer_cache_read_tokens = cached;
        self.cost_with -= saving;
        self.net_cost = self.cost_with - self.cost_without;
        self
    }

    /// The summarizer's input tokens billed at the full (uncached) rate.
    pub fn summarizer_uncached_input_tokens(&self) -> u64 {
        self.summarizer_input_tokens - self.summarizer_cache_read_tokens.min(self.summarizer_input_tokens)
    }

    /// True when the pass is expected to save money over its horizon.
    pub fn pays(&self) -> bool {
        self.net_cost < 0.0
    }

    /// True when the pass shed tokens and still costs more than it saves over its
    /// horizon (the case a token count alone would report as a saving).
    pub fn sheds_but_costs(&self) -> bool {
        self.tokens_shed > 0 && !self.pays()
    }

    /// True when the pass broke the cache (changed anything).
    pub fn breaks_cache(&self) -> bool {
        self.tokens_rewritten > 0
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::HeuristicCounter;
    use crate::plan::Pricing;

    #[test]
    fn the_arithmetic_is_the_documented_one() {
        let r = CostReceipt::compute(
            &ReceiptInput {
                tokens_before: 1_000,
                tokens_after: 600,
                cached_prefix_kept: 100,
                summarizer_input_tokens: 10,
                summarizer_output_tokens: 2,
                rounds: 3,
            },
            &CostPolicy::default(),
        );
        assert_eq!(r.tokens_rewritten, 500);
        assert!((r.cost_without - 300.0).abs() < 1e-9);
        // 100 x 0.1 + 500 x 1.25 + 2 x 600 x 0.1 + (10 + 2 x 5)
        assert!((r.cost_with - (10.0 + 625.0 + 120.0 + 20.0)).abs() < 1e-9);
        assert!(!r.pays() && r.breaks_cache());
        // It shed 400 tokens and still costs more: the two are reported apart.
        assert_eq!(r.tokens_shed, 400);
        assert!(r.sheds_but_costs());
    }

    #[test]
    fn tokens_shed_and_net_cost_are_separate_numbers() {
        let saving = CostReceipt::compute(
            &ReceiptInput {
                tokens_before: 100_000,
                tokens_after: 50_000,
                cached_prefix_kept: 40_000,
                rounds: 20,
                ..ReceiptInput::default()
            },
            &CostPolicy::default(),
        );
        assert_eq!(saving.tokens_shed, 50_000);
        assert!(saving.pays() && !saving.sheds_but_costs());
        let json = serde_json::to_value(&saving).unwrap();
        assert_eq!(json["tokens_shed"], 50_000);
        assert!(json["net_cost"].as_f64().unwrap() < 0.0);
        // A receipt written before the field existed still reads (shed 0).
        let mut old = json.clone();
        old.as_object_mut().unwrap().remove("tokens_shed");
        let back: CostReceipt = serde_json::from_value(old).unwrap();
        assert_eq!(back.tokens_shed, 0);
        // A pass that grew the conversation sheds nothing.
        let grew = CostReceipt::compute(
            &ReceiptInput {
                tokens_before: 10,
                tokens_after: 20,
                rounds: 1,
                ..ReceiptInput::default()
            },
            &CostPolicy::default(),
        );
        assert_eq!(grew.tokens_shed, 0);
    }

    #[test]
    fn a_cheap_summarizer_makes_the_same_pass_cheaper() {
        let input = ReceiptInput {
            tokens_before: 100_000,
            tokens_after: 20_000,
            cached_prefix_kept: 1_000,
            summarizer_input_tokens: 80_000,
            summarizer_output_tokens: 2_000,
            rounds: 10,
        };
        let same = CostReceipt::compute(&input, &CostPolicy::default());
        let cheap = CostReceipt::compute(
            &input,
            &CostPolicy {
                summarizer_price: 0.1,
                pricing: Pricing::OPENAI_GPT5,
                ..CostPolicy::default()
            },
        );
        assert!(cheap.cost_with < same.cost_with);
        assert_eq!(cheap.pricing, "openai-gpt5");
    }

    #[test]
    fn an_unchanged_conversation_breaks_nothing_and_costs_nothing_extra() {
        let msgs = vec![Message::system("s"), Message::user("hello")];
        let r = CostReceipt::of_pass(&msgs, &msgs, &HeuristicCounter, (0, 0), 5, &CostPolicy::default());
        assert!(!r.breaks_cache());
        assert_eq!(r.cached_prefix_kept, r.tokens_after);
        assert!(r.net_cost.abs() < 1e-9);
    }

    #[test]
    fn the_kept_prefix_ends_at_the_first_changed_message() {
        let input = vec![
            Message::system("s"),
            Message::user("hello"),
            Message::user("x".repeat(400)),
        ];
        let mut output = input.clone();
        output[2] = Message::user("stub");
        let c = HeuristicCounter;
        let r = CostReceipt::of_pass(&input, &output, &c, (0, 0), 1, &CostPolicy::default());
        assert_eq!(r.cached_prefix_kept, c.count_messages(&input[..2]));
        assert_eq!(r.tokens_rewritten, c.count_message(&output[2]));
    }
}
