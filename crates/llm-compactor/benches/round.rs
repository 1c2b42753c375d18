//! Per-round cost of an agent loop whose conversation grows by 2 messages per round
//! (an assistant turn and its tool result), at 100k, 500k and 1M o200k tokens of real
//! trajectories, against the named baseline `tokenize_2_new` (o200k counts of the 2 new
//! messages alone) measured in the same run:
//!
//! - `needs_compaction_memo`: `Compactor::needs_compaction` over a memoized o200k counter
//!   (aging off), the memo primed with the previous round's conversation.
//! - `calibrated_round`: the counter's work in one round of the documented loop with a
//!   `CalibratedCounter` over a memoized o200k fallback: the bill of the previous round
//!   is recorded, then the grown conversation is counted (anchor check + the new
//!   messages).
//!
//! And the same rounds over a [`Conversation`], growing by 2 messages of real
//! trajectories per iteration from the target size (to at most 1.2× it; then back), against
//! the named baseline `tokenize_2_new_growing` (o200k counts of the same sequence of
//! 2-message rounds, alone):
//!
//! - `conversation_needs_compaction`: push the 2 new messages into the conversation
//!   (each counted once by a plain o200k counter) and ask
//!   `Compactor::needs_compaction_in`.
//! - `manager_round_calibrated`: one whole `ContextManager` round of the documented loop
//!   with a `CalibratedCounter` over a plain o200k fallback: `record_response` (the bill
//!   of the conversation that was sent, then the 2 new messages appended to the
//!   transcript file and the conversation) and `prepare_borrowed` (count the request,
//!   decide that no pass is needed, lend the conversation).
//! - `conversation_needs_compaction_aging` and `manager_round_calibrated_aging`: the same
//!   two with aging on (the default) and an elision epoch due every round, so each round
//!   also reads the conversation's aging index, prices the epoch and asks the policy.
//!
//! Run: `LLM_COMPACTOR_DATA=/work/shared/data cargo bench -p llm-compactor --bench round`.

#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/count_support/mod.rs"]
mod count_support;
mod support;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{BpeCounter, CalibratedCounter, MemoCounter, TokenCounter};
use llm_compactor::plan::CostPolicy;
use llm_compactor::session::{ContextManager, RequestShape, Session, SessionOptions};
use llm_compactor::{Compactor, CompactorConfig, Conversation, Message, Usage};
use tokio_util::sync::CancellationToken;

/// The process's peak resident set (VmHWM), in MB, on Linux.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn rounds(c: &mut Criterion) {
    // Tokenizer start-up, first thing in the process: what every `compactor count
    // --counter o200k` pays once.
    let before = peak_rss_mb();
    let start = Instant::now();
    black_box(BpeCounter::o200k().count_text("hello"));
    eprintln!(
        "o200k tokenizer start-up: {:?}, peak RSS {:?} MB -> {:?} MB",
        start.elapsed(),
        before,
        peak_rss_mb()
    );
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let corpus: Vec<Message> = files
        .iter()
        .flat_map(|p| count_support::mini_swe_agent_messages(p))
        .collect();
    let plain = BpeCounter::o200k();
    for target in [100_000usize, 500_000, 1_000_000] {
        let conversation = support::conversation_of(&corpus, target);
        let n = conversation.len();
        let (before, after, new) = (&conversation[..n - 2], &conversation[..], &conversation[n - 2..]);
        let tokens = plain.count_messages(after);
        let mut group = c.benchmark_group(format!("round_2_new_at_{}k", target / 1000));
        eprintln!("round_2_new_at_{}k: {n} messages, {tokens} o200k tokens", target / 1000);
        group.bench_function("tokenize_2_new", |b| b.iter(|| plain.count_messages(black_box(new))));
        let config = CompactorConfig::builder(usize::MAX / 4)
            .age_observations(false)
            .build()
            .expect("a valid bench configuration");
        let compactor = Compactor::new(config, Arc::new(MemoCounter::new(plain)));
        group.bench_function("needs_compaction_memo", |b| {
            b.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iterations {
                    black_box(compactor.needs_compaction(before));
                    let start = Instant::now();
                    black_box(compactor.needs_compaction(after));
                    elapsed += start.elapsed();
                }
                elapsed
            })
        });
        let calibrated = CalibratedCounter::with_fallback(Arc::new(MemoCounter::new(plain)));
        let usage = Usage {
            input_tokens: 12_345,
            ..Usage::default()
        };
        // The conversation keeps growing by 2 messages per iteration (so every bill
        // extends the recorded one, as in a loop); back at `n` when it runs out.
        let long = support::conversation_of(&corpus, target + target / 5);
        let mut k = long.len();
        group.bench_function("calibrated_round", |b| {
            b.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iterations {
                    if k + 2 > long.len() {
                        k = n - 2;
                        calibrated.forget();
                        calibrated.record_usage(&long[..k - 2], "m", &usage);
                        black_box(calibrated.count_messages(&long[..k]));
                    }
                    let start = Instant::now();
                    calibrated.record_usage(&long[..k], "m", &usage);
                    black_box(calibrated.count_messages(&long[..k + 2]));
                    elapsed += start.elapsed();
                    k += 2;
                }
                elapsed
            })
        });
        growing(&mut group, &long, n);
        group.finish();
    }
}

/// `needs_compaction_in` of a [`Conversation`] counted by plain o200k, timed over rounds
/// that each append 2 messages of `long` (back to `start` messages when it runs out; the
/// truncation, and the first question after it, which rebuilds what the conversation
/// learned, are not part of a round). Plain counters: the corpus cycles, and a memo would
/// hit on a repeated message that a real round would have to tokenize.
fn growing_rounds(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    config: CompactorConfig,
    long: &[Message],
    start: usize,
) {
    let counter: Arc<dyn TokenCounter> = Arc::new(BpeCounter::o200k());
    let compactor = Compactor::new(config, counter.clone());
    let mut conversation = Conversation::from_messages(counter, long[..start].to_vec());
    black_box(compactor.needs_compaction_in(&conversation));
    group.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                if conversation.len() + 2 > long.len() {
                    conversation.truncate(start);
                    black_box(compactor.needs_compaction_in(&conversation));
                }
                let k = conversation.len();
                let (a, c) = (long[k].clone(), long[k + 1].clone());
                let begin = Instant::now();
                conversation.push(a);
                conversation.push(c);
                black_box(compactor.needs_compaction_in(&conversation));
                elapsed += begin.elapsed();
            }
            elapsed
        })
    });
}

/// The rounds over a [`Conversation`] that grows from `n - 2` messages of `long` by 2 per
/// iteration (back to `n - 2` when `long` runs out, untimed).
fn growing(group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>, long: &[Message], n: usize) {
    let plain = BpeCounter::o200k();
    let start = n - 2;
    let mut k = start;
    group.bench_function("tokenize_2_new_growing", |b| {
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                if k + 2 > long.len() {
                    k = start;
                }
                let new = &long[k..k + 2];
                let begin = Instant::now();
                black_box(plain.count_messages(black_box(new)));
                elapsed += begin.elapsed();
                k += 2;
            }
            elapsed
        })
    });
    let config = CompactorConfig::builder(usize::MAX / 4)
        .age_observations(false)
        .build()
        .expect("a valid bench configuration");
    growing_rounds(group, "conversation_needs_compaction", config.clone(), long, start);
    // The same with aging on (the default) and an epoch that is due every round: the
    // epoch decision read from the conversation's aging index.
    let aging = CompactorConfig {
        age_observations: true,
        cost_policy: CostPolicy {
            epoch_ratio: None,
            ..CostPolicy::default()
        },
        ..config.clone()
    };
    growing_rounds(group, "conversation_needs_compaction_aging", aging.clone(), long, start);
    manager_rounds(group, "manager_round_calibrated", config, long, start);
    manager_rounds(group, "manager_round_calibrated_aging", aging, long, start);
}

/// One whole `ContextManager` round of the documented loop per iteration, with a
/// `CalibratedCounter` over a plain o200k fallback and `config` (see the module docs).
fn manager_rounds(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    config: CompactorConfig,
    long: &[Message],
    start: usize,
) {
    let calibrated = Arc::new(CalibratedCounter::with_fallback(Arc::new(BpeCounter::o200k())));
    let compactor = Arc::new(Compactor::new(config, calibrated.clone()));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let usage = Usage {
        input_tokens: 12_345,
        ..Usage::default()
    };
    let mut sessions = 0;
    let mut manager_at_start = || {
        sessions += 1;
        let path = dir.path().join(format!("session-{sessions}.jsonl"));
        let mut session = Session::create(&path, SessionOptions::new()).expect("a session");
        for message in &long[..start] {
            session.append_message(message.clone()).expect("an append");
        }
        let mut manager = ContextManager::new(compactor.clone(), session).with_usage_recorder(calibrated.clone());
        // The first bill anchors the counter, as after the loop's first request.
        manager.record_response(Some(usage), "m", Vec::new()).expect("a bill");
        // The first question builds what a manager learns of its conversation once (with
        // aging on, the aging index over every message): start-up, not a round, as in
        // `growing_rounds`. Untimed, or every restart of the bench would charge a whole
        // build to one round.
        black_box(compactor.needs_compaction_in(manager.conversation()));
        manager
    };
    let mut manager = manager_at_start();
    group.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                if manager.messages().len() + 2 > long.len() {
                    manager = manager_at_start();
                }
                let k = manager.messages().len();
                let new = [long[k].clone(), long[k + 1].clone()];
                let begin = Instant::now();
                manager.record_response(Some(usage), "m", new).expect("an append");
                let prepared = runtime
                    .block_on(manager.prepare_borrowed(RequestShape::default(), CancellationToken::new()))
                    .expect("no pass");
                black_box(prepared.request_tokens);
                elapsed += begin.elapsed();
                assert!(prepared.pass.is_none(), "a round of this bench runs no pass");
            }
            elapsed
        })
    });
}

/// Defaults for a quick run; `--warm-up-time` / `--measurement-time` on the command line
/// win.
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300))
}

criterion_group! {
    name = benches;
    config = config();
    targets = rounds
}
criterion_main!(benches);
