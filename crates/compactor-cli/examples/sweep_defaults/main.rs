//! The defaults sweep: `ours` over a grid of settings, against every peer strategy, on
//! the shared trajectories, at several windows, under two pricings and two summarizer
//! prices.
//!
//! Run it through `scripts/sweep-defaults.sh`, which documents the arguments:
//!
//! ```text
//! cargo run --release -p compactor-cli --example sweep_defaults -- \
//!     --data ../shared/data --out target/sweep [--grid full|none] [--windows 32000,64000,128000]
//!     [--horizons 20,40,80]
//! ```
//!
//! Each (trajectory, window, strategy or grid point) is replayed once with the library's
//! simulator; the bill is kept by token class, and since a bill is linear in its token
//! counts it is priced afterwards under each (pricing, summarizer price) setting without
//! replaying again (every strategy's *behaviour* is independent of the price: `ours`
//! decides with its own default policy, the peers do not look at prices). A strategy with
//! any request over the window (output reserve included) is FAILED at that window: its
//! cost is reported, never compared as a price.
//!
//! Writes `sweep.csv` (every row), `sweep.md` (the decision tables) and `sweep-<family>.svg`
//! (the grid's cost against the target ratio, per window and trigger, under Anthropic
//! pricing with the same-model summarizer).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod output;
mod policy;

use llm_compactor::Message;
use llm_compactor::compactor::CompactorConfig;
use llm_compactor::count::{BpeCounter, MemoCounter, TokenCounter};
use llm_compactor::format::{Document, Format};
use llm_compactor::plan::CostPolicy;
use llm_compactor::plan::policy::DEFAULT_EXPECTED_REMAINING_ROUNDS;
use llm_compactor::simulate::ours::Ours;
use llm_compactor::simulate::{
    DEFAULT_MAX_OUTPUT, Env, Pricing, ReplayLimits, SimError, Step, Strategy, StrategyKind, Tokens, replay_with,
};
use output::{report, write_csv, write_svg};
use policy::{Quiet, policy_report};

/// One point of the grid: the settings of `ours` that the sweep varies.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    trigger: f64,
    target: f64,
    aging: bool,
    epoch: f64,
    keep: usize,
    /// The cost policy's `expected_remaining_rounds` (the epoch gate's horizon cap).
    horizon: u32,
    /// `age_min_chars` (aging's size floor).
    min_chars: usize,
}

impl Point {
    fn label(&self) -> String {
        format!(
            "trigger {:.2} target {:.2} aging {} epoch {:.3} keep {}",
            self.trigger,
            self.target,
            if self.aging { "on" } else { "off" },
            self.epoch,
            self.keep
        ) + &if self.horizon == DEFAULT_EXPECTED_REMAINING_ROUNDS {
            String::new()
        } else {
            format!(" horizon {}", self.horizon)
        } + &if self.min_chars == llm_compactor::compactor::DEFAULT_AGE_MIN_CHARS {
            String::new()
        } else {
            format!(" min {}", self.min_chars)
        }
    }

    fn config(&self, window: usize) -> Option<CompactorConfig> {
        CompactorConfig::builder(window)
            .trigger_ratio(self.trigger)
            .target_ratio(self.target)
            .age_observations(self.aging)
            .keep_recent(self.keep)
            .age_min_chars(self.min_chars)
            .cost_policy(CostPolicy {
                epoch_ratio: Some(self.epoch),
                expected_remaining_rounds: self.horizon,
                ..CostPolicy::default()
            })
            .build()
            .ok()
    }
}

/// The grid: every combination, with the epoch and the gate's horizon varied only when
/// aging is on (they mean nothing without aging).
fn grid(
    triggers: &[f64],
    targets: &[f64],
    epochs: &[f64],
    keeps: &[usize],
    horizons: &[u32],
    min_chars: &[usize],
) -> Vec<Point> {
    let mut points = Vec::new();
    for &trigger in triggers {
        for &target in targets {
            if target >= trigger {
                continue;
            }
            for &keep in keeps {
                points.push(Point {
                    trigger,
                    target,
                    aging: false,
                    epoch: epochs[0],
                    keep,
                    horizon: horizons[0],
                    min_chars: min_chars[0],
                });
                for &epoch in epochs {
                    for &horizon in horizons {
                        for &min in min_chars {
                            points.push(Point {
                                trigger,
                                target,
                                aging: true,
                                epoch,
                                keep,
                                horizon,
                                min_chars: min,
                            });
                        }
                    }
                }
            }
        }
    }
    points
}

/// What one replay billed, by token class, plus what the decision tables need.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bill {
    agent: Tokens,
    /// The summarizer's bill when it is the agent's own model (summarizer price 1).
    summarizer: Tokens,
    /// The summarizer's bill when it is another model (any other price): differs from
    /// `summarizer` only for `ours`, whose summary request reads the agent's cache when
    /// the summarizer is the agent's model.
    summarizer_other: Tokens,
    rounds_over: u64,
    compactions: u64,
    epochs: u64,
    peak: u64,
    input: u64,
    cached: u64,
    /// Tokens the agent's requests carried, summed over the requests: against `none`'s,
    /// the share of the context a strategy dropped (elided or summarized away).
    context: u64,
}

impl Bill {
    fn merge(&mut self, o: &Bill) {
        add(&mut self.agent, &o.agent);
        add(&mut self.summarizer, &o.summarizer);
        add(&mut self.summarizer_other, &o.summarizer_other);
        self.rounds_over += o.rounds_over;
        self.compactions += o.compactions;
        self.epochs += o.epochs;
        self.peak = self.peak.max(o.peak);
        self.input += o.input;
        self.cached += o.cached;
        self.context += o.context;
    }

    fn cost(&self, pricing: &Pricing, summarizer_price: f64) -> f64 {
        let summarizer = if summarizer_price == 1.0 {
            &self.summarizer
        } else {
            &self.summarizer_other
        };
        pricing.cost(&self.agent) + summarizer_price * pricing.cost(summarizer)
    }

    fn cache_hit(&self) -> f64 {
        if self.input == 0 {
            0.0
        } else {
            self.cached as f64 / self.input as f64
        }
    }
}

fn add(a: &mut Tokens, b: &Tokens) {
    a.cache_read += b.cache_read;
    a.cache_write += b.cache_write;
    a.uncached += b.uncached;
    a.output += b.output;
}

/// A strategy wrapper that keeps the summarizer's bill by token class.
struct Recording<'a> {
    inner: &'a mut dyn Strategy,
    summarizer: Tokens,
}

impl Strategy for Recording<'_> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn prepare(&mut self, appended: &[Message], env: &Env<'_>) -> Result<Step, SimError> {
        let step = self.inner.prepare(appended, env)?;
        add(&mut self.summarizer, &step.summarizer);
        Ok(step)
    }

    fn conversation(&self) -> &[Message] {
        self.inner.conversation()
    }
}

/// One replay at `summarizer_price` (1: the summarizer is the agent's own model), its
/// summarizer's bill kept as both `summarizer` and `summarizer_other`.
fn bill(
    trajectory: &[Message],
    strategy: &mut dyn Strategy,
    window: usize,
    max_output: usize,
    summarizer_price: f64,
    counter: &dyn TokenCounter,
) -> Result<Bill, SimError> {
    let mut recording = Recording {
        inner: strategy,
        summarizer: Tokens::default(),
    };
    let limits = ReplayLimits {
        window,
        max_output,
        pricing: &Pricing::ANTHROPIC,
        summarizer_price,
    };
    let report = replay_with(trajectory, &mut recording, &limits, counter)?;
    let mut b = Bill {
        summarizer: recording.summarizer,
        summarizer_other: recording.summarizer,
        rounds_over: report.totals.rounds_over_window,
        compactions: report.totals.compactions,
        epochs: report.totals.elision_epochs,
        peak: report.totals.peak_context,
        input: report.totals.input_tokens,
        cached: report.totals.cached_tokens,
        ..Bill::default()
    };
    for r in &report.requests {
        b.agent.cache_read += r.cached_tokens;
        b.agent.cache_write += r.input_tokens - r.cached_tokens;
        b.agent.output += r.output_tokens;
        b.context += r.input_tokens;
    }
    Ok(b)
}

struct Family {
    name: &'static str,
    trajectories: Vec<(String, Vec<Message>)>,
}

fn load_dir(dir: &Path) -> Vec<(String, Vec<Message>)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.retain(|p| p.to_string_lossy().ends_with(".traj.json"));
    paths.sort();
    paths
        .iter()
        .filter_map(|p| {
            let bytes = std::fs::read(p).ok()?;
            let name = p.file_name()?.to_string_lossy().into_owned();
            let doc = Document::from_bytes(&bytes, None, &name).ok()?;
            Some((name, doc.messages().to_vec()))
        })
        .collect()
}

fn load_tasks(path: &Path) -> Vec<(String, Vec<Message>)> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(serde_json::Value::Array(tasks)) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    tasks
        .iter()
        .enumerate()
        .filter_map(|(i, task)| {
            let traj = serde_json::to_vec(task.get("traj")?).ok()?;
            let name = format!("task {i}");
            let doc = Document::from_bytes(&traj, Some(Format::OpenAi), &name).ok()?;
            Some((name, doc.messages().to_vec()))
        })
        .collect()
}

/// Setting = (pricing, summarizer price).
const SETTINGS: [(Pricing, f64); 4] = [
    (Pricing::ANTHROPIC, 1.0),
    (Pricing::ANTHROPIC, 0.1),
    (Pricing::OPENAI_GPT5, 1.0),
    (Pricing::OPENAI_GPT5, 0.1),
];

/// The peers (and named `ours` variants) every grid point is compared with.
const PEERS: [StrategyKind; 17] = StrategyKind::ALL;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn list<T: std::str::FromStr>(text: &str) -> Vec<T> {
    text.split(',').filter_map(|s| s.trim().parse().ok()).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data = PathBuf::from(arg(&args, "--data").unwrap_or_else(|| "../shared/data".into()));
    let out = PathBuf::from(arg(&args, "--out").unwrap_or_else(|| "target/sweep".into()));
    let windows: Vec<usize> = list(&arg(&args, "--windows").unwrap_or_else(|| "32000,64000,128000".into()));
    let full = arg(&args, "--grid").as_deref() != Some("none");
    let triggers: Vec<f64> = list(&arg(&args, "--triggers").unwrap_or_else(|| "0.7,0.75,0.8,0.85".into()));
    let targets: Vec<f64> = list(&arg(&args, "--targets").unwrap_or_else(|| "0.2,0.3,0.4,0.5".into()));
    let epochs: Vec<f64> = list(&arg(&args, "--epochs").unwrap_or_else(|| "0.096,0.05,0.2".into()));
    let keeps: Vec<usize> = list(&arg(&args, "--keeps").unwrap_or_else(|| "6,4,10".into()));
    let horizons: Vec<u32> =
        list(&arg(&args, "--horizons").unwrap_or_else(|| DEFAULT_EXPECTED_REMAINING_ROUNDS.to_string()));
    let min_chars: Vec<usize> =
        list(&arg(&args, "--min-chars").unwrap_or_else(|| llm_compactor::compactor::DEFAULT_AGE_MIN_CHARS.to_string()));
    let families_arg = arg(&args, "--families").unwrap_or_else(|| "mini-swe-agent,tau-bench".into());
    // The grid runs where something needs managing; elsewhere the peers and the named
    // `ours` variants only (tau-bench airline peaks near 10.5k tokens).
    let grid_families = arg(&args, "--grid-families").unwrap_or_else(|| "mini-swe-agent".into());
    // A subset of the peers (`none` is always kept: it is the baseline).
    let peers: Vec<StrategyKind> = match arg(&args, "--peers") {
        Some(names) => {
            let mut kinds: Vec<StrategyKind> = list(&names);
            if !kinds.contains(&StrategyKind::None) {
                kinds.insert(0, StrategyKind::None);
            }
            kinds
        }
        None => PEERS.to_vec(),
    };
    std::fs::create_dir_all(&out)?;

    let trajectories = data.join("trajectories");
    let mut families = Vec::new();
    if families_arg.contains("mini-swe-agent") {
        families.push(Family {
            name: "mini-swe-agent",
            trajectories: load_dir(&trajectories.join("mini-swe-agent")),
        });
    }
    if families_arg.contains("tau-bench") {
        families.push(Family {
            name: "tau-bench-airline",
            trajectories: load_tasks(&trajectories.join("tau-bench/gpt-4o-airline.json")),
        });
    }
    families.retain(|f| !f.trajectories.is_empty());
    if families.is_empty() {
        eprintln!("no trajectories under {}: nothing to sweep", trajectories.display());
        return Ok(());
    }
    let points = if full {
        grid(&triggers, &targets, &epochs, &keeps, &horizons, &min_chars)
    } else {
        Vec::new()
    };
    eprintln!(
        "{} families, {} windows, {} grid points, {} peers",
        families.len(),
        windows.len(),
        points.len(),
        peers.len()
    );

    // (family, window) -> (strategy label -> bill), and per-trajectory bills of `none`
    // and `ours` for the exactness check.
    let mut results: BTreeMap<(String, usize), BTreeMap<String, Bill>> = BTreeMap::new();
    let mut exact: Vec<String> = Vec::new();
    let mut quiet_runs: BTreeMap<(String, usize), Quiet> = BTreeMap::new();
    let started = std::time::Instant::now();
    for family in &families {
        for &window in &windows {
            let max_output = DEFAULT_MAX_OUTPUT.min(window / 4);
            let totals = results.entry((family.name.to_owned(), window)).or_default();
            let (mut quiet, mut quiet_diff) = (0usize, Vec::new());
            for (name, trajectory) in &family.trajectories {
                let counter: Arc<dyn TokenCounter> = Arc::new(MemoCounter::new(BpeCounter::o200k()));
                let mut per: BTreeMap<String, Bill> = BTreeMap::new();
                for &kind in &peers {
                    let mut s = kind.build(window, counter.clone())?;
                    let mut b = bill(trajectory, s.as_mut(), window, max_output, 1.0, counter.as_ref())?;
                    if kind == StrategyKind::Ours {
                        // The default bills its summary request by the summarizer: replayed
                        // again with another model's price (the same passes, another bill).
                        let mut s = kind.build(window, counter.clone())?;
                        let other = bill(trajectory, s.as_mut(), window, max_output, 0.1, counter.as_ref())?;
                        debug_assert_eq!(other.agent, b.agent);
                        b.summarizer_other = other.summarizer;
                    }
                    per.insert(kind.name().to_owned(), b);
                }
                let family_points = if grid_families.contains(family.name) {
                    points.as_slice()
                } else {
                    &[]
                };
                for p in family_points {
                    let Some(config) = p.config(window) else { continue };
                    let mut s = Ours::with_config("grid", config, counter.clone())?;
                    let b = bill(trajectory, &mut s, window, max_output, 1.0, counter.as_ref())?;
                    per.insert(p.label(), b);
                }
                // Nothing to manage: `none` never goes over `ours`' trigger.
                let trigger = CompactorConfig::builder(window).build()?.trigger() as u64;
                if per["none"].peak <= trigger {
                    quiet += 1;
                    quiet_runs
                        .entry((family.name.to_owned(), window))
                        .or_default()
                        .add(name, &per);
                    for variant in [
                        "ours",
                        "ours-inline",
                        "ours-aging",
                        "ours-prepared",
                        "ours-prepared-cached",
                    ] {
                        if per.get(variant).is_some_and(|b| *b != per["none"]) {
                            quiet_diff.push(format!("{variant} on {name}"));
                        }
                    }
                }
                for (label, b) in per {
                    totals.entry(label).or_default().merge(&b);
                }
            }
            let line = format!(
                "{} at {window}: {quiet} of {} trajectories never pass the default trigger; `ours`, `ours-inline`, `ours-aging`, `ours-prepared` and `ours-prepared-cached` \
                 (when run) bill exactly what `none` bills on them{}",
                family.name,
                family.trajectories.len(),
                if quiet_diff.is_empty() {
                    String::new()
                } else {
                    format!(", except: {}", quiet_diff.join(", "))
                }
            );
            eprintln!("{line} [{:.0}s]", started.elapsed().as_secs_f64());
            exact.push(line);
        }
    }

    write_csv(&out.join("sweep.csv"), &results)?;
    let md = report(&results, &points, &exact);
    std::fs::write(out.join("sweep.md"), &md)?;
    for family in &families {
        write_svg(
            &out.join(format!("sweep-{}.svg", family.name)),
            family.name,
            &results,
            &points,
            &windows,
        )?;
    }
    let tables = policy_report(&results, &quiet_runs, &peers);
    std::fs::write(out.join("policy.md"), &tables)?;
    println!("{md}");
    Ok(())
}
