//! The artifact ledger over a ~100k-token middle: extraction plus rendering (goal: under
//! 5 ms a compaction), and the grounding gate over a 2k-token summary against it.
//!
//! The middle is real mini-swe-agent runs, one after another, until it reaches 100k
//! tokens when the shared data is present (`LLM_COMPACTOR_DATA`), else a synthetic
//! agent run.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::Document;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::grounding::{GroundingRules, ground};
use llm_compactor::plan::ledger::{LedgerPolicy, LedgerRules, chars_for_tokens, extract, render, source_text};

/// Real mini-swe-agent runs of the shared data, in name order (different runs, so the
/// ledger sees 100k tokens of distinct paths, commands and errors, not one run's facts
/// deduplicated).
fn real_runs() -> Option<Vec<Vec<Message>>> {
    let dir = std::env::var_os("LLM_COMPACTOR_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data").into());
    let mut paths: Vec<_> = std::fs::read_dir(dir.join("trajectories/mini-swe-agent"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
        .collect();
    paths.sort();
    let runs: Vec<Vec<Message>> = paths
        .iter()
        .filter_map(|p| Some(Document::read_path(p, None).ok()?.messages().to_vec()))
        .collect();
    (!runs.is_empty()).then_some(runs)
}

fn synthetic() -> Vec<Message> {
    let mut out = vec![Message::user("Fix the failing parser tests in src/parser.py")];
    for i in 0..200 {
        let args = serde_json::json!({"command": format!("cat src/mod_{i}.py | sed -n '1,80p' && python -m pytest tests/test_{i}.py")});
        out.push(
            Message::assistant(format!("Checking `parse_{i}`.")).with_tool_calls(vec![ToolCall::new(
                format!("c{i}"),
                "bash",
                args.to_string(),
            )]),
        );
        out.push(Message::tool(
            format!("c{i}"),
            format!("<returncode>1</returncode>\n<output>\n{}\nFAILED tests/test_{i}.py::test_case - ValueError: bad\n</output>", "line of output\n".repeat(120)),
        ));
    }
    out
}

fn middle() -> Vec<Message> {
    let runs = real_runs().unwrap_or_else(|| {
        eprintln!("NOTICE: shared data absent: a synthetic run instead of real trajectories");
        vec![synthetic()]
    });
    let counter = HeuristicCounter;
    let mut out = Vec::new();
    'fill: loop {
        for run in &runs {
            out.extend(run.iter().filter(|m| !m.is_sticky()).cloned());
            if counter.count_messages(&out) >= 100_000 {
                break 'fill;
            }
        }
    }
    out
}

fn ledger(c: &mut Criterion) {
    let messages = middle();
    let indices: Vec<usize> = (0..messages.len()).collect();
    eprintln!(
        "bench middle: {} messages, {} tokens (heuristic)",
        messages.len(),
        HeuristicCounter.count_messages(&messages)
    );
    let rules = LedgerRules::default();
    // The default cap, in chars.
    let cap = chars_for_tokens(LedgerPolicy::default().max_tokens);
    let mut group = c.benchmark_group("ledger");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    group.bench_function("extract+render 100k-token middle", |b| {
        b.iter(|| {
            let ledger = extract(black_box(&messages), &indices, &rules);
            black_box(render(&ledger, cap))
        })
    });
    let source = source_text(&messages);
    let summary = render(&extract(&messages, &indices, &rules), 8000)
        + "\nThe agent edited `made_up_function` in fake/module.py.";
    group.bench_function("grounding gate, 2k-token summary vs 100k-token source", |b| {
        b.iter(|| black_box(ground(black_box(&summary), &source, &GroundingRules::default())))
    });
    group.finish();
}

criterion_group!(benches, ledger);
criterion_main!(benches);
