//! Every shared real trajectory (mini-swe-agent files, tau-bench conversations)
//! compacted at several budgets, without a summarizer and with a scripted one, with and
//! without aging: the validator's invariants and the replay contract always hold, and a
//! changed conversation is smaller unless it says it is exhausted.

use crate::common;
use crate::engine_support;

use std::sync::Arc;

use engine_support::{Scripted, http, replay, reply, validate_pass};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::format::{Document, Format};
use llm_compactor::message::Message;
use llm_compactor::plan;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};

fn conversations() -> Vec<(String, Vec<Message>)> {
    let mut out = Vec::new();
    for path in common::mini_swe_agent_files() {
        let doc = Document::read_path(&path, Some(Format::MiniSweAgent)).expect("a readable trajectory");
        out.push((path.display().to_string(), doc.messages().to_vec()));
    }
    for (i, traj) in common::tau_bench_conversations().into_iter().enumerate() {
        let doc = Document::from_value(traj, Some(Format::OpenAi), "tau-bench").expect("a readable conversation");
        out.push((format!("tau-bench #{i}"), doc.messages().to_vec()));
    }
    out
}

#[test]
fn every_trajectory_compacts_validly_at_several_budgets() {
    let all = conversations();
    if all.is_empty() {
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let mut passes = 0;
    for (name, messages) in &all {
        for budget in [2_000usize, 8_000, 32_000] {
            for aging in [false, true] {
                for scripted in [None, Some(0u8), Some(1)] {
                    let config = CompactorConfig::builder(budget)
                        .age_observations(aging)
                        .age_min_chars(1000)
                        .age_reclaim_min(4000)
                        .build()
                        .unwrap();
                    let mut c = Compactor::new(config, Arc::new(HeuristicCounter));
                    match scripted {
                        Some(0) => c = c.with_summarizer(Scripted::always(reply("## Goals\nsummary"))),
                        Some(_) => c = c.with_summarizer(Scripted::new(vec![http(503), reply(&"h".repeat(60_000))])),
                        None => {}
                    }
                    let r = rt.block_on(c.compact(messages, CompactOptions::default())).unwrap();
                    let layout = plan::layout(messages, 6);
                    assert_eq!(validate_pass(messages, &r, 6), Ok(()), "{name} {budget}");
                    assert_eq!(replay(messages, &r), r.messages, "{name} {budget}");
                    if r.messages != *messages {
                        assert!(r.exhausted || r.tokens_after < r.tokens_before, "{name} {budget}");
                    }
                    if scripted == Some(0) && !layout.is_noop() && !(aging && r.is_elision_only()) {
                        assert!(!r.fallback, "{name} {budget}: a short summary is accepted");
                    }
                    passes += 1;
                }
            }
        }
    }
    eprintln!("{} conversations, {passes} passes", all.len());
}
