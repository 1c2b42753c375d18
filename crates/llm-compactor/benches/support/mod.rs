//! What the benchmarks share: a deterministic synthetic agent run, and a prefix of a
//! corpus cut at a token count.

#![allow(dead_code)]

use llm_compactor::count::{BpeCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};

/// A system prompt, then `rounds` rounds of (assistant `fs_read` call, its result, a user
/// nudge). Results are `body(size)` for sizes of 200-1,200 chars, one in fifty of 20,000;
/// the paths cycle over 700 files, so some calls repeat.
pub fn agent_run(rounds: usize, body: impl Fn(usize) -> String) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a coding agent.")];
    for i in 0..rounds {
        let id = format!("call_{i}");
        let path = format!("src/file_{}.rs", i % 700);
        messages.push(
            Message::assistant(format!("Looking at {path}.")).with_tool_calls(vec![ToolCall::new(
                id.clone(),
                "fs_read",
                format!("{{\"path\":\"{path}\"}}"),
            )]),
        );
        let size = if i % 50 == 0 { 20_000 } else { 200 + (i * 7919) % 1000 };
        messages.push(Message::tool(id, body(size)));
        messages.push(Message::user(format!("ok {i}")));
    }
    messages
}

/// The first messages of `corpus` (cycled) whose o200k count reaches `target`.
pub fn conversation_of(corpus: &[Message], target: usize) -> Vec<Message> {
    let counter = BpeCounter::o200k();
    let mut total = 0;
    let mut conversation = Vec::new();
    for message in corpus.iter().cycle() {
        if total >= target {
            break;
        }
        total += counter.count_message(message);
        conversation.push(message.clone());
    }
    conversation
}
