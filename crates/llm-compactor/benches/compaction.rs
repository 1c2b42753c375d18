//! Compaction benchmarks: what the engine costs an agent loop.
//!
//! 1. Per round: `Compactor::needs_compaction` on a conversation growing by one message
//!    per round, at 125k, 250k, 500k and 1M o200k tokens, with the compactor's counter
//!    memoized (`count::counter_by_name("o200k")`, a `MemoCounter` over `BpeCounter`)
//!    against a full recount (a plain `BpeCounter`), with aging off and on. Aging on also
//!    computes the eligible pool every round; it is timed alone too, to show its share.
//! 2. A whole `compact` with an instant scripted summarizer on the largest shared
//!    trajectory: a summary pass (budget 32k, aging off), an elision-only pass (aging
//!    on, a budget whose trigger the aged conversation fits), and a chunked summary pass
//!    (the summarizer declares an 8k input room), with the memoized o200k counter, a
//!    plain (cold) o200k counter and the heuristic; then the pieces of a pass on the
//!    public API (counting, layout, eligibility, rendering, assembly, digest, chunking).
//!
//! Conversations come from the real mini-swe-agent trajectories when
//! `LLM_COMPACTOR_DATA` (or `../shared/data`) has them; part 1 falls back to a
//! deterministic synthetic one, part 2 is skipped with a notice.
//! Run: `LLM_COMPACTOR_DATA=/work/shared/data cargo bench -p llm-compactor --bench compaction`.

#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{BpeCounter, HeuristicCounter, counter_by_name};
use llm_compactor::format::Document;
use llm_compactor::message::{Message, Role, conversation_digest};
use llm_compactor::plan::{self, AgingRules, Pairs};
use llm_compactor::summarize::{
    StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest, next_chunk, render_units,
};
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, TokenCounter, Usage};
use tokio_util::sync::CancellationToken;

const SIZES: [usize; 4] = [125_000, 250_000, 500_000, 1_000_000];
/// A budget no benchmarked conversation reaches: `needs_compaction` always goes past the
/// trigger test and (aging on) computes the eligible pool.
const HUGE_BUDGET: usize = 100_000_000;
const SUMMARY: &str = "The agent explored the repository, reproduced the failure, edited the parser and \
                       re-ran the tests; two still fail in test_scoped_nodes.py.";

// ---------------------------------------------------------------------------------------
// Conversations

/// Every mini-swe-agent trajectory as one long agent run: the first file whole (less its
/// closing `exit` record), then only the assistant turns and tool results of the others.
fn real_corpus() -> Vec<Message> {
    let mut corpus = Vec::new();
    for path in common::mini_swe_agent_files() {
        let Ok(document) = Document::read_path(&path, None) else {
            continue;
        };
        let first = corpus.is_empty();
        corpus.extend(
            document
                .into_messages()
                .into_iter()
                .filter(|m| matches!(m.role, Role::Assistant | Role::Tool) || (first && m.role != Role::from("exit"))),
        );
    }
    corpus
}

/// A deterministic synthetic agent run of 12,000 rounds; results are words of five chars.
fn synthetic_corpus() -> Vec<Message> {
    support::agent_run(12_000, |size| {
        (0..size).map(|k| if k % 6 == 5 { ' ' } else { 'x' }).collect()
    })
}

fn corpus() -> (Vec<Message>, &'static str) {
    let real = real_corpus();
    if real.is_empty() {
        (synthetic_corpus(), "synthetic")
    } else {
        (real, "real mini-swe-agent trajectories")
    }
}

// ---------------------------------------------------------------------------------------
// Part 1: per round

fn compactor(counter: Arc<dyn TokenCounter>, aging: bool) -> Compactor {
    let config = CompactorConfig::builder(HUGE_BUDGET)
        .age_observations(aging)
        .build()
        .expect("a valid bench configuration");
    Compactor::new(config, counter)
}

/// The eligible pool as `needs_compaction` computes it, on the public API.
fn pool(messages: &[Message], keep_recent: usize, rules: AgingRules) -> usize {
    let pairs = Pairs::build(messages);
    let layout = plan::layout_with(messages, &pairs, keep_recent);
    plan::reclaimable_pool(&plan::eligible(messages, &pairs, &layout, rules))
}

/// The mean time of one round: the conversation grew from `before` to `after`. With
/// `warm`, each timed call follows an untimed call on `before` (the previous round), so a
/// memo has exactly the new message to count.
fn round(reps: u32, warm: bool, before: &[Message], after: &[Message], f: impl Fn(&[Message]) -> bool) -> Duration {
    let mut total = Duration::ZERO;
    black_box(f(before));
    for _ in 0..reps {
        if warm {
            black_box(f(before));
        }
        let start = Instant::now();
        black_box(f(after));
        total += start.elapsed();
    }
    total / reps
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn per_round(c: &mut Criterion) {
    let (corpus, source) = corpus();
    let largest = support::conversation_of(&corpus, SIZES[SIZES.len() - 1]);
    let plain = BpeCounter::o200k();
    let rules = compactor(Arc::new(HeuristicCounter), true).aging_rules();
    let keep_recent = compactor(Arc::new(HeuristicCounter), true).config().keep_recent;

    println!("\nper-round needs_compaction, one new message per round ({source}, o200k, budget never reached):");
    println!(
        "{:>9} {:>6} | {:>11} {:>11} {:>11} | {:>11} {:>11} | {:>7} {:>7} | {:>9}",
        "tokens",
        "msgs",
        "memo off",
        "memo on",
        "pool alone",
        "recount off",
        "recount on",
        "x off",
        "x on",
        "pool chars"
    );
    for target in SIZES {
        let size = support::conversation_of(&largest, target).len().min(largest.len());
        let (before, after) = (&largest[..size - 1], &largest[..size]);
        let memo_off = compactor(counter_by_name("o200k").expect("o200k"), false);
        let memo_on = compactor(counter_by_name("o200k").expect("o200k"), true);
        let recount_off = compactor(Arc::new(plain), false);
        let recount_on = compactor(Arc::new(plain), true);
        let t_memo_off = round(10, true, before, after, |m| memo_off.needs_compaction(m));
        let t_memo_on = round(10, true, before, after, |m| memo_on.needs_compaction(m));
        let t_pool = round(10, false, before, after, |m| pool(m, keep_recent, rules) > 0);
        let t_recount_off = round(3, false, before, after, |m| recount_off.needs_compaction(m));
        let t_recount_on = round(3, false, before, after, |m| recount_on.needs_compaction(m));
        println!(
            "{:>9} {:>6} | {:>11} {:>11} {:>11} | {:>11} {:>11} | {:>6.0}x {:>6.0}x | {:>9}",
            plain.count_messages(after),
            size,
            ms(t_memo_off),
            ms(t_memo_on),
            ms(t_pool),
            ms(t_recount_off),
            ms(t_recount_on),
            t_recount_off.as_secs_f64() / t_memo_off.as_secs_f64(),
            t_recount_on.as_secs_f64() / t_memo_on.as_secs_f64(),
            pool(after, keep_recent, rules),
        );
    }
    breakdown(&largest, keep_recent, rules);

    let n = largest.len();
    let (before, after) = (&largest[..n - 1], &largest[..]);
    let tokens = plain.count_messages(after);
    let mut group = c.benchmark_group(format!(
        "needs_compaction_round_at_{}k_tokens_{n}_messages",
        tokens / 1000
    ));
    for aging in [false, true] {
        let label = if aging { "aging_on" } else { "aging_off" };
        let memo = compactor(counter_by_name("o200k").expect("o200k"), aging);
        group.bench_function(format!("memo_{label}"), |b| {
            b.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iterations {
                    black_box(memo.needs_compaction(before));
                    let start = Instant::now();
                    black_box(memo.needs_compaction(after));
                    elapsed += start.elapsed();
                }
                elapsed
            })
        });
        let recount = compactor(Arc::new(plain), aging);
        group.bench_function(format!("recount_{label}"), |b| {
            b.iter(|| recount.needs_compaction(black_box(after)))
        });
    }
    group.bench_function("eligible_pool_alone", |b| {
        b.iter(|| pool(black_box(after), keep_recent, rules))
    });
    group.finish();
}

/// Where a round's time goes at the largest size: the memo's hash pass with and without
/// the wire extras, and the pieces of the eligible pool.
fn breakdown(conversation: &[Message], keep_recent: usize, rules: AgingRules) {
    let n = conversation.len();
    let (before, after) = (&conversation[..n - 1], conversation);
    let stripped: Vec<Message> = conversation
        .iter()
        .cloned()
        .map(|mut m| {
            m.extras.clear();
            m
        })
        .collect();
    let memo = counter_by_name("o200k").expect("o200k");
    let t_memo = round(10, true, before, after, |m| memo.count_messages(m) > 0);
    let t_stripped = round(10, true, &stripped[..n - 1], &stripped, |m| memo.count_messages(m) > 0);
    let pairs = Pairs::build(after);
    let layout = plan::layout_with(after, &pairs, keep_recent);
    let t_pairs = round(10, false, before, after, |m| {
        let pairs = Pairs::build(m);
        plan::layout_with(m, &pairs, keep_recent).cut.is_some()
    });
    let t_chars = round(10, false, before, after, |m| {
        m.iter().map(|m| m.content.chars()).sum::<usize>() > 0
    });
    let t_identities = round(10, false, before, after, |m| {
        (0..m.len())
            .filter_map(|i| pairs.call(m, i).map(|c| plan::call_identity(&c.name, &c.arguments)))
            .count()
            > 0
    });
    let t_eligible = round(10, false, before, after, |m| {
        !plan::eligible(m, &pairs, &layout, rules).is_empty()
    });
    let results = after.iter().filter(|m| m.is_tool_result()).count();
    let extras: usize = after
        .iter()
        .map(|m| serde_json::to_string(&m.extras).map_or(0, |s| s.len()))
        .sum();
    let content: usize = after.iter().map(|m| m.content.chars()).sum();
    println!(
        "breakdown at {n} messages ({content} content chars, {extras} bytes of wire extras, {results} tool results):"
    );
    println!(
        "  memo count round {}; same with extras stripped {}",
        ms(t_memo),
        ms(t_stripped)
    );
    println!(
        "  pool pieces: pairs+layout {}, content chars of every message {}, call identity of every result {}, \
         eligible (prebuilt pairs/layout) {}\n",
        ms(t_pairs),
        ms(t_chars),
        ms(t_identities),
        ms(t_eligible)
    );
}

// ---------------------------------------------------------------------------------------
// Part 2: a whole pass

/// Answers every request at once with the same short summary.
struct FixedSummary {
    input_room: Option<usize>,
}

#[async_trait]
impl Summarizer for FixedSummary {
    fn name(&self) -> &str {
        "fixed"
    }

    fn input_room(&self) -> Option<usize> {
        self.input_room
    }

    async fn summarize(
        &self,
        _request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        Ok(SummaryReply::new(
            SUMMARY.to_owned(),
            StopReason::Complete,
            Usage::default(),
        ))
    }
}

fn largest_trajectory() -> Option<(PathBuf, Vec<Message>)> {
    let path = common::largest_mini_swe_agent_file()?;
    match Document::read_path(&path, None) {
        Ok(document) => Some((path, document.into_messages())),
        Err(error) => {
            println!("NOTICE: skipping the compact benchmarks: {error}");
            None
        }
    }
}

/// Makes a fresh counter (so every pass owns its memo).
type MakeCounter = fn() -> Arc<dyn TokenCounter>;

/// One named pass: a compactor and what its result must look like.
struct Pass {
    name: String,
    compactor: Compactor,
    expect: fn(&CompactionResult) -> bool,
}

fn passes(messages: &[Message]) -> Vec<Pass> {
    let counters: [(&str, MakeCounter); 3] = [
        ("o200k_memo", || counter_by_name("o200k").expect("o200k")),
        ("o200k_plain", || Arc::new(BpeCounter::o200k())),
        ("heuristic", || Arc::new(HeuristicCounter)),
    ];
    let mut out = Vec::new();
    for (label, make) in counters {
        let counter = make();
        let config = |budget: usize, aging: bool| {
            CompactorConfig::builder(budget)
                .age_observations(aging)
                .build()
                .expect("a valid bench configuration")
        };
        let summarizer = |room| Arc::new(FixedSummary { input_room: room });
        out.push(Pass {
            name: format!("summary_32k_{label}"),
            compactor: Compactor::new(config(32_000, false), Arc::clone(&counter)).with_summarizer(summarizer(None)),
            expect: |r| !r.fallback && !r.summary.is_empty() && r.elisions.is_empty(),
        });
        // A budget whose target the aged conversation fits, with a trigger the whole
        // conversation passes: aging alone is enough (at the trigger, the cost policy
        // accepts an elision-only pass only when it lands at or under the target). Aging
        // reclaims a sixth of this trajectory, so the ratios are set close together.
        let (trigger_ratio, target_ratio) = (0.9, 0.85);
        let aged = aged_count(messages, counter.as_ref(), config(32_000, true));
        let budget = (aged as f64 / target_ratio).ceil() as usize + 8;
        assert!(
            counter.count_messages(messages) as f64 > budget as f64 * trigger_ratio,
            "elision_only_{label}: the whole conversation must pass the trigger of budget {budget}"
        );
        let elision_config = CompactorConfig::builder(budget)
            .age_observations(true)
            .trigger_ratio(trigger_ratio)
            .target_ratio(target_ratio)
            .build()
            .expect("a valid bench configuration");
        out.push(Pass {
            name: format!("elision_only_{label}"),
            compactor: Compactor::new(elision_config, Arc::clone(&counter)).with_summarizer(summarizer(None)),
            expect: |r| !r.fallback && r.summary.is_empty() && !r.elisions.is_empty() && r.attempts.is_empty(),
        });
        out.push(Pass {
            name: format!("summary_32k_chunked_8k_room_{label}"),
            compactor: Compactor::new(config(32_000, false), counter).with_summarizer(summarizer(Some(8_192))),
            expect: |r| !r.fallback && !r.summary.is_empty() && r.attempts.len() > 1,
        });
    }
    out
}

fn aged_count(messages: &[Message], counter: &dyn TokenCounter, config: CompactorConfig) -> usize {
    let rules = AgingRules {
        min_chars: config.age_min_chars,
        reclaim_min: config.age_reclaim_min,
    };
    let pairs = Pairs::build(messages);
    let layout = plan::layout_with(messages, &pairs, config.keep_recent);
    let elisions: Vec<_> = plan::eligible(messages, &pairs, &layout, rules)
        .into_iter()
        .map(|e| llm_compactor::compactor::Elision::new(e.index, e.stub))
        .collect();
    counter.count_messages(&plan::apply_elisions(messages, &elisions))
}

fn whole_pass(c: &mut Criterion) {
    let Some((path, messages)) = largest_trajectory() else {
        println!("NOTICE: skipping the compact benchmarks: no mini-swe-agent trajectories (set LLM_COMPACTOR_DATA)");
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let compact = |compactor: &Compactor| {
        runtime
            .block_on(compactor.compact(&messages, CompactOptions::default()))
            .expect("valid options")
    };
    println!(
        "\nwhole compact on {} ({} messages, {} o200k tokens, {} heuristic), instant summarizer:",
        path.file_name().unwrap_or_default().to_string_lossy(),
        messages.len(),
        BpeCounter::o200k().count_messages(&messages),
        HeuristicCounter.count_messages(&messages)
    );
    let passes = passes(&messages);
    for pass in &passes {
        let start = Instant::now();
        let result = compact(&pass.compactor);
        let first = start.elapsed();
        assert!(
            (pass.expect)(&result),
            "{}: unexpected result shape: {result:?}",
            pass.name
        );
        println!(
            "  {:<36} budget {:>6}: {:>6} -> {:>6} tokens, dropped {:>3}, elisions {:>3}, calls {}, first run {}",
            pass.name,
            pass.compactor.config().context_budget,
            result.tokens_before,
            result.tokens_after,
            result.dropped,
            result.elisions.len(),
            result.attempts.len(),
            ms(first)
        );
    }
    println!();
    let mut group = c.benchmark_group("compact_largest_trajectory");
    for pass in &passes {
        // As in a loop: the round's `needs_compaction` has just counted the input (which
        // warms a memo; a memo is otherwise left holding the previous pass's result).
        group.bench_function(&pass.name, |b| {
            b.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iterations {
                    black_box(pass.compactor.counter().count_messages(&messages));
                    let start = Instant::now();
                    black_box(compact(&pass.compactor));
                    elapsed += start.elapsed();
                }
                elapsed
            })
        });
    }
    group.finish();

    pieces(c, &messages);
}

/// The pieces of a summary pass, on the public API.
fn pieces(c: &mut Criterion, messages: &[Message]) {
    let config = CompactorConfig::builder(32_000).build().expect("valid");
    let rules = AgingRules {
        min_chars: config.age_min_chars,
        reclaim_min: config.age_reclaim_min,
    };
    let pairs = Pairs::build(messages);
    let layout = plan::layout_with(messages, &pairs, config.keep_recent);
    let cut = layout.cut.expect("the largest trajectory has a middle");
    let content = plan::summary_content(SUMMARY);
    let plain = BpeCounter::o200k();
    let memo = counter_by_name("o200k").expect("o200k");
    memo.count_messages(messages);

    let mut group = c.benchmark_group("compact_pieces_largest_trajectory");
    group.bench_function("count_o200k_plain", |b| {
        b.iter(|| plain.count_messages(black_box(messages)))
    });
    group.bench_function("count_o200k_memo_warm", |b| {
        b.iter(|| memo.count_messages(black_box(messages)))
    });
    group.bench_function("count_heuristic", |b| {
        b.iter(|| HeuristicCounter.count_messages(black_box(messages)))
    });
    group.bench_function("plan_pairs_layout", |b| {
        b.iter(|| {
            let pairs = Pairs::build(black_box(messages));
            plan::layout_with(messages, &pairs, config.keep_recent)
        })
    });
    group.bench_function("plan_eligible_apply", |b| {
        b.iter(|| {
            let elisions: Vec<_> = plan::eligible(black_box(messages), &pairs, &layout, rules)
                .into_iter()
                .map(|e| llm_compactor::compactor::Elision::new(e.index, e.stub))
                .collect();
            plan::apply_elisions(messages, &elisions)
        })
    });
    group.bench_function("render_transcript", |b| {
        b.iter(|| render_units(black_box(messages), &layout.middle, config.tool_result_cap).join("\n"))
    });
    group.bench_function("digest", |b| b.iter(|| conversation_digest(black_box(messages))));
    group.bench_function("assemble_validate", |b| {
        b.iter(|| {
            let (assembled, dropped) = plan::assemble(black_box(messages), cut, &content);
            let valid = plan::validate(messages, &assembled, layout.recent_start).is_ok();
            (assembled.len(), dropped, valid)
        })
    });
    let units = render_units(messages, &layout.middle, config.tool_result_cap);
    for (label, counter) in [("o200k", &plain as &dyn TokenCounter), ("heuristic", &HeuristicCounter)] {
        let estimate = |text: &str| counter.count_text(text).max(text.chars().count().div_ceil(3));
        group.bench_function(format!("chunking_8k_room_{label}"), |b| {
            b.iter(|| {
                let (mut start, mut chunks) = (0, 0);
                while start < units.len() {
                    let carry = (chunks > 0).then_some(("carry", SUMMARY));
                    let (text, next) = next_chunk(&units, start, carry, 8_192, &estimate);
                    black_box(text);
                    start = next;
                    chunks += 1;
                }
                chunks
            })
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
}

criterion_group! {
    name = benches;
    config = config();
    targets = per_round, whole_pass
}
criterion_main!(benches);
