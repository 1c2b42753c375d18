//! The hard trim counted by arithmetic (`TrimSearch::choose` with an additive counter) gives exactly the plan of
//! the trim that builds and counts every candidate (`TrimSearch::choose_by`, the old algorithm,
//! kept as the oracle), on real trajectories and on generated conversations; and the
//! heuristic's tool-call chars, counted without building the JSON, equal the rendering's.

use crate::common;
use crate::count_support;

use llm_compactor::count::framing::{tool_calls_json, tool_calls_json_chars};
use llm_compactor::count::{BpeCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{self, Pairs, TrimPlan};
use proptest::prelude::*;

fn both(
    messages: &[Message],
    keep_recent: usize,
    goal: usize,
    counter: &dyn TokenCounter,
) -> (Option<TrimPlan>, Option<TrimPlan>) {
    both_under(messages, keep_recent, goal, usize::MAX, counter)
}

fn both_under(
    messages: &[Message],
    keep_recent: usize,
    goal: usize,
    ceiling: usize,
    counter: &dyn TokenCounter,
) -> (Option<TrimPlan>, Option<TrimPlan>) {
    let pairs = Pairs::build(messages);
    let layout = plan::layout_with(messages, &pairs, keep_recent);
    let mut count = |m: &[Message]| counter.count_messages(m);
    let oracle = plan::TrimSearch::new(messages, &pairs, &layout, goal)
        .ceiling(ceiling)
        .plan_by(&mut count);
    let counted = plan::TrimSearch::new(messages, &pairs, &layout, goal)
        .ceiling(ceiling)
        .plan(counter);
    (oracle, counted)
}

#[test]
fn the_counted_trim_is_the_built_trim_on_real_trajectories() {
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let bpe = MemoCounter::new(BpeCounter::o200k());
    let mut compared = 0;
    for path in files.iter().step_by(3) {
        let messages = count_support::mini_swe_agent_messages(path);
        let total = HeuristicCounter.count_messages(&messages);
        for goal in [total / 10, total * 4 / 10, total * 9 / 10] {
            let (oracle, counted) = both(&messages, 6, goal, &HeuristicCounter);
            assert_eq!(oracle, counted, "{} heuristic goal {goal}", path.display());
            compared += usize::from(counted.is_some());
        }
        let (oracle, counted) = both(&messages, 4, total / 3, &bpe);
        assert_eq!(oracle, counted, "{} o200k", path.display());
    }
    assert!(compared > 0, "no real trajectory had a middle to trim");
}

/// A trim that keeps the last 40% counts (with a cold memo: tokenizes) little more than
/// what it keeps: the suffix is counted from the end only as far as the goal reaches.
#[test]
fn a_cold_memo_trim_counts_what_it_keeps_not_the_conversation() {
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let messages: Vec<Message> = files
        .iter()
        .take(8)
        .flat_map(|p| count_support::mini_swe_agent_messages(p))
        .collect();
    let goal = HeuristicCounter.count_messages(&messages) * 4 / 10;
    let memo = MemoCounter::new(HeuristicCounter);
    let pairs = Pairs::build(&messages);
    let layout = plan::layout_with(&messages, &pairs, 6);
    let plan = plan::TrimSearch::new(&messages, &pairs, &layout, goal)
        .plan(&memo)
        .expect("a trim");
    let counted = memo.stats().misses as usize;
    let kept = plan.messages.len();
    // The kept messages, at most one chunk (32) past the goal for the bisection's
    // probes, and the notices (one per probe).
    assert!(
        counted <= kept + 32 + 64,
        "counted {counted} messages to keep {kept} of {}",
        messages.len()
    );
    // ...and it is the plan of the algorithm that counts everything.
    let (oracle, _) = both(&messages, 6, goal, &HeuristicCounter);
    assert_eq!(oracle, Some(plan));
}

fn message() -> impl Strategy<Value = Message> {
    let text = "[a-z \\n\"\\\\é\u{1}]{0,40}";
    prop_oneof![
        text.prop_map(Message::user),
        text.prop_map(|t| Message::user(t).sticky()),
        (text, 0..3usize).prop_map(|(t, n)| Message::assistant(t).with_tool_calls(
            (0..n)
                .map(|i| ToolCall::new(format!("c{i}"), "bash", "{\"x\":\"\\n\"}"))
                .collect()
        )),
        (0..3usize, text).prop_map(|(i, t)| Message::tool(format!("c{i}"), t)),
    ]
}

proptest! {
    #[test]
    fn the_counted_trim_is_the_built_trim(
        mut messages in prop::collection::vec(message(), 0..40),
        keep in 0..6usize,
        goal in 0..400usize,
        ceiling in prop_oneof![Just(usize::MAX), 0..500usize],
    ) {
        messages.insert(0, Message::system("rules"));
        let (oracle, counted) = both_under(&messages, keep, goal, ceiling, &HeuristicCounter);
        prop_assert_eq!(&oracle, &counted);
        // Counted through a cold memo (the suffix counted piece by piece), and over
        // counts already known, the plan is the same.
        let (_, memoized) = both_under(&messages, keep, goal, ceiling, &MemoCounter::new(HeuristicCounter));
        prop_assert_eq!(&oracle, &memoized);
        let pairs = Pairs::build(&messages);
        let layout = plan::layout_with(&messages, &pairs, keep);
        let counts: Vec<usize> = messages.iter().map(|m| HeuristicCounter.count_message(m)).collect();
        let known = plan::TrimSearch::new(&messages, &pairs, &layout, goal).ceiling(ceiling).known_counts(&counts).plan(&HeuristicCounter);
        prop_assert_eq!(&oracle, &known);
        // The choice, validated as a view, is the plan; the assembled plan passes the
        // validator on its own.
        let chosen = plan::TrimSearch::new(&messages, &pairs, &layout, goal).ceiling(ceiling).choose(&HeuristicCounter);
        prop_assert_eq!(&chosen.map(|c| c.assemble(&messages)), &counted);
        if let Some(plan) = &counted {
            prop_assert!(plan::validate(&messages, &plan.messages, layout.recent_start).is_ok());
        }
    }

    #[test]
    fn tool_call_chars_match_the_rendering(
        calls in prop::collection::vec(("[a-z0-9_\"\\\\]{0,8}", "[a-zé\\t]{0,8}", "\\PC{0,30}|[\u{0}-\u{1f}\"\\\\]{0,10}"), 1..4),
    ) {
        let m = Message::assistant("").with_tool_calls(calls.iter().map(|(i, n, a)| ToolCall::new(i.clone(), n.clone(), a.clone())).collect());
        prop_assert_eq!(tool_calls_json_chars(&m), tool_calls_json(&m).unwrap().chars().count());
    }
}

/// `Compactor::plan` over a memoized counter tokenizes each message once: fitting the
/// recent window counts its messages one by one without emptying the memo, so the trim
/// preview after it hits. And `plan_in` of a `Conversation` counted by that counter is
/// the same report, counting nothing again.
#[test]
fn plan_counts_each_message_once_through_a_memo_and_plan_in_agrees() {
    use std::sync::Arc;

    use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Conversation};

    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let messages: Vec<Message> = files
        .iter()
        .take(3)
        .flat_map(|p| count_support::mini_swe_agent_messages(p))
        .collect();
    let total = HeuristicCounter.count_messages(&messages);
    let memo = Arc::new(MemoCounter::new(HeuristicCounter));
    let config = CompactorConfig::builder(total).build().unwrap();
    let compactor = Compactor::new(config, memo.clone());
    let options = CompactOptions::new().with_target(Some(total * 9 / 10));
    let report = compactor.plan(&messages, &options);
    let trim = report.trim.clone().expect("a trim preview");
    let misses = memo.stats().misses as usize;
    // Every message once, plus one notice per bisection probe.
    assert!(
        misses <= messages.len() + 64,
        "{misses} counts for {} messages (trim keeps {} tokens)",
        messages.len(),
        trim.tokens_after
    );
    let conversation = Conversation::from_messages(memo.clone(), messages.clone());
    let before = memo.stats().misses;
    assert_eq!(compactor.plan_in(&conversation, &options), report);
    assert!(memo.stats().misses - before <= 64, "plan_in counted messages again");
}
