//! One pass over a conversation file, as `compactor compact FILE --summarizer ledger` does:
//! read it in its own format (OpenAI chat, Anthropic Messages, a mini-swe-agent
//! trajectory), compact it to a budget with the model-free ledger summary, write it back
//! in the same format.
//!
//! ```text
//! cargo run -p llm-compactor --example one_shot -- examples/sessions/long-agent-session.json 16000 > compacted.json
//! ```
//!
//! The test `tests/example_one_shot.rs` runs [`compact_file`] on the shipped session.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::counter_by_name;
use llm_compactor::format::Document;
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig};

/// Compacts the conversation in `path` to `budget` tokens; returns the document in the
/// input's format and the pass's result.
pub async fn compact_file(
    path: &Path,
    budget: usize,
) -> Result<(serde_json::Value, CompactionResult), Box<dyn std::error::Error>> {
    let document = Document::read_path(path, None)?;
    let config = CompactorConfig::builder(budget).build()?;
    let compactor = Compactor::new(config, counter_by_name("o200k")?)
        .with_ledger(LedgerPolicy::default())
        .with_summarizer(Arc::new(LedgerSummarizer));
    let result = compactor
        .compact(document.messages(), CompactOptions::default())
        .await?;
    let out = document.with_messages(result.messages.clone()).to_value();
    Ok((out, result))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: one_shot FILE [BUDGET]")?;
    let budget: usize = args.next().unwrap_or_else(|| "16000".into()).parse()?;
    let (document, result) = compact_file(Path::new(&path), budget).await?;
    eprintln!(
        "{} -> {} tokens; {} messages summarized; fallback: {}",
        result.tokens_before, result.tokens_after, result.dropped, result.fallback
    );
    println!("{}", serde_json::to_string_pretty(&document)?);
    Ok(())
}
