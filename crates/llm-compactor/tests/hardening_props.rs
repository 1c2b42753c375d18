//! Issue 10's property suite for the engine: arbitrary, possibly broken, structured
//! conversations (orphans, duplicate ids, sticky turns with calls, failed results) through
//! `compact` with every summarizer behaviour: never a panic, never a conversation a
//! provider would reject, sticky messages kept in order, and every pass replays.

use crate::engine_support;
use crate::session_support;

use std::sync::Arc;

use engine_support::{Scripted, provider_valid, reply, run, truncated};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::{CompactError, Compactor, CompactorConfig};
use proptest::prelude::*;
use serde_json::json;
use session_support::assert_pass_replays;

#[derive(Clone, Debug)]
enum Step {
    User(usize),
    Assistant(usize),
    /// A turn with `calls` calls, of which `answered` (a bit mask) get answers of
    /// `size` chars; `sticky` pins it; `failed` marks the answers as failed.
    Turn {
        calls: usize,
        answered: u8,
        size: usize,
        sticky: bool,
        failed: bool,
        tool: u8,
    },
    Orphan(usize),
    /// Reuses the previous call id (a duplicate id).
    Duplicate,
    Sticky(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..300).prop_map(Step::User),
        2 => (0usize..300).prop_map(Step::Assistant),
        6 => (1usize..4, any::<u8>(), prop_oneof![0usize..200, 1000usize..5000, 20_000usize..60_000], prop::bool::weighted(0.1), prop::bool::weighted(0.2), 0u8..3)
            .prop_map(|(calls, answered, size, sticky, failed, tool)| Step::Turn { calls, answered, size, sticky, failed, tool }),
        1 => (0usize..200).prop_map(Step::Orphan),
        1 => Just(Step::Duplicate),
        1 => (1usize..100).prop_map(Step::Sticky),
    ]
}

fn build(steps: &[Step]) -> (Vec<Message>, bool) {
    let mut out = vec![Message::system("rules")];
    let mut next = 0usize;
    let mut duplicate = false;
    let mut last_id: Option<String> = None;
    for s in steps {
        match s {
            Step::User(n) => out.push(Message::user("u".repeat(*n))),
            Step::Assistant(n) => out.push(Message::assistant("a".repeat(*n))),
            Step::Turn {
                calls,
                answered,
                size,
                sticky,
                failed,
                tool,
            } => {
                let ids: Vec<String> = (0..*calls)
                    .map(|_| {
                        next += 1;
                        format!("c{next}")
                    })
                    .collect();
                let calls: Vec<ToolCall> = ids
                    .iter()
                    .map(|id| ToolCall::new(id.clone(), format!("t{tool}"), "{}"))
                    .collect();
                let mut turn = Message::assistant("").with_tool_calls(calls);
                if *sticky {
                    turn = turn.sticky();
                }
                out.push(turn);
                for (k, id) in ids.iter().enumerate() {
                    if answered & (1 << k) != 0 {
                        let mut m = Message::tool(id.clone(), "r".repeat(*size));
                        if *failed {
                            m.extras.insert("is_error".into(), json!(true));
                        }
                        out.push(m);
                    }
                }
                last_id = ids.last().cloned();
            }
            Step::Orphan(n) => out.push(Message::tool(format!("ghost{}", out.len()), "o".repeat(*n))),
            Step::Duplicate => {
                // An id reused after it was answered is fine; twice in one turn is not.
                if let Some(id) = &last_id {
                    out.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(id.clone(), "t0", "{}")]));
                    out.push(Message::tool(id.clone(), "reused"));
                }
                next += 1;
                let id = format!("c{next}");
                duplicate = true;
                out.push(Message::assistant("").with_tool_calls(vec![
                    ToolCall::new(id.clone(), "t0", "{}"),
                    ToolCall::new(id.clone(), "t1", "{}"),
                ]));
                out.push(Message::tool(id, "dup"));
            }
            Step::Sticky(n) => out.push(Message::user("s".repeat(*n)).sticky()),
        }
    }
    (out, duplicate)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn compact_never_panics_and_never_hands_back_a_broken_conversation(
        steps in prop::collection::vec(step(), 0..24),
        budget in 200usize..20_000,
        keep_recent in 0usize..8,
        aging in any::<bool>(),
        summarizer in 0u8..3,
        record in prop::bool::weighted(0.25),
    ) {
        let (input, duplicate) = build(&steps);
        let config = CompactorConfig::builder(budget)
            .keep_recent(keep_recent)
            .age_observations(aging)
            .age_min_chars(500)
            .age_reclaim_min(2_000)
            .build()
            .unwrap();
        let mut compactor = Compactor::new(config, Arc::new(HeuristicCounter));
        match summarizer {
            1 => compactor = compactor.with_summarizer(Scripted::always(reply("A short summary."))),
            2 => compactor = compactor.with_summarizer(Scripted::always(truncated("cut short"))),
            _ => {}
        }
        match run(&compactor, &input) {
            Err(CompactError::InvalidInput { .. }) => prop_assert!(duplicate, "refused without a duplicate id"),
            Err(other) => prop_assert!(false, "unexpected error {other}"),
            Ok(result) => {
                prop_assert!(!duplicate, "a duplicate id was accepted");
                if let Err(problem) = provider_valid(&result.messages) {
                    prop_assert!(false, "{problem}");
                }
                let sticky_in: Vec<&Message> = input.iter().filter(|m| m.is_sticky()).collect();
                let sticky_out: Vec<&Message> = result.messages.iter().filter(|m| m.is_sticky()).collect();
                prop_assert_eq!(sticky_in, sticky_out);
                if record {
                    assert_pass_replays(&input, &result);
                }
            }
        }
    }
}
