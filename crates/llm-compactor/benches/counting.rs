//! Counting benchmarks.
//!
//! 1. Throughput: `o200k_base` counting of the same text by our counter (`bpe-openai`)
//!    and by `tiktoken-rs`, in MB/s, and their ratio.
//! 2. Per-round cost in an agent loop whose conversation has grown to ~1M tokens: one new
//!    message per round, counted through the memo versus a full recount.
//! 3. The whole `compactor count` path on the largest trajectory (read, parse, count).
//! 4. Long pieces (over the 256 bytes merged on the stack; pieces over 32 bytes are not
//!    remembered, so every iteration merges them again): ours against `bpe-openai`'s
//!    own count, on words of one length, a 100 KB run of one letter and base64.
//! 5. The heuristic counter's view of tool calls: the chars of their compact JSON
//!    (`tool_calls_json_chars`) over every call of the corpus, in MB/s of call text.
//!
//! Text comes from the real trajectories when `LLM_COMPACTOR_DATA` (or `../shared/data`)
//! has them, from a deterministic synthetic generator otherwise.
//! Run: `LLM_COMPACTOR_DATA=/work/shared/data cargo bench -p llm-compactor --bench counting`.

#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/count_support/mod.rs"]
mod count_support;
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use llm_compactor::Message;
use llm_compactor::count::framing::tool_calls_json_chars;
use llm_compactor::count::{BpeCounter, MemoCounter, TokenCounter};

const TARGET_TOKENS: usize = 1_000_000;

/// A deterministic synthetic agent conversation (prose, code, tool output).
fn synthetic_messages(count: usize) -> Vec<Message> {
    let words = [
        "the",
        "function",
        "returns",
        "None",
        "when",
        "path",
        "is",
        "missing",
        "fix",
        "test",
        "parser",
        "module",
        "élan",
        "数据",
        "🙂",
        "fn",
        "let",
        "mut",
        "=>",
        "{",
        "}",
        "();",
        "0x1F",
        "42",
        "\n",
        "    ",
        "self.value",
    ];
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    let mut messages = vec![Message::system("You are a careful coding agent.")];
    for i in 0..count {
        let len = 50 + next() % 1_500;
        let text: Vec<&str> = (0..len).map(|_| words[next() % words.len()]).collect();
        let text = text.join(" ");
        messages.push(match i % 3 {
            0 => Message::assistant(text),
            1 => Message::tool(format!("call_{i}"), text),
            _ => Message::user(text),
        });
    }
    messages
}

/// Real trajectory messages (every file, concatenated) or synthetic ones.
fn corpus_messages() -> (Vec<Message>, &'static str) {
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return (synthetic_messages(8_000), "synthetic");
    }
    let messages = files
        .iter()
        .flat_map(|p| count_support::mini_swe_agent_messages(p))
        .collect();
    (messages, "real trajectories")
}

fn mb_per_s(bytes: usize, elapsed: Duration, iterations: u32) -> f64 {
    bytes as f64 * f64::from(iterations) / elapsed.as_secs_f64() / 1e6
}

fn time_it(iterations: u32, mut f: impl FnMut() -> usize) -> Duration {
    black_box(f());
    let start = Instant::now();
    for _ in 0..iterations {
        black_box(f());
    }
    start.elapsed()
}

fn throughput(c: &mut Criterion) {
    let (corpus, source) = corpus_messages();
    let text: String = corpus.iter().map(|m| m.text()).collect::<Vec<_>>().join("\n");
    let text: String = text.chars().take(4_000_000).collect();
    let ours = BpeCounter::o200k();
    let tiktoken = tiktoken_rs::o200k_base_singleton();
    assert_eq!(ours.count_text(&text), tiktoken.encode_ordinary(&text).len());

    let ours_time = time_it(3, || ours.count_text(&text));
    let tiktoken_time = time_it(3, || tiktoken.encode_ordinary(&text).len());
    let (ours_mbs, tiktoken_mbs) = (
        mb_per_s(text.len(), ours_time, 3),
        mb_per_s(text.len(), tiktoken_time, 3),
    );
    println!(
        "\nthroughput on {:.1} MB of {source} text ({} o200k tokens): ours (bpe-openai) {ours_mbs:.1} MB/s, \
         tiktoken-rs {tiktoken_mbs:.1} MB/s, ratio {:.2}x\n",
        text.len() as f64 / 1e6,
        ours.count_text(&text),
        ours_mbs / tiktoken_mbs
    );

    // The map of piece counts (`count/bpe_pieces.rs`) against the dependency's own
    // `count` on the same text: once on a fresh thread (the map empty, as in a new
    // process), and warm.
    let alone = bpe_openai::o200k_base();
    assert_eq!(ours.count_text(&text), alone.count(text.as_str()));
    let fresh = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let start = Instant::now();
                black_box(ours.count_text(&text));
                start.elapsed()
            })
            .join()
            .expect("the counting thread")
    });
    let alone_time = time_it(3, || alone.count(text.as_str()));
    let warm_time = time_it(3, || ours.count_text(&text));
    let alone_mbs = mb_per_s(text.len(), alone_time, 3);
    println!(
        "piece counts remembered: fresh thread {:.1} MB/s ({:.2}x bpe-openai's count), warm {:.1} MB/s ({:.2}x); \
         bpe-openai's count alone {alone_mbs:.1} MB/s\n",
        mb_per_s(text.len(), fresh, 1),
        mb_per_s(text.len(), fresh, 1) / alone_mbs,
        mb_per_s(text.len(), warm_time, 3),
        mb_per_s(text.len(), warm_time, 3) / alone_mbs,
    );

    let sample: String = text.chars().take(1_000_000).collect();
    let mut group = c.benchmark_group("o200k_throughput");
    group.throughput(Throughput::Bytes(sample.len() as u64));
    group.bench_function("ours_bpe_openai", |b| b.iter(|| ours.count_text(black_box(&sample))));
    group.bench_function("tiktoken_rs", |b| {
        b.iter(|| tiktoken.encode_ordinary(black_box(&sample)).len())
    });
    group.bench_function("bpe_openai_count_alone", |b| {
        b.iter(|| alone.count(black_box(sample.as_str())))
    });
    group.finish();
}

/// `count` lower-case letters, deterministic.
fn letters(count: usize, seed: u64) -> String {
    let mut state = seed;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state % 26) as u8)
        })
        .collect()
}

fn long_pieces(c: &mut Criterion) {
    let ours = BpeCounter::o200k();
    let alone = bpe_openai::o200k_base();
    let words = |len: usize| -> String {
        let text = letters(256 * 1024, 0x9E37_79B9_7F4A_7C15);
        text.as_bytes()
            .chunks(len)
            .map(|word| format!(" {}", std::str::from_utf8(word).unwrap_or_default()))
            .collect()
    };
    let base64: String = {
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        letters(256 * 1024, 0x2545_F491_4F6C_DD1D)
            .bytes()
            .enumerate()
            .map(|(i, b)| char::from(alphabet[(usize::from(b) * 7 + i) % 64]))
            .collect()
    };
    let texts = [
        ("words_of_48_bytes", words(48)),
        ("words_of_128_bytes", words(128)),
        ("words_of_256_bytes", words(256)),
        ("words_of_1000_bytes", words(1_000)),
        ("run_of_100k_a", "a".repeat(100_000)),
        ("base64_256k", base64),
    ];
    let mut group = c.benchmark_group("long_pieces_o200k");
    for (name, text) in &texts {
        assert_eq!(ours.count_text(text), alone.count(text.as_str()), "{name}");
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("ours/{name}"), |b| b.iter(|| ours.count_text(black_box(text))));
        group.bench_function(format!("bpe_openai/{name}"), |b| {
            b.iter(|| alone.count(black_box(text.as_str())))
        });
    }
    group.finish();
}

fn per_round(c: &mut Criterion) {
    let (corpus, source) = corpus_messages();
    let conversation = support::conversation_of(&corpus, TARGET_TOKENS);
    let plain = BpeCounter::o200k();
    let n = conversation.len();
    let (prefix, full) = (&conversation[..n - 1], &conversation[..]);
    let tokens = plain.count_messages(full);

    // A table over the growth: the cost of one round at several sizes.
    println!("\nper-round cost, one new message per round ({source}, o200k):");
    println!(
        "{:>10} {:>9} {:>14} {:>14} {:>9}",
        "tokens", "messages", "memo", "recount", "speedup"
    );
    for fraction in [8, 4, 2, 1] {
        let size = support::conversation_of(&conversation, TARGET_TOKENS / fraction)
            .len()
            .min(n);
        let (before, after) = (&conversation[..size - 1], &conversation[..size]);
        let memo = MemoCounter::new(plain);
        let mut memo_time = Duration::ZERO;
        for _ in 0..5 {
            memo.count_messages(before);
            let start = Instant::now();
            black_box(memo.count_messages(after));
            memo_time += start.elapsed();
        }
        let recount_time = time_it(3, || plain.count_messages(after));
        let (memo_round, recount_round) = (memo_time / 5, recount_time / 3);
        println!(
            "{:>10} {:>9} {:>14?} {:>14?} {:>8.0}x",
            plain.count_messages(after),
            size,
            memo_round,
            recount_round,
            recount_round.as_secs_f64() / memo_round.as_secs_f64()
        );
    }
    println!();

    let mut group = c.benchmark_group(format!("round_at_{}k_tokens_{n}_messages", tokens / 1000));
    group.bench_function("memo_one_new_message", |b| {
        let memo = MemoCounter::new(plain);
        b.iter_custom(|iterations| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                memo.count_messages(prefix);
                let start = Instant::now();
                black_box(memo.count_messages(full));
                elapsed += start.elapsed();
            }
            elapsed
        });
    });
    group.bench_function("full_recount", |b| b.iter(|| plain.count_messages(black_box(full))));
    group.finish();
}

fn largest_file(c: &mut Criterion) {
    let Some(path) = common::largest_mini_swe_agent_file() else {
        println!("no trajectories: skipping the largest-file benchmark");
        return;
    };
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let count = || {
        let messages = count_support::mini_swe_agent_messages(&path);
        BpeCounter::o200k().count_messages(&messages)
    };
    let start = Instant::now();
    let tokens = count();
    println!(
        "\nlargest trajectory {} ({:.2} MB, {tokens} o200k tokens): read + parse + count in {:?}\n",
        path.file_name().unwrap_or_default().to_string_lossy(),
        size as f64 / 1e6,
        start.elapsed()
    );
    c.bench_function("largest_trajectory_read_parse_count_o200k", |b| b.iter(count));
}

fn tool_call_chars(c: &mut Criterion) {
    let (messages, source) = corpus_messages();
    let calls: Vec<&Message> = messages.iter().filter(|m| !m.tool_calls.is_empty()).collect();
    let bytes: usize = calls
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|call| call.id.len() + call.name.len() + call.arguments.len())
        .sum();
    println!(
        "\ntool calls of {} messages ({source}): {bytes} bytes of ids, names and arguments\n",
        calls.len()
    );
    let mut group = c.benchmark_group("tool_call_json_chars");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.bench_function(source, |b| {
        b.iter(|| calls.iter().map(|m| tool_calls_json_chars(black_box(m))).sum::<usize>())
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = throughput, long_pieces, per_round, largest_file, tool_call_chars
}
criterion_main!(benches);
