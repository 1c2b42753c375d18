//! Planning alone (no summarizer): cut, eligibility and the hard-trim plan over a
//! synthetic 10,000-message, ~1M-token conversation; the trim over one turn with 10,000
//! parallel results; and cutting the middle into summarizer-sized chunks.

mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{BpeCounter, HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{self, AgingRules, Pairs};
use llm_compactor::summarize::{next_chunk, render_units};

/// 10,000 messages: a system prompt, then 3,333 rounds of (assistant call, tool result,
/// user nudge); results average ~700 chars, one in fifty is fat (20,000), some calls repeat.
fn conversation() -> Vec<Message> {
    support::agent_run(3_333, |size| "x".repeat(size))
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
    // One assistant turn answered by 10,000 parallel results (the trim's candidates were
    // quadratic in such a run).
    let calls: Vec<ToolCall> = (0..10_000).map(|i| ToolCall::new(format!("c{i}"), "t", "{}")).collect();
    let mut parallel = vec![
        Message::system("s"),
        Message::user("u"),
        Message::assistant("").with_tool_calls(calls),
    ];
    parallel.extend((0..10_000).map(|i| Message::tool(format!("c{i}"), "r".repeat(100))));
    parallel.push(Message::user("recent"));
    group.bench_function("trim, 10,000 parallel results", |b| {
        b.iter(|| {
            let pairs = Pairs::build(&parallel);
            let layout = plan::layout_with(&parallel, &pairs, 1);
            let mut count = |m: &[Message]| counter.count_messages(m);
            black_box(plan::plan_trim(&parallel, &pairs, &layout, 100, usize::MAX, &mut count).map(|t| t.tokens))
        })
    });
    // The whole middle cut into 128k-token requests, estimated with o200k (was quadratic
    // in the chunk: minutes).
    let bpe = BpeCounter::o200k();
    let pairs = Pairs::build(&messages);
    let layout = plan::layout_with(&messages, &pairs, 6);
    let units = render_units(&messages, &layout.middle, 2000);
    group.bench_function("chunking, o200k, 128k room", |b| {
        b.iter(|| {
            let estimate = |t: &str| bpe.count_text(t).max(t.chars().count().div_ceil(3));
            let (mut start, mut chunks) = (0, 0);
            while start < units.len() {
                start = next_chunk(&units, start, None, 128_000, &estimate).1;
                chunks += 1;
            }
            black_box(chunks)
        })
    });
    group.finish();
}

criterion_group!(benches, planning);
criterion_main!(benches);
