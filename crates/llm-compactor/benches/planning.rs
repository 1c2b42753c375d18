//! Planning alone (no summarizer): cut, eligibility and the hard-trim plan over a
//! synthetic 10,000-message, ~1M-token conversation.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{self, AgingRules, Pairs};

/// 10,000 messages: a system prompt, then rounds of (assistant call, tool result, user
/// nudge); results average ~700 chars, one in fifty is fat (20,000), some calls repeat.
fn conversation() -> Vec<Message> {
    let mut messages = vec![Message::system("You are a coding agent.")];
    let mut i = 0usize;
    while messages.len() < 10_000 {
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
        messages.push(Message::tool(id, "x".repeat(size)));
        messages.push(Message::user(format!("ok {i}")));
        i += 1;
    }
    messages.truncate(10_000);
    messages
}

fn planning(c: &mut Criterion) {
    let messages = conversation();
    let counter = HeuristicCounter;
    eprintln!(
        "bench conversation: {} messages, {} tokens",
        messages.len(),
        counter.count_messages(&messages)
    );
    let rules = AgingRules {
        min_chars: 2048,
        reclaim_min: 49_152,
    };
    let mut group = c.benchmark_group("planning");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    group.bench_function("cut+eligibility", |b| {
        b.iter(|| {
            let pairs = Pairs::build(&messages);
            let layout = plan::layout_with(&messages, &pairs, 6);
            black_box(plan::eligible(&messages, &pairs, &layout, rules).len())
        })
    });
    group.bench_function("cut+eligibility+trim", |b| {
        b.iter(|| {
            let pairs = Pairs::build(&messages);
            let layout = plan::layout_with(&messages, &pairs, 6);
            let eligible = plan::eligible(&messages, &pairs, &layout, rules);
            let mut count = |m: &[Message]| counter.count_messages(m);
            let trim = plan::plan_trim(&messages, &pairs, &layout, 51_200, usize::MAX, &mut count);
            black_box((eligible.len(), trim.map(|t| t.tokens)))
        })
    });
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
