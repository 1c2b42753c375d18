//! The epoch decision and the dry run of a growing [`Conversation`] (read from its aging
//! index, each message learned once) are the decision and the dry run of the slice API, on every prefix of generated
//! agent runs: repeated calls, failed re-reads, sticky turns, orphans, stubs already in
//! place, huge recent results, and compactions that rewrite the conversation in between.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use llm_compactor::count::{CalibratedCounter, HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{CostPolicy, stub_text};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Conversation};
use proptest::prelude::*;
use serde_json::json;

/// One step of a generated run.
#[derive(Clone, Debug)]
enum Step {
    /// An assistant turn calling `calls` tools; each answer: (tool, argument, size, failed,
    /// answered).
    Calls(Vec<(u8, u8, usize, bool, bool)>),
    /// A user message, sticky or not.
    User(usize, bool),
    /// An assistant text turn.
    Text(usize),
    /// A result that answers no call.
    Orphan(usize),
    /// A result that is already a stub.
    Stub(usize),
    /// Run a compaction pass and continue from its output.
    Compact,
    /// The provider bills the conversation as it is now (the calibrated counter's record).
    Bill(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => prop::collection::vec((0u8..3, 0u8..4, 0usize..4_000, prop::bool::weighted(0.15), prop::bool::weighted(0.95)), 1..3)
            .prop_map(Step::Calls),
        1 => (0usize..600, prop::bool::weighted(0.2)).prop_map(|(n, s)| Step::User(n, s)),
        1 => (0usize..800).prop_map(Step::Text),
        1 => (0usize..900).prop_map(Step::Orphan),
        1 => (100usize..9_000).prop_map(Step::Stub),
        1 => Just(Step::Compact),
    ]
}

fn messages_of(step: &Step, n: usize) -> Vec<Message> {
    let text = |size: usize, tag: &str| format!("{tag} ").repeat(size / (tag.len() + 1) + 1);
    match step {
        Step::Calls(calls) => {
            let tools = ["read", "bash", "grep"];
            let ids: Vec<String> = (0..calls.len()).map(|k| format!("c{n}_{k}")).collect();
            let turn = Message::assistant("").with_tool_calls(
                calls
                    .iter()
                    .zip(&ids)
                    .map(|((tool, arg, ..), id)| {
                        ToolCall::new(id.clone(), tools[*tool as usize], format!("{{\"path\":\"f{arg}\"}}"))
                    })
                    .collect(),
            );
            let mut out = vec![turn];
            for ((_, _, size, failed, answered), id) in calls.iter().zip(&ids) {
                if !answered {
                    continue;
                }
                let mut result = Message::tool(id.clone(), text(*size, &format!("out{n}")));
                if *failed {
                    result.extras.insert("is_error".into(), json!(true));
                }
                out.push(result);
            }
            out
        }
        Step::User(size, sticky) => {
            let m = Message::user(text(*size, "ask"));
            vec![if *sticky { m.sticky() } else { m }]
        }
        Step::Text(size) => vec![Message::assistant(text(*size, "think"))],
        Step::Orphan(size) => vec![Message::tool(format!("nobody{n}"), text(*size, "lost"))],
        Step::Stub(size) => {
            let call = format!("s{n}");
            vec![
                Message::assistant("").with_tool_calls(vec![ToolCall::new(call.clone(), "read", "{}")]),
                Message::tool(call, stub_text(*size, Some("read"))),
            ]
        }
        Step::Compact | Step::Bill(_) => Vec::new(),
    }
}

fn compactor(budget: usize, keep_recent: usize, rounds: u32, counter: Arc<dyn TokenCounter>) -> Compactor {
    let config = CompactorConfig::builder(budget)
        .age_observations(true)
        .age_min_chars(300)
        .keep_recent(keep_recent)
        .cost_policy(CostPolicy {
            expected_remaining_rounds: rounds,
            ..CostPolicy::default()
        })
        .build()
        .unwrap();
    Compactor::new(config, counter)
}

/// Plays `steps` on a conversation counted by `counter` (shared with the compactor) and
/// checks, after each, that the indexed decision is the slice decision. `bill` records a
/// provider bill of the conversation as it is (for the calibrated counter).
fn check_every_prefix(
    steps: &[Step],
    c: &Compactor,
    counter: Arc<dyn TokenCounter>,
    bill: &dyn Fn(&[Message], u64),
) -> Result<(), TestCaseError> {
    let mut conversation = Conversation::new(counter);
    conversation.push(Message::system("You are an agent."));
    conversation.push(Message::user("Fix the bug."));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Compact => {
                let result = runtime
                    .block_on(c.compact(conversation.messages(), CompactOptions::default()))
                    .unwrap();
                conversation.replace(result.messages);
            }
            Step::Bill(billed) => bill(conversation.messages(), *billed),
            _ => conversation.extend(messages_of(step, n)),
        }
        let tokens = conversation.tokens();
        let indexed = c.epoch_decision_in(&conversation, tokens);
        let sliced = c.epoch_decision(conversation.messages(), tokens);
        prop_assert_eq!(
            format!("{indexed:?}"),
            format!("{sliced:?}"),
            "after step {} ({:?})",
            n,
            step
        );
        prop_assert_eq!(
            c.needs_compaction_in(&conversation),
            c.needs_compaction(conversation.messages())
        );
        // The dry run of the conversation (pairs and eligible results read from its aging
        // index) is the dry run of its messages.
        let options = CompactOptions::default();
        prop_assert_eq!(
            c.plan_in(&conversation, &options),
            c.plan(conversation.messages(), &options),
            "plan after step {} ({:?})",
            n,
            step
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_indexed_decision_is_the_slice_decision_on_every_prefix(
        steps in prop::collection::vec(step(), 1..60),
        budget in 3_000usize..40_000,
        keep_recent in 1usize..8,
        rounds in 1u32..120,
    ) {
        let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
        let c = compactor(budget, keep_recent, rounds, counter.clone());
        check_every_prefix(&steps, &c, counter, &|_, _| {})?;
    }

    #[test]
    fn with_the_calibrated_counter_too(
        steps in prop::collection::vec(prop_oneof![8 => step(), 3 => (1_000u64..60_000).prop_map(Step::Bill)], 1..60),
        budget in 3_000usize..40_000,
        keep_recent in 1usize..8,
        rounds in 1u32..120,
    ) {
        let calibrated = Arc::new(CalibratedCounter::with_fallback(Arc::new(HeuristicCounter)));
        let counter: Arc<dyn TokenCounter> = calibrated.clone();
        let c = compactor(budget, keep_recent, rounds, counter.clone());
        check_every_prefix(&steps, &c, counter, &|messages, billed| calibrated.record(messages, "m", Some(billed)))?;
    }
}

/// A counter that counts its `count_message` calls.
struct Tally {
    calls: AtomicUsize,
}

impl TokenCounter for Tally {
    fn name(&self) -> &str {
        "tally"
    }
    fn count_text(&self, text: &str) -> usize {
        HeuristicCounter.count_text(text)
    }
    fn count_message(&self, message: &Message) -> usize {
        self.calls.fetch_add(1, Ordering::Relaxed);
        HeuristicCounter.count_message(message)
    }
}

#[test]
fn a_round_of_the_indexed_decision_counts_only_its_new_messages_and_new_stubs() {
    let tally = Arc::new(Tally {
        calls: AtomicUsize::new(0),
    });
    let counter: Arc<dyn TokenCounter> = tally.clone();
    // A window so large that nothing is ever due by size, an epoch the policy keeps
    // declining (one round to go): the case that redid all the work every round.
    let config = CompactorConfig::builder(1_000_000)
        .age_observations(true)
        .age_min_chars(300)
        .age_reclaim_min(20_000)
        .keep_recent(4)
        .cost_policy(CostPolicy {
            expected_remaining_rounds: 1,
            epoch_ratio: None,
            ..CostPolicy::default()
        })
        .build()
        .unwrap();
    let c = Compactor::new(config, counter.clone());
    let mut conversation = Conversation::new(counter.clone());
    conversation.push(Message::system("You are an agent."));
    let mut declined = 0;
    let mut stubs_counted = 0;
    for n in 0..400 {
        conversation.extend(messages_of(
            &Step::Calls(vec![(0, (n % 4) as u8, 2_000, false, true)]),
            n,
        ));
        let before = tally.calls.load(Ordering::Relaxed);
        let decision = c.epoch_decision_in(&conversation, conversation.tokens());
        let counted = tally.calls.load(Ordering::Relaxed) - before;
        if let Some((d, _)) = &decision {
            assert!(!d.runs(), "one round to go never pays for the cache write");
            declined += 1;
        }
        // The first decision counts the stubs of everything eligible by then; every
        // later round at most the stubs of the results that became eligible in it (a
        // new duplicate, the one that left the grace): never the conversation.
        if declined > 1 {
            assert!(counted <= 4, "round {n}: {counted} messages counted");
        }
        stubs_counted += counted;
    }
    assert!(declined > 300, "the epoch was due and declined on {declined} rounds");
    // Each result's stub counted at most once, not once per round.
    assert!(stubs_counted <= 400, "{stubs_counted} stub counts for 400 rounds");
    assert_eq!(
        format!("{:?}", c.epoch_decision_in(&conversation, conversation.tokens())),
        format!("{:?}", c.epoch_decision(conversation.messages(), conversation.tokens()))
    );
}

#[test]
fn an_absurd_bill_saturates_instead_of_overflowing() {
    let calibrated = Arc::new(CalibratedCounter::with_fallback(Arc::new(HeuristicCounter)));
    let counter: Arc<dyn TokenCounter> = calibrated.clone();
    let c = compactor(40_000, 2, 20, counter.clone());
    let mut conversation = Conversation::new(counter);
    conversation.push(Message::system("You are an agent."));
    for n in 0..20 {
        conversation.extend(messages_of(
            &Step::Calls(vec![(0, (n % 4) as u8, 3_000, false, true)]),
            n,
        ));
    }
    calibrated.record(conversation.messages(), "m", Some(u64::MAX));
    // The round after the bill: its new messages are counted on top of it.
    conversation.extend(messages_of(&Step::Calls(vec![(1, 0, 3_000, false, true)]), 99));
    let tokens = conversation.tokens();
    assert!(
        c.epoch_decision(conversation.messages(), tokens).is_some(),
        "an epoch is due"
    );
    assert_eq!(
        format!("{:?}", c.epoch_decision_in(&conversation, tokens)),
        format!("{:?}", c.epoch_decision(conversation.messages(), tokens))
    );
}
