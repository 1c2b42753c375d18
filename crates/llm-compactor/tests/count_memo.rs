//! The memo gives back the wrapped counter's numbers exactly, and a conversation that
//! grows by one turn per round costs one message's count per round.

use crate::common;
use crate::count_support;

use std::sync::Arc;

use llm_compactor::count::{BpeCounter, CalibratedCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::message::ToolCall;
use llm_compactor::{Message, Role};
use proptest::prelude::*;

/// Counts `messages[..start]` at once, then grows it one message per round through
/// `memo`, checking every round against the plain counter's per-message sum and that
/// only the new message was counted.
fn grow_and_check<C: TokenCounter>(plain: &C, memo: &MemoCounter<C>, messages: &[Message], start: usize, label: &str) {
    let start = start.min(messages.len());
    let mut expected = plain.count_messages(&messages[..start]);
    assert_eq!(
        memo.count_messages(&messages[..start]),
        expected,
        "{label}, first {start}"
    );
    for round in start + 1..=messages.len() {
        expected += plain.count_message(&messages[round - 1]);
        let misses = memo.stats().misses;
        assert_eq!(
            memo.count_messages(&messages[..round]),
            expected,
            "{label}, round {round}"
        );
        assert!(
            memo.stats().misses - misses <= 1,
            "{label}, round {round}: recounted old messages"
        );
        assert!(memo.stats().entries <= round);
    }
    assert_eq!(
        memo.count_messages(messages),
        plain.count_messages(messages),
        "{label}, full recount"
    );
}

#[test]
fn real_trajectories_grow_with_the_heuristic() {
    for path in common::mini_swe_agent_files() {
        let messages = count_support::mini_swe_agent_messages(&path);
        let memo = MemoCounter::new(HeuristicCounter);
        // Every file, growing through its last 30 turns (hashing a whole transcript per
        // round is quadratic in a debug build).
        let start = messages.len().saturating_sub(30);
        grow_and_check(&HeuristicCounter, &memo, &messages, start, &path.display().to_string());
    }
}

#[test]
fn real_trajectories_grow_with_o200k() {
    let files = common::mini_swe_agent_files();
    for path in count_support::sample(&files, 6) {
        let messages = count_support::mini_swe_agent_messages(&path);
        let plain = BpeCounter::o200k();
        let memo = MemoCounter::new(plain);
        grow_and_check(&plain, &memo, &messages, 0, &path.display().to_string());

        // A compaction: the middle becomes one summary. The kept messages are still
        // cached; only the summary is new.
        if messages.len() > 10 {
            let mut compacted = messages[..2].to_vec();
            compacted.push(Message::user("[summary] the agent explored the repository"));
            compacted.extend_from_slice(&messages[messages.len() - 6..]);
            let misses = memo.stats().misses;
            assert_eq!(memo.count_messages(&compacted), plain.count_messages(&compacted));
            assert_eq!(memo.stats().misses - misses, 1);
            // Entries not seen in the last call are gone.
            assert_eq!(memo.stats().entries, compacted.len());
            let tools = vec![serde_json::json!({"name": "bash", "parameters": {"type": "object"}})];
            assert_eq!(
                memo.count_request(&compacted, &tools, "ctx"),
                plain.count_request(&compacted, &tools, "ctx")
            );
        }
    }
}

#[test]
fn single_message_counts_read_but_do_not_fill_the_cache() {
    let memo = MemoCounter::new(HeuristicCounter);
    let m = [Message::user("one"), Message::assistant("two")];
    memo.count_messages(&m);
    let stats = memo.stats();
    assert_eq!(memo.count_message(&m[0]), HeuristicCounter.count_message(&m[0]));
    assert_eq!(memo.stats().hits, stats.hits + 1);
    assert_eq!(
        memo.count_message(&Message::user("three")),
        HeuristicCounter.count_message(&Message::user("three"))
    );
    assert_eq!(memo.stats().entries, 2);
    memo.clear();
    assert_eq!(memo.stats().entries, 0);
}

#[test]
fn non_additive_counters_are_delegated() {
    let calibrated = Arc::new(CalibratedCounter::new());
    let memo = MemoCounter::new(calibrated.clone());
    let m = vec![Message::system("s"), Message::user("u"), Message::assistant("a")];
    calibrated.record(&m[..2], "model", Some(1_000));
    assert_eq!(memo.count_messages(&m), calibrated.count_messages(&m));
    assert_eq!(memo.count_messages(&m), 1_000 + HeuristicCounter.count_message(&m[2]));
    assert_eq!(memo.count_request(&m, &[], "x"), calibrated.count_request(&m, &[], "x"));
    assert!(!memo.additive());
}

#[test]
fn a_shared_memo_is_exact_from_many_threads() {
    let memo: Arc<dyn TokenCounter> = Arc::new(MemoCounter::new(HeuristicCounter));
    let conversations: Vec<Vec<Message>> = (0..4)
        .map(|t| {
            (0..50)
                .map(|i| Message::user(format!("thread {t} message {i} {}", "x".repeat(i))))
                .collect()
        })
        .collect();
    std::thread::scope(|scope| {
        for conversation in &conversations {
            let memo = memo.clone();
            scope.spawn(move || {
                for round in 1..=conversation.len() {
                    let part = &conversation[..round];
                    assert_eq!(memo.count_messages(part), HeuristicCounter.count_messages(part));
                }
            });
        }
    });
}

fn arb_message() -> impl Strategy<Value = Message> {
    let role = prop_oneof![
        Just(Role::User),
        Just(Role::Assistant),
        Just(Role::Tool),
        Just(Role::System)
    ];
    // A small alphabet so that equal messages recur.
    (
        role,
        "[ab é\n]{0,12}",
        proptest::option::of("[a-c]{1,3}"),
        any::<bool>(),
    )
        .prop_map(|(role, text, call, sticky)| {
            let mut m = Message::new(role, text);
            if let Some(args) = call {
                m = m.with_tool_calls(vec![ToolCall::new("c", "bash", args)]);
            }
            if sticky { m.sticky() } else { m }
        })
}

#[derive(Clone, Debug)]
enum Op {
    Push(Message),
    Replace(usize, Message),
    RemoveRange(usize, usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => arb_message().prop_map(Op::Push),
        2 => (any::<usize>(), arb_message()).prop_map(|(i, m)| Op::Replace(i, m)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::RemoveRange(a, b)),
    ]
}

proptest! {
    #[test]
    fn memo_equals_the_plain_counter(ops in proptest::collection::vec(arb_op(), 1..40)) {
        let memo = MemoCounter::new(BpeCounter::o200k());
        let plain = BpeCounter::o200k();
        let mut conversation: Vec<Message> = Vec::new();
        for op in ops {
            match op {
                Op::Push(m) => conversation.push(m),
                Op::Replace(i, m) if !conversation.is_empty() => {
                    let i = i % conversation.len();
                    conversation[i] = m;
                }
                Op::RemoveRange(a, b) if !conversation.is_empty() => {
                    let (a, b) = (a % conversation.len(), b % conversation.len());
                    conversation.drain(a.min(b)..=a.max(b));
                }
                _ => {}
            }
            prop_assert_eq!(memo.count_messages(&conversation), plain.count_messages(&conversation));
            prop_assert!(memo.stats().entries <= conversation.len());
            for m in &conversation {
                prop_assert_eq!(memo.count_message(m), plain.count_message(m));
            }
        }
    }
}

/// The simulator's memo keeps every count: a single message's count fills it, and a
/// count of other messages evicts nothing, so replaying the same history again (once per
/// strategy) counts nothing twice; the numbers stay the wrapped counter's.
#[test]
fn a_memo_keeping_all_counts_each_message_once_across_replays() {
    let memo = MemoCounter::keeping_all(HeuristicCounter);
    let history: Vec<Message> = (0..20).map(|i| Message::user(format!("message {i}"))).collect();
    for message in &history {
        assert_eq!(memo.count_message(message), HeuristicCounter.count_message(message));
    }
    assert_eq!(
        memo.count_messages(&history[..5]),
        HeuristicCounter.count_messages(&history[..5])
    );
    let before = memo.stats();
    assert_eq!(memo.count_messages(&history), HeuristicCounter.count_messages(&history));
    assert_eq!(memo.stats().misses, before.misses, "the second replay counts nothing");
    assert_eq!(memo.stats().entries, 20);
    let bounded = MemoCounter::new(HeuristicCounter);
    bounded.count_messages(&history);
    bounded.count_messages(&history[..5]);
    assert_eq!(
        bounded.stats().entries,
        5,
        "the default memo holds the last call's messages"
    );
}

/// The memo of a shared counter (`counter_by_name`'s) keeps recently seen counts up to a
/// capacity: callers counting different conversations in turn (a client's history, then
/// the rewrite that stands for it) do not evict each other's, a message counted on its
/// own is not counted again, and the cache never holds more than the capacity or the last
/// call's messages.
#[test]
fn a_capacity_memo_keeps_conversations_counted_in_turn_and_stays_bounded() {
    let memo = MemoCounter::with_capacity(HeuristicCounter, 100);
    let history: Vec<Message> = (0..40).map(|i| Message::user(format!("turn {i}"))).collect();
    let rewrite = vec![Message::user("summary"), history[39].clone()];
    assert_eq!(memo.count_messages(&history), HeuristicCounter.count_messages(&history));
    assert_eq!(memo.count_messages(&rewrite), HeuristicCounter.count_messages(&rewrite));
    let before = memo.stats().misses;
    assert_eq!(memo.count_messages(&history), HeuristicCounter.count_messages(&history));
    assert_eq!(memo.stats().misses, before, "the history's counts were kept");
    let single = Message::assistant("counted as it arrived");
    assert_eq!(memo.count_message(&single), HeuristicCounter.count_message(&single));
    let before = memo.stats().misses;
    let grown: Vec<Message> = history.iter().cloned().chain([single]).collect();
    assert_eq!(memo.count_messages(&grown), HeuristicCounter.count_messages(&grown));
    assert_eq!(memo.stats().misses, before, "a single count fills the cache");
    for round in 0..50 {
        let other: Vec<Message> = (0..30)
            .map(|i| Message::user(format!("round {round} message {i}")))
            .collect();
        assert_eq!(memo.count_messages(&other), HeuristicCounter.count_messages(&other));
        assert!(memo.stats().entries <= 100, "round {round}: {:?}", memo.stats());
        let one = Message::user(format!("single {round}"));
        assert_eq!(memo.count_message(&one), HeuristicCounter.count_message(&one));
        assert!(memo.stats().entries <= 100, "round {round}: {:?}", memo.stats());
    }
    // A call larger than the capacity keeps its own messages, and only them.
    let big: Vec<Message> = (0..150).map(|i| Message::user(format!("big {i}"))).collect();
    assert_eq!(memo.count_messages(&big), HeuristicCounter.count_messages(&big));
    assert_eq!(memo.stats().entries, 150);
    let before = memo.stats().misses;
    assert_eq!(memo.count_messages(&big), HeuristicCounter.count_messages(&big));
    assert_eq!(memo.stats().misses, before);
}
