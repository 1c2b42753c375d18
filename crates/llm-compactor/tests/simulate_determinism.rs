//! The same input gives the same report, to the last bit of the JSON.

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::{Pricing, SimConfig, SimulationSummary, StrategyKind, StrategyRow, simulate_trajectory};
use llm_compactor::{Message, ToolCall};

/// A 40-round agent run whose tool results vary in size, enough to make every strategy
/// act at a 6,000-token window.
fn trajectory() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are an agent."),
        Message::user("Fix the bug in the parser."),
    ];
    for round in 0..40 {
        let id = format!("call_{round}");
        messages.push(
            Message::assistant(format!("Step {round}: reading.")).with_tool_calls(vec![ToolCall::new(
                id.clone(),
                "read",
                format!(r#"{{"path":"src/f{}.rs"}}"#, round % 7),
            )]),
        );
        let size = 500 + (round * 737) % 4000;
        messages.push(Message::tool(id, format!("line {round}\n").repeat(size / 8)));
    }
    messages.push(Message::assistant("Fixed."));
    messages
}

fn summary(kinds: &[StrategyKind]) -> String {
    let config = SimConfig {
        max_output: 0,
        ..SimConfig::new(6_000, Pricing::OPENAI_GPT5, Arc::new(HeuristicCounter))
    };
    let reports = simulate_trajectory(&trajectory(), kinds, &config).unwrap();
    let summary = SimulationSummary {
        trajectories: 1,
        window: 6_000,
        pricing: config.pricing.name.to_owned(),
        strategies: reports.iter().map(|r| StrategyRow::from(&r.totals)).collect(),
    };
    serde_json::to_string(&summary).unwrap()
}

#[test]
fn peer_strategies_are_deterministic() {
    let kinds = [
        StrategyKind::None,
        StrategyKind::MaskLastN,
        StrategyKind::ClearToolUses,
        StrategyKind::ClearToolUsesScaled,
        StrategyKind::SummarizeAtThreshold,
    ];
    let first = summary(&kinds);
    assert_eq!(first, summary(&kinds));
    // Every strategy acted: the trajectory is long enough to make the comparison mean something.
    let parsed: SimulationSummary = serde_json::from_str(&first).unwrap();
    let row = |name: &str| parsed.strategies.iter().find(|s| s.name == name).unwrap().clone();
    assert!(row("none").rounds_over_window > 0);
    assert!(row("mask-last-n").elision_epochs > 0);
    assert!(row("clear-tool-uses-scaled").elision_epochs > 0);
    assert_eq!(row("clear-tool-uses").elision_epochs, 0);
    assert!(row("summarize-at-threshold").compactions > 0);
    assert_eq!(row("summarize-at-threshold").rounds_over_window, 0);
}

#[test]
fn the_engine_strategies_are_deterministic_and_stay_inside_the_window() {
    let kinds = [StrategyKind::Ours, StrategyKind::OursNoAging];
    let first = summary(&kinds);
    assert_eq!(first, summary(&kinds));
    let parsed: SimulationSummary = serde_json::from_str(&first).unwrap();
    for row in &parsed.strategies {
        assert_eq!(row.rounds_over_window, 0, "{}", row.name);
        assert!(row.compactions + row.elision_epochs > 0, "{}", row.name);
        assert!(row.peak_context <= 6_000, "{}", row.name);
    }
    assert_eq!(parsed.strategies[1].elision_epochs, 0, "no aging, no epochs");
}
