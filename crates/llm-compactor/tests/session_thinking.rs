//! Signed thinking through the `ContextManager` (issue 39): after a pass that summarizes
//! or stubs before kept turns, `Prepared::stale_thinking` says how many thinking blocks
//! the conversation carries on a prefix they were not produced under, so that the caller
//! asks the provider to drop them (`drop_block`) instead of getting a 400. Checked
//! against a signing rule in the test (a block is signed with the digest of every message
//! before its turn): the count is exactly the number of blocks that rule refuses, before
//! and after each pass, prepared or inline.

use crate::session_support;

use std::sync::Arc;

use llm_compactor::Usage;
use llm_compactor::compactor::{Compactor, CompactorConfig};
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Content, Message, Part, ToolCall, conversation_digest};
use llm_compactor::session::{
    CompactionReason, ContextManager, PrepareOptions, RequestShape, Session, TYPE_STALE_THINKING, Transcript,
};
use llm_compactor::summarize::{StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::json;
use session_support::fixed_options;
use tokio_util::sync::CancellationToken;

/// A summarizer that answers at once (a model's place: it makes the manager prepare).
struct Quick;

#[async_trait::async_trait]
impl Summarizer for Quick {
    fn name(&self) -> &str {
        "quick"
    }
    async fn summarize(&self, _: SummaryRequest, _: &CancellationToken) -> Result<SummaryReply, SummarizerError> {
        Ok(SummaryReply::new(
            "The agent read the log parts in order.",
            StopReason::Complete,
            Usage::default(),
        ))
    }
}

/// The signature of a thinking block opening a turn after `before`.
fn sign(before: &[Message]) -> String {
    conversation_digest(&without_ids(before))
}

fn without_ids(messages: &[Message]) -> Vec<Message> {
    messages.iter().map(|m| Message { id: None, ..m.clone() }).collect()
}

/// Thinking blocks of `messages` whose signature is not the digest of their prefix.
fn refused(messages: &[Message]) -> usize {
    (0..messages.len())
        .filter(|&i| {
            let Content::Parts(parts) = &messages[i].content else {
                return false;
            };
            parts.iter().any(|part| match part {
                Part::Thinking { extras, .. } => extras.get("signature") != Some(&json!(sign(&messages[..i]))),
                _ => false,
            })
        })
        .count()
}

/// One round of a thinking tool loop: the model's turn (signed after `before`) and the
/// tool's `chars`-char result.
fn round(manager: &mut ContextManager, n: usize, chars: usize) {
    let before = manager.messages().to_vec();
    let mut turn = Message::assistant("");
    turn.content = Content::Parts(vec![
        Part::from_value(json!({"type": "thinking", "thinking": format!("round {n}"), "signature": sign(&before)}))
            .unwrap(),
        Part::text(format!("Reading part {n}.")),
    ]);
    let call = ToolCall::new(format!("c{n}"), "read", json!({"part": n}).to_string());
    manager
        .record_response(None, "claude-opus-5-5", [turn.with_tool_calls(vec![call])])
        .unwrap();
    manager
        .push(Message::tool(
            format!("c{n}"),
            format!("part {n}: {}", "log line ".repeat(chars / 9)),
        ))
        .unwrap();
}

async fn run(prepare: bool) {
    let dir = tempfile::tempdir().unwrap();
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    // The prepared run leaves aging to the summaries, so that its passes are the
    // background ones.
    let config = CompactorConfig::builder(6_000)
        .keep_recent(2)
        .age_observations(!prepare)
        .build()
        .unwrap();
    let compactor = Arc::new(Compactor::new(config, counter).with_summarizer(Arc::new(Quick)));
    let path = dir.path().join("s.jsonl");
    let session = Session::create(&path, fixed_options()).unwrap();
    let mut manager = ContextManager::new(compactor, session);
    manager = if prepare {
        manager.with_preparation(PrepareOptions::fixed(0.5))
    } else {
        manager.without_preparation()
    };
    manager.push(Message::system("You are a careful agent.")).unwrap();
    manager.push(Message::user("Find the failure in the log.")).unwrap();
    let (mut passes, mut stale_after_a_pass, mut installed) = (0, 0, 0);
    for n in 0..40 {
        round(&mut manager, n, 1_500);
        // The agent takes its time between requests: a pass prepared in the background
        // is ready by the next one.
        manager.settle_preparation().await;
        let prepared = manager
            .prepare(RequestShape::default(), CancellationToken::new())
            .await
            .unwrap();
        let truth = refused(&prepared.messages);
        assert_eq!(
            prepared.stale_thinking, truth,
            "round {n}: reported vs refused by the rule"
        );
        if let Some(pass) = &prepared.pass {
            passes += 1;
            installed += usize::from(pass.reason == CompactionReason::Prepared);
            stale_after_a_pass += usize::from(truth > 0);
        }
    }
    manager.shutdown().await;
    println!(
        "thinking loop through the ContextManager (prepare {prepare}): {passes} passes ({installed} prepared), {stale_after_a_pass} left stale thinking"
    );
    // The gauge can fail: passes did move thinking (else the count would be trivially 0).
    assert!(
        passes >= 3 && stale_after_a_pass >= 1,
        "{passes} passes, {stale_after_a_pass} stale"
    );
    assert_eq!(installed > 0, prepare, "the prepared path is the one exercised");
    // The transcript says, beside each such pass, how many blocks it left stale.
    let lines = Transcript::read(&path)
        .unwrap()
        .entries()
        .iter()
        .filter(|e| e.record.kind() == TYPE_STALE_THINKING)
        .count();
    assert_eq!(lines, stale_after_a_pass);
}

#[tokio::test]
async fn stale_thinking_counts_exactly_the_blocks_an_inline_pass_moved() {
    run(false).await;
}

#[tokio::test]
async fn stale_thinking_counts_exactly_the_blocks_a_prepared_pass_moved() {
    run(true).await;
}

/// A one-shot pass (`Compactor::compact`, as `compactor compact` and Python's `compact`
/// run it) reports the blocks it left stale: exactly those the signing rule refuses.
#[tokio::test]
async fn a_one_shot_pass_reports_the_thinking_it_moved() {
    let mut messages = vec![
        Message::system("You are a careful agent."),
        Message::user("Find the failure in the log."),
    ];
    for n in 0..24 {
        let mut turn = Message::assistant("");
        turn.content = Content::Parts(vec![
            Part::from_value(
                json!({"type": "thinking", "thinking": format!("round {n}"), "signature": sign(&messages)}),
            )
            .unwrap(),
            Part::text(format!("Reading part {n}.")),
        ]);
        let call = ToolCall::new(format!("c{n}"), "read", json!({"part": n}).to_string());
        messages.push(turn.with_tool_calls(vec![call]));
        messages.push(Message::tool(
            format!("c{n}"),
            format!("part {n}: {}", "log line ".repeat(160)),
        ));
    }
    assert_eq!(refused(&messages), 0, "every block valid as sent");
    let config = CompactorConfig::builder(6_000).keep_recent(2).build().unwrap();
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(Quick));
    let result = compactor.compact(&messages, Default::default()).await.unwrap();
    assert!(result.dropped > 0, "the pass summarized");
    let truth = refused(&result.messages);
    assert!(
        truth >= 1,
        "the pass moved kept thinking: else this test proves nothing"
    );
    assert_eq!(result.stale_thinking.len(), truth);
    let json = serde_json::to_value(&result).unwrap();
    assert_eq!(json["stale_thinking"].as_array().unwrap().len(), truth);
    // Without thinking in the conversation, nothing is reported (and the field is absent).
    let plain: Vec<Message> = messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Content::Parts(parts) = &mut m.content {
                parts.retain(|p| !matches!(p, Part::Thinking { .. }));
            }
            m
        })
        .collect();
    let result = compactor.compact(&plain, Default::default()).await.unwrap();
    assert!(result.stale_thinking.is_empty());
    assert!(serde_json::to_value(&result).unwrap().get("stale_thinking").is_none());
}
