//! The incremental state of the counters equals a from-scratch computation after any
//! sequence of appends, in-place replacements and truncations: the calibrated counter's
//! recorded digest (continued from its saved SHA-256 state) is `conversation_digest` of
//! what was sent, its count is the bill plus the fallback's count of the rest whenever
//! the list starts with what was billed,
//! and the memo's counts (updated in place) are the wrapped counter's.

use llm_compactor::count::{CalibratedCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::message::{conversation_digest, message_digest};
use llm_compactor::{Message, Usage};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Step {
    Append(String),
    Replace(usize, String),
    Truncate(usize),
    Bill(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => "[a-z ]{0,12}".prop_map(Step::Append),
        1 => (any::<usize>(), "[a-z ]{0,12}").prop_map(|(i, t)| Step::Replace(i, t)),
        1 => any::<usize>().prop_map(Step::Truncate),
        2 => (1u64..100_000).prop_map(Step::Bill),
    ]
}

proptest! {
    #[test]
    fn incremental_state_equals_from_scratch(steps in prop::collection::vec(step(), 0..40)) {
        let calibrated = CalibratedCounter::new();
        let memo = MemoCounter::new(HeuristicCounter);
        let mut messages = vec![Message::system("rules")];
        // The oracle: the last bill (n, P); it anchors whenever the list starts with what
        // was billed (a list that does not is counted by the fallback, and the record is
        // kept for when it does again).
        let mut anchor: Option<(Vec<Message>, u64)> = None;
        for step in steps {
            match step {
                Step::Append(text) => messages.push(if messages.len() % 2 == 0 { Message::assistant(text) } else { Message::user(text) }),
                Step::Replace(i, text) => {
                    let i = i % messages.len();
                    messages[i] = Message::user(text);
                }
                Step::Truncate(n) => messages.truncate(1 + n % messages.len()),
                Step::Bill(billed) => {
                    calibrated.record_usage(&messages, "m", &Usage { input_tokens: billed, ..Usage::default() });
                    let record = calibrated.calibration().expect("recorded");
                    prop_assert_eq!(&record.digest, &conversation_digest(&messages));
                    prop_assert_eq!(record.messages, messages.len());
                    anchor = Some((messages.clone(), billed));
                }
            }
            let expected = match &anchor {
                Some((sent, billed)) if messages.starts_with(sent) =>
                    *billed as usize + HeuristicCounter.count_messages(&messages[sent.len()..]),
                _ => HeuristicCounter.count_messages(&messages),
            };
            prop_assert_eq!(calibrated.count_messages(&messages), expected);
            prop_assert_eq!(memo.count_messages(&messages), HeuristicCounter.count_messages(&messages));
            prop_assert_eq!(memo.count_each(&messages), messages.iter().map(|m| HeuristicCounter.count_message(m)).collect::<Vec<_>>());
            let distinct: std::collections::HashSet<String> = messages.iter().map(message_digest).collect();
            prop_assert_eq!(memo.stats().entries, distinct.len());
        }
    }
}
