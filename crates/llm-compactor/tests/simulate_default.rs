//! Issue 40: the simulator's `ours` is the configured default (prepared passes, the
//! cache-reading summary request when the summarizer is the agent's own model), and the
//! inline engine stays available as `ours-inline`.

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::{Pricing, SimConfig, StrategyKind, TrajectoryReport, simulate_trajectory};
use llm_compactor::{Message, ToolCall};

/// A 60-round agent run whose tool results vary in size: several summaries at 8,000.
fn trajectory() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are an agent."),
        Message::user("Fix the bug in the parser."),
    ];
    for round in 0..60 {
        let id = format!("call_{round}");
        messages.push(
            Message::assistant(format!("Step {round}: reading.")).with_tool_calls(vec![ToolCall::new(
                id.clone(),
                "read",
                format!(r#"{{"path":"src/f{}.rs"}}"#, round % 7),
            )]),
        );
        let size = 300 + (round * 537) % 2500;
        messages.push(Message::tool(id, format!("line {round}\n").repeat(size / 8)));
    }
    messages.push(Message::assistant("Fixed."));
    messages
}

fn run(kind: StrategyKind, summarizer_price: f64) -> TrajectoryReport {
    let config = SimConfig {
        max_output: 500,
        summarizer_price,
        ..SimConfig::new(8_000, Pricing::ANTHROPIC, Arc::new(HeuristicCounter))
    };
    simulate_trajectory(&trajectory(), &[kind], &config).unwrap().remove(0)
}

fn agent_requests(report: &TrajectoryReport) -> Vec<(u64, u64, u64)> {
    report
        .requests
        .iter()
        .map(|r| (r.input_tokens, r.cached_tokens, r.output_tokens))
        .collect()
}

#[test]
fn the_default_reads_the_agents_cache_only_when_the_summarizer_is_the_agents_model() {
    let same = run(StrategyKind::Ours, 1.0);
    let other = run(StrategyKind::Ours, 0.1);
    assert_eq!(same.totals.name, "ours");
    assert!(same.totals.compactions > 0 && same.totals.summarizer_calls > 0);
    assert_eq!(same.totals.rounds_over_window, 0);
    // The same passes, the same agent requests: only the summary request differs.
    assert_eq!(agent_requests(&same), agent_requests(&other));
    assert_eq!(same.totals.summarizer_calls, other.totals.summarizer_calls);
    let agent_cached: u64 = same.requests.iter().map(|r| r.cached_tokens).sum();
    // At the agent's price the summary input is read from the cache; at another model's
    // price none of it is.
    assert!(same.totals.cached_tokens > agent_cached, "the summaries read the cache");
    assert_eq!(other.totals.cached_tokens, agent_cached, "another model reads nothing");
}

#[test]
fn the_inline_engine_is_still_there_under_its_own_name() {
    assert_eq!("ours-inline".parse::<StrategyKind>(), Ok(StrategyKind::OursInline));
    assert!(StrategyKind::ALL.contains(&StrategyKind::OursInline));
    assert!(StrategyKind::OursInline.keeps_context_below_trigger());
    let inline = run(StrategyKind::OursInline, 1.0);
    assert_eq!(inline.totals.name, "ours-inline");
    assert!(inline.totals.compactions > 0);
    assert_eq!(inline.totals.rounds_over_window, 0);
    // Inline, the summary request is the rendered transcript, read from no cache.
    let agent_cached: u64 = inline.requests.iter().map(|r| r.cached_tokens).sum();
    assert_eq!(inline.totals.cached_tokens, agent_cached);
}
