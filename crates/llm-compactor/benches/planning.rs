//! Planning alone (no summarizer): cut, eligibility and the hard-trim plan over a
//! synthetic 10,000-message, ~1M-token conversation; the trim over one turn with 10,000
//! parallel results; and cutting the middle into summarizer-sized chunks.

#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/count_support/mod.rs"]
mod count_support;
mod support;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{BpeCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{self, AgingRules, Pairs};
use llm_compactor::summarize::{next_chunk, render_units};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Conversation};

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
            let trim = plan::TrimSearch::new(&messages, &pairs, &layout, 51_200).plan_by(&mut count);
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
            black_box(
                plan::TrimSearch::new(&parallel, &pairs, &layout, 100)
                    .plan_by(&mut count)
                    .map(|t| t.tokens),
            )
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

/// The real 9,898-message case: the mini-swe-agent trajectories (sorted by file name)
/// concatenated and cycled to 9,898 messages, the same conversation
/// `scripts/bench_langchain.py` trims with LangChain's `trim_messages`. The trim keeps
/// about the last 40% (the goal is 40% of the heuristic total), counted with the
/// heuristic, and with o200k behind a cold memo (a new memo per iteration: every message
/// tokenized once).
/// `f` run on a new thread: the per-thread piece counts of the o200k counter start
/// empty there, as in a new process.
fn on_fresh_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| scope.spawn(f).join().expect("the bench thread"))
}

fn real_9898(c: &mut Criterion) {
    const SIZE: usize = 9_898;
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let mut messages: Vec<Message> = Vec::with_capacity(SIZE);
    'fill: loop {
        for path in &files {
            messages.extend(count_support::mini_swe_agent_messages(path));
            if messages.len() >= SIZE {
                break 'fill;
            }
        }
    }
    messages.truncate(SIZE);
    let heuristic_total = HeuristicCounter.count_messages(&messages);
    let goal = heuristic_total * 4 / 10;
    let o200k_goal = BpeCounter::o200k().count_messages(&messages) * 4 / 10;
    eprintln!(
        "real_9898: {} messages, {heuristic_total} heuristic tokens",
        messages.len()
    );
    let trim = |counter: &dyn TokenCounter, goal: usize| {
        let pairs = Pairs::build(&messages);
        let layout = plan::layout_with(&messages, &pairs, 6);
        plan::TrimSearch::new(&messages, &pairs, &layout, goal)
            .plan(counter)
            .map(|t| t.messages.len())
    };
    let mut group = c.benchmark_group("real_9898");
    group.bench_function("hard_trim_heuristic", |b| {
        b.iter(|| black_box(trim(&HeuristicCounter, goal)))
    });
    // Cold as in a fresh process: a new memo, and a new thread, whose map of piece
    // counts (`count/bpe_pieces.rs`, per thread) starts empty.
    group.bench_function("hard_trim_o200k_cold_memo", |b| {
        b.iter(|| on_fresh_thread(|| black_box(trim(&MemoCounter::new(BpeCounter::o200k()), o200k_goal))))
    });
    // A new memo on a thread that has counted before (a long-lived server): the piece
    // counts are warm.
    group.bench_function("hard_trim_o200k_cold_memo_warm_pieces", |b| {
        b.iter(|| black_box(trim(&MemoCounter::new(BpeCounter::o200k()), o200k_goal)))
    });
    // The choice alone (pairs, layout, the cut chosen and validated as a view, no copy:
    // LangChain's trim also returns references to the same message objects).
    let choose = |counter: &dyn TokenCounter, goal: usize| {
        let pairs = Pairs::build(&messages);
        let layout = plan::layout_with(&messages, &pairs, 6);
        plan::TrimSearch::new(&messages, &pairs, &layout, goal)
            .choose(counter)
            .map(|t| t.cut_index)
    };
    group.bench_function("choose_trim_heuristic", |b| {
        b.iter(|| black_box(choose(&HeuristicCounter, goal)))
    });
    group.bench_function("choose_trim_o200k_cold_memo", |b| {
        b.iter(|| on_fresh_thread(|| black_box(choose(&MemoCounter::new(BpeCounter::o200k()), o200k_goal))))
    });
    group.bench_function("choose_trim_o200k_cold_memo_warm_pieces", |b| {
        b.iter(|| black_box(choose(&MemoCounter::new(BpeCounter::o200k()), o200k_goal)))
    });
    // Where a heuristic trim's time goes: each part alone.
    let pairs = Pairs::build(&messages);
    let layout = plan::layout_with(&messages, &pairs, 6);
    let chosen = plan::TrimSearch::new(&messages, &pairs, &layout, goal)
        .plan(&HeuristicCounter)
        .expect("a trim of the real set");
    group.bench_function("part_pairs_and_layout", |b| {
        b.iter(|| {
            let pairs = Pairs::build(&messages);
            black_box(plan::layout_with(&messages, &pairs, 6).middle.len())
        })
    });
    // The aging preview of `Compactor::plan` over the slice (every call's identity, the
    // eligible results and their stubs), under `age_min_chars` / `age_reclaim_min` defaults.
    let rules = AgingRules {
        min_chars: 2048,
        reclaim_min: 49_152,
    };
    group.bench_function("part_aging_preview", |b| {
        b.iter(|| black_box(plan::eligible(&messages, &pairs, &layout, rules).len()))
    });
    group.bench_function("part_count_each_heuristic", |b| {
        b.iter(|| black_box(HeuristicCounter.count_each(&messages).len()))
    });
    group.bench_function("part_assemble_chosen", |b| {
        b.iter(|| black_box(plan::assemble(&messages, chosen.cut_index, &chosen.notice).0.len()))
    });
    group.bench_function("part_validate_chosen", |b| {
        b.iter(|| black_box(plan::validate(&messages, &chosen.messages, layout.recent_start).is_ok()))
    });
    group.bench_function("part_drop_chosen", |b| {
        b.iter_batched(|| chosen.messages.clone(), drop, criterion::BatchSize::LargeInput)
    });
    // `Compactor::plan` (the dry run of a pass: count, pairs, layout, recent window fitted,
    // the trim preview) aimed at the same goal.
    let config = CompactorConfig::builder(heuristic_total)
        .build()
        .expect("a valid bench configuration");
    let options = CompactOptions::new().with_target(Some(goal));
    let heuristic = Compactor::new(config.clone(), std::sync::Arc::new(HeuristicCounter));
    group.bench_function("plan_heuristic", |b| {
        b.iter(|| black_box(heuristic.plan(&messages, &options).trim.map(|t| t.tokens_after)))
    });
    // The same dry run of a `Conversation` (`plan_in`): counted as it grew by the
    // compactor's own counter, its aging index (pairs, identities, chars) kept for the
    // epoch decision. Both are built once here, untimed, as an agent loop builds them a
    // message at a time.
    let conversation = Conversation::from_messages(heuristic.counter().clone(), messages.clone());
    black_box(heuristic.plan_in(&conversation, &options));
    group.bench_function("plan_in_conversation_heuristic", |b| {
        b.iter(|| black_box(heuristic.plan_in(&conversation, &options).trim.map(|t| t.tokens_after)))
    });
    let o200k_options = CompactOptions::new().with_target(Some(o200k_goal));
    group.bench_function("plan_o200k_cold_memo", |b| {
        b.iter(|| {
            on_fresh_thread(|| {
                let compactor = Compactor::new(
                    config.clone(),
                    std::sync::Arc::new(MemoCounter::new(BpeCounter::o200k())),
                );
                black_box(compactor.plan(&messages, &o200k_options).trim.map(|t| t.tokens_after))
            })
        })
    });
    // The old algorithm (every bisection candidate assembled and counted), as the
    // baseline of the change.
    group.bench_function("hard_trim_heuristic_building_candidates", |b| {
        b.iter(|| {
            let pairs = Pairs::build(&messages);
            let layout = plan::layout_with(&messages, &pairs, 6);
            let mut count = |m: &[Message]| HeuristicCounter.count_messages(m);
            black_box(
                plan::TrimSearch::new(&messages, &pairs, &layout, goal)
                    .plan_by(&mut count)
                    .map(|t| t.tokens),
            )
        })
    });
    group.finish();
}

/// Defaults for a quick run; `--warm-up-time` / `--measurement-time` on the command line
/// win (criterion applies them after this config).
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500))
}

criterion_group! {
    name = benches;
    config = config();
    targets = planning, real_9898
}
criterion_main!(benches);
