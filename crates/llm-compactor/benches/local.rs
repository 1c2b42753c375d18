//! Prompt and generation throughput of the local summarizer on the default model.
//!
//! `cargo bench -p llm-compactor --features local --bench local`. The model is obtained
//! like a user would (`ModelStore::fetch`); the bench does nothing when it cannot be.
//! `LOCAL_BENCH_CHUNK=N` overrides the prefill chunk (default 256) to compare sizes.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use llm_compactor::backend::local::{LocalConfig, LocalSummarizer};
use llm_compactor::backend::model_store::{ModelSpec, ModelStore};
use tokio_util::sync::CancellationToken;

const PROMPT_TOKENS: usize = 512;
const GENERATED_TOKENS: usize = 64;

const TEXT: &str = "assistant: Running the test suite again after the edit to utils/dates.py.\n\
tool (bash): ============================= test session starts ==============================\n\
tests/test_dates.py::test_parse_date PASSED\ntests/test_dates.py::test_format_date FAILED\n\
E   AssertionError: assert '2024-03-01' == '01/03/2024'\n";

fn local_benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let path = match ModelStore::from_env().map(|s| rt.block_on(s.fetch(&ModelSpec::default_model()))) {
        Ok(Ok(path)) => path,
        Ok(Err(err)) | Err(err) => {
            eprintln!("SKIPPED: the default local model cannot be obtained: {err}");
            return;
        }
    };
    let mut config = LocalConfig::new(path);
    if let Some(chunk) = std::env::var("LOCAL_BENCH_CHUNK").ok().and_then(|v| v.parse().ok()) {
        config.decode.prefill_chunk = chunk;
    }
    let local = LocalSummarizer::open(config).expect("opens");
    rt.block_on(local.load()).expect("loads");
    let mut prompt = Vec::new();
    while prompt.len() < PROMPT_TOKENS {
        prompt.extend(local.tokenizer().encode(TEXT));
    }
    prompt.truncate(PROMPT_TOKENS);
    let cancel = CancellationToken::new();

    let mut group = c.benchmark_group("local");
    group.throughput(Throughput::Elements(PROMPT_TOKENS as u64));
    group.bench_function("prompt_tokens_512", |b| {
        b.iter(|| {
            rt.block_on(local.generate(prompt.clone(), 1, false, &cancel))
                .expect("prefill")
        })
    });
    let short = prompt[..16].to_vec();
    group.throughput(Throughput::Elements(GENERATED_TOKENS as u64));
    group.bench_function("generated_tokens_64", |b| {
        b.iter(|| {
            let g = rt
                .block_on(local.generate(short.clone(), GENERATED_TOKENS, false, &cancel))
                .expect("generate");
            assert_eq!(g.tokens.len(), GENERATED_TOKENS);
        })
    });
    group.finish();
}

/// Defaults; `--warm-up-time` / `--measurement-time` on the command line win (criterion
/// applies them after this config).
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
}

criterion_group! {
    name = benches;
    config = config();
    targets = local_benches
}
criterion_main!(benches);
