//! The Rust side of the Python package's overhead benchmark (`scripts/bench-python.sh`):
//! the work `llm_compactor.compact(messages, budget=..., summarizer="ledger")` does from
//! Python, done by the library alone. Per pass: parse the conversation's JSON bytes into
//! a document, compact it (the ledger summarizer, o200k, the CLI's ledger policy),
//! write the result's messages back to the wire format and serialize them.
//!
//! `cargo run --release -p llm-compactor --example python_parity -- FILE BUDGET RUNS`
//! prints the median and the minimum in milliseconds, with a fresh compactor per pass
//! (what `llm_compactor.compact` does) and with one compactor reused (what
//! `Compactor.compact` does: its counter's memo is warm from the second pass on).

use std::sync::Arc;
use std::time::Instant;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::counter_by_name;
use llm_compactor::format::Document;
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: python_parity FILE BUDGET RUNS")?;
    let budget: usize = args.next().unwrap_or_else(|| "32000".into()).parse()?;
    let runs: usize = args.next().unwrap_or_else(|| "20".into()).parse()?;
    // The messages array alone, as the Python caller passes it.
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
    let bytes = serde_json::to_vec(&file["messages"])?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let build = || -> Result<Compactor, Box<dyn std::error::Error>> {
        let config = CompactorConfig::builder(budget).build()?;
        Ok(Compactor::new(config, counter_by_name("o200k")?)
            .with_ledger(LedgerPolicy::default())
            .with_summarizer(Arc::new(LedgerSummarizer)))
    };
    let reused = build()?;
    for (label, fresh) in [("fresh compactor", true), ("reused compactor", false)] {
        let mut times = Vec::with_capacity(runs);
        let mut tokens = (0, 0);
        for _ in 0..runs {
            let start = Instant::now();
            let built;
            let compactor = if fresh {
                built = build()?;
                &built
            } else {
                &reused
            };
            let document = Document::from_bytes(&bytes, None, "messages")?;
            let result = runtime.block_on(compactor.compact(document.messages(), CompactOptions::default()))?;
            tokens = (result.tokens_before, result.tokens_after);
            let out = serde_json::to_string(&document.with_messages(result.messages).to_value())?;
            std::hint::black_box(out);
            times.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "rust ({label}): {} tokens -> {} tokens, median {:.2} ms, min {:.2} ms over {runs} runs",
            tokens.0,
            tokens.1,
            times[runs / 2],
            times[0]
        );
    }
    Ok(())
}
