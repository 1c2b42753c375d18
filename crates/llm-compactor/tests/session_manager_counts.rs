//! A `ContextManager` counts the transcript's own conversation (one owner per message):
//! whatever the transcript's lines did to it (appends, elision epochs, compactions,
//! repairs of orphans and unanswered calls), the counts, running sums, prefix digests
//! and aging index the manager reads must be those of the messages as they stand, and
//! the transcript must replay to them.

use crate::engine_support;
use crate::session_support;

use std::sync::Arc;

use engine_support::{Scripted, reply};
use llm_compactor::compactor::CompactOptions;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall, conversation_digest};
use llm_compactor::session::{ContextManager, ManagerError, RequestShape, Session, Transcript};
use llm_compactor::{Compactor, CompactorConfig};
use proptest::prelude::*;
use session_support::{bytes_of, fixed_options};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Debug)]
enum Step {
    User(usize),
    /// A turn of `calls` calls, the ones in the bit mask `answered` answered with
    /// `size` chars each (an unanswered call is repaired by the next pass).
    Turn {
        calls: usize,
        answered: u8,
        size: usize,
    },
    /// A tool result no call asked for (dropped by the next pass's repair).
    Orphan(usize),
    /// The loop asks for the request: a pass runs when one is due.
    Prepare,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (1usize..200).prop_map(Step::User),
        5 => (1usize..3, any::<u8>(), prop_oneof![0usize..100, 400usize..3_000]).prop_map(|(calls, answered, size)| Step::Turn { calls, answered, size }),
        1 => (0usize..100).prop_map(Step::Orphan),
        3 => Just(Step::Prepare),
    ]
}

fn messages_of(step: &Step, next: &mut usize) -> Vec<Message> {
    match step {
        Step::User(n) => vec![Message::user("u".repeat(*n))],
        Step::Turn { calls, answered, size } => {
            let ids: Vec<String> = (0..*calls)
                .map(|_| {
                    *next += 1;
                    format!("c{next}")
                })
                .collect();
            let mut out = vec![
                Message::assistant("").with_tool_calls(
                    ids.iter()
                        .map(|id| ToolCall::new(id.clone(), "read", format!("{{\"path\":\"f{id}.rs\"}}")))
                        .collect(),
                ),
            ];
            for (k, id) in ids.iter().enumerate() {
                if answered & (1 << k) != 0 {
                    out.push(Message::tool(id.clone(), format!("{id}:{}", "r".repeat(*size))));
                }
            }
            out
        }
        Step::Orphan(n) => {
            *next += 1;
            vec![Message::tool(format!("ghost{next}"), "o".repeat(*n))]
        }
        Step::Prepare => Vec::new(),
    }
}

/// What the manager knows of its conversation is what a fresh count of its messages says.
fn assert_known_is_fresh(compactor: &Compactor, manager: &ContextManager) -> Result<(), TestCaseError> {
    let messages = manager.messages();
    let conversation = manager.conversation();
    prop_assert_eq!(conversation.messages(), messages);
    let fresh = HeuristicCounter.count_each(messages);
    prop_assert_eq!(conversation.counts(), fresh.as_slice());
    prop_assert_eq!(conversation.tokens_in(..), HeuristicCounter.count_messages(messages));
    for k in 0..=messages.len() {
        prop_assert_eq!(
            conversation.prefix_digest(k).expect("a prefix"),
            conversation_digest(&messages[..k])
        );
    }
    let options = CompactOptions::default();
    prop_assert_eq!(
        compactor.plan_in(conversation, &options),
        compactor.plan(messages, &options)
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_managers_counts_digests_and_aging_index_follow_every_line_of_its_transcript(
        steps in prop::collection::vec(step(), 1..40),
        budget in 400usize..3_000,
        aging in any::<bool>(),
        keep_recent in 0usize..4,
    ) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("s.jsonl");
        let session = Session::create(&path, fixed_options()).expect("a session");
        let config = CompactorConfig::builder(budget)
            .keep_recent(keep_recent)
            .age_observations(aging)
            .age_min_chars(200)
            .age_reclaim_min(600)
            .build()
            .expect("a valid configuration");
        let compactor = Arc::new(
            Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Scripted::always(reply("A short summary."))),
        );
        // Inline passes: each `prepare` changes the transcript before it returns, which is
        // what this test follows (the runtime below has no timer for a prepared pass).
        let mut manager = ContextManager::new(Arc::clone(&compactor), session).without_preparation();
        manager.push(Message::system("rules").sticky()).expect("an append");
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        let mut next = 0;
        for step in &steps {
            for message in messages_of(step, &mut next) {
                manager.push(message).expect("an append");
            }
            if matches!(step, Step::Prepare) {
                let prepared = runtime.block_on(manager.prepare(RequestShape::default(), CancellationToken::new()));
                // A pass that cannot reach the budget is written and then reported.
                if let Err(error) = prepared
                    && !matches!(error, ManagerError::ContextExhausted { .. })
                {
                    prop_assert!(false, "unexpected error {error}");
                }
            }
            assert_known_is_fresh(&compactor, &manager)?;
        }
        let live = manager.messages().to_vec();
        let session = manager.into_session();
        prop_assert_eq!(session.messages(), live.as_slice());
        drop(session);
        let transcript = Transcript::read(&path).expect("the transcript reads back");
        prop_assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
    }
}

/// The transcript now holds a counted conversation: it, its replay and the manager still
/// move between threads and are shared by reference (an async agent's tasks).
#[test]
fn sessions_replays_and_managers_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Session>();
    send_sync::<llm_compactor::session::Replayer>();
    send_sync::<ContextManager>();
    send_sync::<llm_compactor::Conversation>();
}
