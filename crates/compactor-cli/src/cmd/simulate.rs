//! `compactor simulate`: what each context strategy would have cost on real trajectories.
//!
//! Replays every trajectory under every strategy asked for (all by default) with the
//! library's cache-aware simulator and prints a table with ratios against `none`, the
//! pinned JSON summary (`--json`), and optionally an SVG plot of the first trajectory
//! (`--plot`). Inputs are conversation files in any supported format, and tau-bench task
//! arrays (a JSON array of tasks, each with an OpenAI-shaped `traj`), each task being one
//! trajectory.

use std::path::PathBuf;
use std::sync::Arc;

use llm_compactor::Message;
use llm_compactor::count::{BpeCounter, TokenCounter};
use llm_compactor::format::{Document, Format};
use llm_compactor::simulate::{
    Pricing, SimConfig, SimulationSummary, StrategyKind, StrategyRow, StrategyTotals, TrajectoryReport,
    simulate_trajectory,
};
use serde_json::Value;

use crate::error::CliError;
use crate::io::{read_input, source_name};

/// Simulate what each context strategy costs with prompt caching.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trajectory files (any supported format, or a tau-bench task array); `-` for stdin.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// The context window in tokens.
    #[arg(long, value_parser = super::ranges::tokens)]
    pub window: usize,
    /// Pricing preset: anthropic, openai-gpt5 or openai-4o.
    #[arg(long, default_value = "anthropic")]
    pub pricing: String,
    /// A strategy to simulate (repeatable; default: all). One of none, ours, ours-inline, ours-aging, ours-no-aging, ours-seed,
    /// ours-economy, ours-prepared, ours-prepared-cached, mask-last-n, mask-last-n-batched, jetbrains-hybrid,
    /// jetbrains-hybrid-batched, clear-tool-uses, clear-tool-uses-scaled, summarize-at-threshold, claude-code-like.
    #[arg(long = "strategy")]
    pub strategies: Vec<String>,
    /// Simulate only `none` and the engine under this policy (`default` is `ours`,
    /// `economy` is `ours-economy`), beside any `--strategy` given.
    #[arg(long, value_name = "POLICY", value_parser = super::compact_opts::parse_policy)]
    pub policy: Option<llm_compactor::Policy>,
    /// Output tokens every request reserves in the window: a request whose context plus
    /// this is over the window is rejected, as the provider would, and its strategy is
    /// marked FAILED at this window. Default 4096, or a quarter of a window smaller than
    /// 16,384 tokens.
    #[arg(long)]
    pub max_output: Option<usize>,
    /// The summarizer's price relative to the agent model's (1 = the same model; 0.1 = a
    /// model ten times cheaper). At 1 the summarizer is taken to be the agent's own model,
    /// and `ours` (the default) sends its summary request in the cache-reading form; at
    /// any other price it is another model, and the request reads nothing from the cache.
    #[arg(long, default_value_t = 1.0)]
    pub summarizer_price: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG plot of context tokens and cumulative cost per request, first trajectory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

/// One trajectory to replay.
struct Trajectory {
    name: String,
    messages: Vec<Message>,
}

/// The counter the simulation measures with: exact o200k_base.
fn counter() -> Arc<dyn TokenCounter> {
    Arc::new(BpeCounter::o200k())
}

/// True for a tau-bench task array: a non-empty JSON array of objects that all carry `traj`.
fn is_task_array(value: &Value) -> bool {
    value
        .as_array()
        .is_some_and(|tasks| !tasks.is_empty() && tasks.iter().all(|t| t.get("traj").is_some_and(Value::is_array)))
}

fn load(input: &str) -> Result<Vec<Trajectory>, CliError> {
    let bytes = read_input(input)?;
    let name = source_name(input);
    if let Ok(value) = serde_json::from_slice::<Value>(&bytes)
        && is_task_array(&value)
    {
        let tasks = value.as_array().map(Vec::as_slice).unwrap_or_default();
        return tasks
            .iter()
            .enumerate()
            .map(|(i, task)| {
                let id = match task.get("task_id") {
                    Some(Value::Number(n)) => n.to_string(),
                    Some(Value::String(s)) => s.clone(),
                    _ => i.to_string(),
                };
                let task_name = format!("{name}#{i}(task {id})");
                let traj = serde_json::to_vec(&task["traj"]).map_err(CliError::failed)?;
                let document =
                    Document::from_bytes(&traj, Some(Format::OpenAi), &task_name).map_err(CliError::failed)?;
                Ok(Trajectory {
                    name: task_name,
                    messages: document.messages().to_vec(),
                })
            })
            .collect();
    }
    let document = Document::from_bytes(&bytes, None, &name).map_err(CliError::failed)?;
    Ok(vec![Trajectory {
        name,
        messages: document.messages().to_vec(),
    }])
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    if args.window == 0 {
        return Err(CliError::Usage("--window must be a positive number of tokens".into()));
    }
    let pricing: Pricing = args
        .pricing
        .parse()
        .map_err(|e| CliError::Usage(format!("--pricing: {e}")))?;
    let kinds: Vec<StrategyKind> = if args.strategies.is_empty() && args.policy.is_none() {
        StrategyKind::ALL.to_vec()
    } else {
        let mut kinds = Vec::new();
        if let Some(policy) = args.policy {
            kinds.push(StrategyKind::None);
            kinds.push(StrategyKind::of_policy(policy));
        }
        for name in &args.strategies {
            let kind: StrategyKind = name.parse().map_err(|e| CliError::Usage(format!("--strategy: {e}")))?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds
    };
    if !(args.summarizer_price.is_finite() && (0.0..=100.0).contains(&args.summarizer_price)) {
        return Err(CliError::Usage(
            "--summarizer-price must be a number from 0 to 100 (a ratio to the agent model's price)".into(),
        ));
    }
    let max_output = args
        .max_output
        .unwrap_or(llm_compactor::simulate::DEFAULT_MAX_OUTPUT.min(args.window / 4));
    if max_output >= args.window {
        return Err(CliError::Usage("--max-output must be less than --window".into()));
    }
    let config = SimConfig {
        max_output,
        summarizer_price: args.summarizer_price,
        ..SimConfig::new(args.window, pricing, counter())
    };

    let mut totals: Vec<StrategyTotals> = kinds
        .iter()
        .map(|k| StrategyTotals {
            name: k.name().to_owned(),
            ..StrategyTotals::default()
        })
        .collect();
    let mut first: Option<(String, Vec<TrajectoryReport>)> = None;
    let mut count = 0u64;
    for input in &args.files {
        for trajectory in load(input)? {
            let reports = simulate_trajectory(&trajectory.messages, &kinds, &config)
                .map_err(|e| CliError::Failed(format!("{}: {e}", trajectory.name)))?;
            for (total, report) in totals.iter_mut().zip(&reports) {
                total.merge(&report.totals);
            }
            count += 1;
            if first.is_none() {
                first = Some((trajectory.name, reports));
            }
        }
    }

    if let (Some(path), Some((name, reports))) = (&args.plot, &first) {
        crate::cmd::plot::write_svg(path, name, args.window, pricing.name, reports)?;
    }

    let summary = SimulationSummary {
        trajectories: count,
        window: args.window as u64,
        pricing: pricing.name.to_owned(),
        strategies: totals.iter().map(StrategyRow::from).collect(),
    };
    if args.json {
        let text = serde_json::to_string_pretty(&summary).map_err(CliError::failed)?;
        crate::out::stdout_line(&text)
    } else {
        crate::out::stdout(&table(&summary, &totals, config.counter.name()))
    }
}

/// The human table: every strategy with its ratio against `none`.
fn table(summary: &SimulationSummary, totals: &[StrategyTotals], counter: &str) -> String {
    let base = totals.iter().find(|t| t.name == "none").map(|t| t.cost);
    let mut out = format!(
        "{} trajectories, window {} tokens, pricing {}, counter {}; cost in base-input-token units\n\
         FAILED: a request over the window (output reserve included) that the provider would reject; \
         its cost is not an achievable price\n\n",
        summary.trajectories, summary.window, summary.pricing, counter
    );
    out.push_str(&format!(
        "{:<24} {:>7} {:>14} {:>8} {:>9} {:>9} {:>9} {:>11} {:>11} {:>7} {:>10}\n",
        "strategy",
        "status",
        "cost",
        "vs none",
        "requests",
        "cache hit",
        "peak ctx",
        "over window",
        "compactions",
        "epochs",
        "summarizer"
    ));
    for t in totals {
        let ratio = base
            .filter(|b| *b > 0.0)
            .map(|b| format!("{:.3}", t.cost / b))
            .unwrap_or_else(|| "-".into());
        out.push_str(&format!(
            "{:<24} {:>7} {:>14.0} {:>8} {:>9} {:>9.3} {:>9} {:>11} {:>11} {:>7} {:>10}\n",
            t.name,
            if t.rounds_over_window > 0 { "FAILED" } else { "ok" },
            t.cost,
            ratio,
            t.requests,
            t.cache_hit_ratio(),
            t.peak_context,
            t.rounds_over_window,
            t.compactions,
            t.elision_epochs,
            t.summarizer_calls
        ));
    }
    if let Some(best) = totals
        .iter()
        .filter(|t| t.rounds_over_window == 0)
        .min_by(|a, b| a.cost.total_cmp(&b.cost))
    {
        out.push_str(&format!("\ncheapest that stays inside the window: {}\n", best.name));
    }
    if summary.window <= llm_compactor::simulate::clear_tool_uses::DEFAULT_TRIGGER as u64
        && totals.iter().any(|t| t.name == "clear-tool-uses")
    {
        out.push_str(&format!(
            "\nnote: clear-tool-uses uses Anthropic's default trigger ({} tokens), which is not below this \
             window: it cannot fire before the window overflows. clear-tool-uses-scaled is our variant with \
             the trigger at half the window.\n",
            llm_compactor::simulate::clear_tool_uses::DEFAULT_TRIGGER
        ));
    }
    out
}
