//! `Compactor::compact` with the real local summarizer: the summary wins.
#![cfg(feature = "local")]

use crate::local_support;

use std::sync::Arc;

use llm_compactor::backend::local::{LocalConfig, LocalSummarizer};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message, ToolCall};

fn conversation() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent. Use the tools to fix bugs."),
        Message::user("The test test_parse_date in tests/test_dates.py fails. Fix utils/dates.py."),
    ];
    for round in 0..5 {
        let id = format!("call_{round}");
        let path = format!("utils/module_{round}.py");
        messages.push(
            Message::assistant(format!("Reading {path}.")).with_tool_calls(vec![ToolCall::new(
                &id,
                "read_file",
                format!("{{\"path\": \"{path}\"}}"),
            )]),
        );
        let body: String = (1..=20)
            .map(|n| format!("{n:4}  def helper_{round}_{n}(value):  # converts the value for module {round}\n"))
            .collect();
        messages.push(Message::tool(&id, body));
    }
    messages.push(Message::assistant(
        "The bug is in parse_date: day and month are swapped. I fixed it.",
    ));
    messages.push(Message::user("Thanks. Continue."));
    messages
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_local_summary_is_accepted_and_the_conversation_shrinks() {
    let Some(path) = local_support::default_model().await else {
        return;
    };
    let local = Arc::new(LocalSummarizer::open(LocalConfig::new(path)).expect("opens"));
    let config = CompactorConfig::builder(2000)
        .keep_recent(2)
        .summary_max_tokens(160)
        .build()
        .expect("config");
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(local);
    let messages = conversation();
    let result = compactor
        .compact(&messages, CompactOptions::default())
        .await
        .expect("compacts");
    eprintln!(
        "tokens {} -> {}, fallback {}, attempts {:?}\nsummary:\n{}",
        result.tokens_before, result.tokens_after, result.fallback, result.attempts, result.summary
    );
    assert!(!result.fallback, "the summary was accepted, not a hard trim");
    assert!(!result.summary.trim().is_empty());
    assert!(result.tokens_after < result.tokens_before);
    assert!(result.messages.len() < messages.len());
    assert!(result.usage.input_tokens > 0 && result.usage.output_tokens > 0);
}
