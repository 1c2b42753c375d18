//! [`Conversation`]: whatever sequence of appends, truncations and replacements it goes
//! through, its cached counts, sums and prefix digests equal a from-scratch computation
//! over its messages; and a calibrated counter driven through a conversation (records
//! and counts) gives exactly what the same counter driven through slices gives.

use std::sync::Arc;

use llm_compactor::count::{CalibratedCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::message::{ToolCall, conversation_digest};
use llm_compactor::{Conversation, Message, Usage};
use proptest::prelude::*;

fn message() -> impl Strategy<Value = Message> {
    let text = "[a-z é\\n]{0,30}";
    prop_oneof![
        text.prop_map(Message::user),
        text.prop_map(|t| Message::user(t).sticky()),
        text.prop_map(Message::assistant),
        (text, 1..3usize).prop_map(|(t, n)| Message::assistant(t)
            .with_tool_calls((0..n).map(|i| ToolCall::new(format!("c{i}"), "bash", "{}")).collect())),
        (0..3usize, text).prop_map(|(i, t)| Message::tool(format!("c{i}"), t)),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Push(Box<Message>),
    Truncate(usize),
    /// Keep the first `usize` messages, then these.
    Replace(usize, Vec<Message>),
    /// A model call billed this much for the conversation as it is.
    Bill(u64),
    /// A model call that reported no usage.
    NoUsage,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => message().prop_map(|m| Op::Push(Box::new(m))),
        1 => (0..12usize).prop_map(Op::Truncate),
        1 => (0..12usize, prop::collection::vec(message(), 0..4)).prop_map(|(k, m)| Op::Replace(k, m)),
        2 => (1..100_000u64).prop_map(Op::Bill),
        1 => Just(Op::NoUsage),
    ]
}

fn check_against_scratch(conversation: &Conversation, counter: &dyn TokenCounter) {
    let messages = conversation.messages();
    let counts: Vec<usize> = messages.iter().map(|m| counter.count_message(m)).collect();
    assert_eq!(conversation.counts(), counts.as_slice());
    assert_eq!(conversation.tokens_in(..), counts.iter().sum::<usize>());
    for k in 0..=messages.len() {
        assert_eq!(conversation.tokens_in(k..), counts[k..].iter().sum::<usize>());
        assert_eq!(
            conversation.prefix_digest(k).unwrap(),
            conversation_digest(&messages[..k])
        );
    }
    assert!(conversation.prefix_digest(messages.len() + 1).is_none());
}

proptest! {
    #[test]
    fn cached_counts_and_digests_equal_a_recomputation(ops in prop::collection::vec(op(), 0..30)) {
        let counter: Arc<dyn TokenCounter> = Arc::new(MemoCounter::new(HeuristicCounter));
        let mut conversation = Conversation::new(counter.clone());
        for op in ops {
            match op {
                Op::Push(m) => {
                    conversation.push(*m);
                }
                Op::Truncate(k) => conversation.truncate(k),
                Op::Replace(k, tail) => {
                    let mut next = conversation.messages()[..k.min(conversation.len())].to_vec();
                    next.extend(tail);
                    conversation.replace(next);
                }
                Op::Bill(_) | Op::NoUsage => {
                    // Digest a prefix now and then, so later changes must invalidate it.
                    conversation.digest();
                }
            }
            check_against_scratch(&conversation, &HeuristicCounter);
            prop_assert_eq!(conversation.tokens(), HeuristicCounter.count_messages(conversation.messages()));
        }
    }

    /// One calibrated counter fed slices, another fed the same conversation through
    /// [`Conversation`]: every count and every record is the same.
    #[test]
    fn the_calibrated_counter_counts_a_conversation_as_its_slice(ops in prop::collection::vec(op(), 0..30)) {
        let by_slice = CalibratedCounter::new();
        let calibrated = Arc::new(CalibratedCounter::new());
        let mut conversation = Conversation::new(calibrated.clone());
        for op in ops {
            match op {
                Op::Push(m) => {
                    conversation.push(*m);
                }
                Op::Truncate(k) => conversation.truncate(k),
                Op::Replace(k, tail) => {
                    let mut next = conversation.messages()[..k.min(conversation.len())].to_vec();
                    next.extend(tail);
                    conversation.replace(next);
                }
                Op::Bill(billed) => {
                    let usage = Usage { input_tokens: billed, ..Usage::default() };
                    by_slice.record_usage(conversation.messages(), "m", &usage);
                    calibrated.record_conversation_usage(&conversation, "m", Some(&usage));
                }
                Op::NoUsage => {
                    by_slice.record_optional_usage(conversation.messages(), "m", None);
                    calibrated.record_conversation_usage(&conversation, "m", None);
                }
            }
            prop_assert_eq!(calibrated.calibration(), by_slice.calibration());
            let expected = by_slice.count_messages(conversation.messages());
            prop_assert_eq!(conversation.tokens(), expected);
            prop_assert_eq!(calibrated.calibration(), by_slice.calibration());
            prop_assert_eq!(
                calibrated.count_conversation_request(&conversation, &[serde_json::json!({"name": "t"})], "ctx"),
                by_slice.count_request(conversation.messages(), &[serde_json::json!({"name": "t"})], "ctx")
            );
            // The slice API of the conversation-driven counter agrees too (its
            // fingerprint ledger was kept up to date by the conversation records).
            prop_assert_eq!(calibrated.count_messages(conversation.messages()), expected);
            prop_assert_eq!(calibrated.calibration(), by_slice.calibration());
        }
    }
}

#[test]
fn a_conversation_counted_by_another_counter_is_recounted_not_misread() {
    let conversation = Conversation::from_messages(
        Arc::new(HeuristicCounter),
        vec![Message::user("abcdefgh"), Message::assistant("ijkl")],
    );
    // A counter that counts 1 per message: it never counted this conversation, so its
    // count of it must be its own.
    struct One;
    impl TokenCounter for One {
        fn name(&self) -> &str {
            "one"
        }
        fn count_text(&self, _: &str) -> usize {
            1
        }
        fn count_message(&self, _: &Message) -> usize {
            1
        }
    }
    assert_eq!(One.count_conversation(&conversation), 2);
    assert_eq!(
        HeuristicCounter.count_conversation(&conversation),
        conversation.tokens()
    );
    assert_eq!(conversation.tokens(), 10 + 9);
}
