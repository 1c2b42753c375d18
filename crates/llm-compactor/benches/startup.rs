//! Where the o200k tokenizer's start-up goes (what every `compactor count --counter
//! o200k` process pays once): the whole first use, then its two parts measured again on
//! their own in the same process: `bpe-openai`'s deserialization of the MessagePack
//! `BytePairEncoding` it embeds (re-serialized here with the same `rmp-serde`, so the
//! bytes are the ones it reads), and the build of its pre-tokenization regex (the same
//! three patterns, the same `regex-automata` call). Prints one line per measurement and
//! the process's peak RSS after each; not a criterion bench, because a first use happens
//! once per process.
//!
//! Run: `cargo bench -p llm-compactor --bench startup`.

use std::hint::black_box;
use std::time::Instant;

use bpe_openai::byte_pair_encoding::BytePairEncoding;

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
    let rss0 = peak_rss_mb();
    let start = Instant::now();
    let tokenizer = bpe_openai::o200k_base();
    black_box(tokenizer.count("hello world"));
    let first_use = start.elapsed();
    let rss1 = peak_rss_mb();
    println!(
        "o200k first use (deserialize + regex build): {:.1} ms, peak RSS {rss0:.1} -> {rss1:.1} MB",
        first_use.as_secs_f64() * 1e3
    );

    let bytes = rmp_serde::to_vec(&tokenizer.bpe).expect("the encoding serializes");
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let bpe: BytePairEncoding = rmp_serde::from_slice(&bytes).expect("it deserializes");
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
        black_box(bpe.num_tokens());
    }
    println!(
        "  MessagePack deserialization of the o200k BytePairEncoding ({:.1} MB): {best:.1} ms (best of 5), peak RSS now {:.1} MB",
        bytes.len() as f64 / 1e6,
        peak_rss_mb()
    );

    let pat1 = [
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        "\\p{N}{1,3}",
        " ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
        "\\s*[\\r\\n]+",
        "\\s+$",
    ]
    .join("|");
    let patterns = [pat1.as_str(), "\\s+\\s", "\\s+"];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let start = Instant::now();
        let regex = regex_automata::meta::Regex::new_many(&patterns).expect("valid patterns");
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
        black_box(regex.pattern_len());
    }
    println!("  pre-tokenization regex build: {best:.1} ms (best of 5)");
}
