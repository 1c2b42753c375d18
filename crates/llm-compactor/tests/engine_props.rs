//! Property tests: over random conversations (tool calls, parallel calls, orphans,
//! sticky and injected messages) and random summarizer behaviour, every result passes
//! the validator, obeys the replay contract, and a changed conversation is smaller
//! unless the result says it is exhausted.

use crate::engine_support;

use std::sync::Arc;

use engine_support::{Answer, Scripted, http, replay, reply, tokens, truncated, validate_pass};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    User(usize, bool),
    Assistant(usize),
    Calls(Vec<(u8, usize)>, bool),
    Orphan(usize),
    Injected(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0usize..400, prop::bool::weighted(0.1)).prop_map(|(n, s)| Step::User(n, s)),
        2 => (0usize..300).prop_map(Step::Assistant),
        5 => (prop::collection::vec((0u8..4, 0usize..6000), 1..4), prop::bool::weighted(0.05))
            .prop_map(|(c, s)| Step::Calls(c, s)),
        1 => (0usize..500).prop_map(Step::Orphan),
        1 => (0usize..200).prop_map(Step::Injected),
    ]
}

fn build(steps: &[Step]) -> Vec<Message> {
    let mut m = vec![Message::system("You are an agent.")];
    let mut next_id = 0;
    for s in steps {
        match s {
            Step::User(n, sticky) => {
                let msg = Message::user("u".repeat(*n));
                m.push(if *sticky { msg.sticky() } else { msg });
            }
            Step::Assistant(n) => m.push(Message::assistant("a".repeat(*n))),
            Step::Calls(calls, sticky) => {
                let ids: Vec<String> = calls
                    .iter()
                    .map(|_| {
                        next_id += 1;
                        format!("call_{next_id}")
                    })
                    .collect();
                let tool_calls = calls
                    .iter()
                    .zip(&ids)
                    .map(|((k, _), id)| ToolCall::new(id.clone(), format!("tool{}", k % 2), format!("{{\"k\":{k}}}")))
                    .collect();
                let ask = Message::assistant("").with_tool_calls(tool_calls);
                m.push(if *sticky { ask.sticky() } else { ask });
                for ((_, size), id) in calls.iter().zip(&ids) {
                    m.push(Message::tool(id.clone(), "r".repeat(*size)));
                }
            }
            Step::Orphan(n) => m.push(Message::tool("gone", "o".repeat(*n))),
            Step::Injected(n) => m.push(Message::user("i".repeat(*n)).at_depth(2)),
        }
    }
    m
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        4 => (1usize..3000).prop_map(|n| reply(&"s".repeat(n))),
        1 => (1usize..3000).prop_map(|n| truncated(&"t".repeat(n))),
        1 => Just(http(503)),
        1 => Just(http(401)),
        1 => Just(reply("   ")),
        1 => (20_000usize..40_000).prop_map(|n| reply(&"h".repeat(n))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    #[test]
    fn every_result_is_valid_and_proven(
        steps in prop::collection::vec(step(), 0..40),
        answers in prop::collection::vec(answer(), 0..6),
        keep_recent in 0usize..10,
        budget in 500usize..20_000,
        aging in any::<bool>(),
        target in prop::option::weighted(0.3, 50usize..8000),
        room in prop::option::weighted(0.3, 900usize..3000),
        with_summarizer in prop::bool::weighted(0.85),
    ) {
        let input = build(&steps);
        let config = CompactorConfig::builder(budget)
            .keep_recent(keep_recent)
            .age_observations(aging)
            .age_min_chars(500)
            .age_reclaim_min(3000)
            .build()
            .unwrap();
        let mut compactor = Compactor::new(config, Arc::new(HeuristicCounter));
        if with_summarizer {
            let mut s = Scripted::build(answers).with_fallback(reply("fallback summary"));
            if let Some(room) = room {
                s = s.with_room(room);
            }
            compactor = compactor.with_summarizer(Arc::new(s));
        }
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        let options = CompactOptions::new().with_target(target);
        let result = rt.block_on(compactor.compact(&input, options)).unwrap();

        prop_assert_eq!(validate_pass(&input, &result, keep_recent), Ok(()));
        prop_assert_eq!(&replay(&input, &result), &result.messages);
        prop_assert_eq!(result.tokens_before, tokens(&input));
        prop_assert_eq!(result.tokens_after, tokens(&result.messages));
        if result.messages != input {
            prop_assert!(result.exhausted || result.tokens_after < result.tokens_before,
                "changed but not smaller: {} -> {}", result.tokens_before, result.tokens_after);
        } else {
            prop_assert!(result.is_noop());
        }
        if result.fallback {
            prop_assert!(result.summary.starts_with(plan::SUMMARY_HEADER));
            prop_assert!(result.dropped > 0);
        }
        if let Some(t) = target && !result.exhausted && result.dropped > 0 {
            prop_assert!(result.tokens_after <= t);
        }
    }
}
