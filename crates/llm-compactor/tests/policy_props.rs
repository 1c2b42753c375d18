//! The cost policy, end to end through the engine: a pass that runs below the trigger
//! (an elision epoch) never breaks the prompt cache unless its receipt shows a net
//! saving, and an elision-only pass at the trigger always lands at or under the target.

use std::sync::Arc;

use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::CostPolicy;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use proptest::prelude::*;

/// An agent run: a system prompt, then rounds of a call and its result of `size` chars.
fn run(sizes: &[usize]) -> Vec<Message> {
    let mut m = vec![Message::system("You are an agent."), Message::user("Fix the bug.")];
    for (i, size) in sizes.iter().enumerate() {
        let id = format!("call_{i}");
        m.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            id.clone(),
            "read",
            format!("{{\"path\":\"f{i}\"}}"),
        )]));
        m.push(Message::tool(id, format!("line {i}\n").repeat(size / 7 + 1)));
    }
    m
}

fn compactor(budget: usize, rounds: u32, policy: CostPolicy) -> Compactor {
    let config = CompactorConfig::builder(budget)
        .age_observations(true)
        .age_min_chars(500)
        .keep_recent(2)
        .cost_policy(CostPolicy {
            expected_remaining_rounds: rounds,
            ..policy
        })
        .build()
        .unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn below_the_trigger_a_pass_breaks_the_cache_only_when_it_pays(
        sizes in prop::collection::vec(0usize..9000, 1..40),
        budget in 2_000usize..60_000,
        rounds in 1u32..200,
        ratio in prop::option::of(0.01f64..0.5),
    ) {
        let policy = CostPolicy { epoch_ratio: ratio, ..CostPolicy::default() };
        let c = compactor(budget, rounds, policy);
        let input = run(&sizes);
        let tokens = HeuristicCounter.count_messages(&input);
        prop_assume!(tokens <= c.config().trigger());
        if c.needs_compaction(&input) {
            let result = rt().block_on(c.compact(&input, CompactOptions::default())).unwrap();
            let receipt = result.receipt.expect("every pass has a receipt");
            prop_assert!(receipt.breaks_cache());
            prop_assert!(receipt.pays(), "an epoch below the trigger that does not pay: {receipt:?}");
            prop_assert_eq!(receipt.tokens_after, result.tokens_after);
        }
    }

    #[test]
    fn at_the_trigger_elision_only_reaches_the_target(
        sizes in prop::collection::vec(0usize..9000, 1..40),
        budget in 2_000usize..40_000,
    ) {
        let c = compactor(budget, 20, CostPolicy::default());
        let input = run(&sizes);
        prop_assume!(HeuristicCounter.count_messages(&input) > c.config().trigger());
        let result = rt().block_on(c.compact(&input, CompactOptions::default())).unwrap();
        if result.is_elision_only() {
            prop_assert!(result.tokens_after <= c.config().target(),
                "{} > target {}", result.tokens_after, c.config().target());
        }
    }
}

#[test]
fn the_seed_policy_runs_an_epoch_that_the_default_policy_declines() {
    // Three barely fat results early, a long tail of small ones after them: below the
    // trigger, a full pool, but stubbing saves little and rewrites almost the whole
    // cache, with one round to go.
    let mut sizes = vec![600, 600, 600];
    sizes.extend([450; 40]);
    let input = run(&sizes);
    let seed = compactor(40_000, 1, CostPolicy::seed());
    let gated = compactor(
        40_000,
        1,
        CostPolicy {
            epoch_ratio: None,
            ..CostPolicy::default()
        },
    );
    let seed = Compactor::new(
        CompactorConfig {
            age_reclaim_min: 300,
            ..seed.config().clone()
        },
        Arc::new(HeuristicCounter),
    );
    let gated = Compactor::new(
        CompactorConfig {
            age_reclaim_min: 300,
            ..gated.config().clone()
        },
        Arc::new(HeuristicCounter),
    );
    assert!(HeuristicCounter.count_messages(&input) <= seed.config().trigger());
    assert!(
        seed.needs_compaction(&input),
        "the seed's rule: a full pool is an epoch"
    );
    let tokens = HeuristicCounter.count_messages(&input);
    let (decision, receipt) = gated.epoch_decision(&input, tokens).expect("an epoch is due");
    assert!(!decision.runs(), "{receipt:?}");
    assert!(!receipt.pays());
    assert!(!gated.needs_compaction(&input));
}

#[test]
fn a_pass_reports_its_receipt_in_the_done_event_and_the_json() {
    let input = run(&[9_000; 12]);
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let c = compactor(10_000, 20, CostPolicy::default())
        .with_observer(Arc::new(move |e| sink.lock().unwrap().push(e.clone())));
    let result = rt().block_on(c.compact(&input, CompactOptions::default())).unwrap();
    let receipt = result.receipt.clone().unwrap();
    assert_eq!(receipt.tokens_before, result.tokens_before);
    assert_eq!(receipt.pricing, "anthropic");
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["receipt"]["tokens_rewritten"], receipt.tokens_rewritten);
    let done = events.lock().unwrap().last().cloned().unwrap();
    let json = serde_json::to_value(&done).unwrap();
    assert_eq!(json["receipt"]["tokens_after"], receipt.tokens_after);
}
