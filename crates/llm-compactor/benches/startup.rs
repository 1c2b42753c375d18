//! What the first o200k count of a process costs (what every `compactor count --counter
//! o200k` pays once), in one process, in order:
//!
//! 1. `BpeCounter::o200k()`'s first count of ASCII text: pre-tokenized by the byte scan
//!    (`count/ascii_pieces.rs`: no regex built), the embedded rank tables probed in place
//!    (`count/rank_table.rs`), nothing deserialized;
//! 2. the first count of a text with a piece longer than the 256 bytes merged on the stack
//!    (a run of one letter): merged on the heap over the same tables (`count/heap_merge.rs`;
//!    before issue 32 this step woke `bpe-openai`'s encoder);
//! 3. `bpe-openai`'s own first use, which the counter never makes: its encoder
//!    deserialized from 32 MB of MessagePack (two 200k-entry maps, five vectors, three
//!    automata). Before the rank tables, every process paid it.
//!
//! Prints one line per step with the process's peak RSS after it; not a criterion bench,
//! because a first use happens once per process. The whole-process figure (`compactor
//! count` on a one-message file, `/usr/bin/time`) is in BENCHMARKS.md.
//!
//! Run: `cargo bench -p llm-compactor --bench startup`.

use std::hint::black_box;
use std::time::Instant;

use llm_compactor::count::{BpeCounter, TokenCounter};

/// The process's peak resident set (VmHWM), in MB, on Linux.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    // Criterion-style flags (`--bench`) are accepted and ignored.
    let text = "Please fix the failing test in src/lib.rs and run cargo test again.";
    let rss0 = peak_rss_mb();
    let start = Instant::now();
    let ours = BpeCounter::o200k().count_text(black_box(text));
    let first = start.elapsed();
    let rss1 = peak_rss_mb();
    println!(
        "BpeCounter::o200k() first count ({ours} tokens: regex built, rank tables read in place): {:.1} ms, peak RSS {rss0:.1} -> {rss1:.1} MB",
        first.as_secs_f64() * 1e3
    );

    let long = format!("{text} {}", "a".repeat(1_000));
    let start = Instant::now();
    let ours_long = BpeCounter::o200k().count_text(black_box(&long));
    let first = start.elapsed();
    println!(
        "BpeCounter::o200k() first count of a 1,000-byte piece ({ours_long} tokens): {:.2} ms, peak RSS now {:.1} MB",
        first.as_secs_f64() * 1e3,
        peak_rss_mb()
    );

    let start = Instant::now();
    let theirs = bpe_openai::o200k_base().count(black_box(text));
    let first = start.elapsed();
    println!(
        "bpe-openai o200k_base() first use ({theirs} tokens: encoder deserialized, its own regex built): {:.1} ms, peak RSS now {:.1} MB",
        first.as_secs_f64() * 1e3,
        peak_rss_mb()
    );
    assert_eq!(ours, theirs, "the two counts agree");
    assert_eq!(
        ours_long,
        bpe_openai::o200k_base().count(long.as_str()),
        "the long counts agree"
    );
}
