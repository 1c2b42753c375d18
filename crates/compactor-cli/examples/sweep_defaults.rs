//! The defaults sweep: `ours` over a grid of settings, against every peer strategy, on
//! the shared trajectories, at several windows, under two pricings and two summarizer
//! prices.
//!
//! Run it through `scripts/sweep-defaults.sh`, which documents the arguments:
//!
//! ```text
//! cargo run --release -p compactor-cli --example sweep_defaults -- \
//!     --data ../shared/data --out target/sweep [--grid full|none] [--windows 32000,64000,128000]
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

use llm_compactor::Message;
use llm_compactor::compactor::CompactorConfig;
use llm_compactor::count::{BpeCounter, MemoCounter, TokenCounter};
use llm_compactor::format::{Document, Format};
use llm_compactor::plan::CostPolicy;
use llm_compactor::simulate::ours::Ours;
use llm_compactor::simulate::{
    DEFAULT_MAX_OUTPUT, Env, Pricing, ReplayLimits, SimError, Step, Strategy, StrategyKind, Tokens, replay_with,
};

/// One point of the grid: the settings of `ours` that the sweep varies.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Point {
    trigger: f64,
    target: f64,
    aging: bool,
    epoch: f64,
    keep: usize,
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
        )
    }

    fn config(&self, window: usize) -> Option<CompactorConfig> {
        CompactorConfig::builder(window)
            .trigger_ratio(self.trigger)
            .target_ratio(self.target)
            .age_observations(self.aging)
            .keep_recent(self.keep)
            .cost_policy(CostPolicy {
                epoch_ratio: Some(self.epoch),
                ..CostPolicy::default()
            })
            .build()
            .ok()
    }
}

/// The grid: every combination, with the epoch varied only when aging is on (it means
/// nothing without aging).
fn grid(triggers: &[f64], targets: &[f64], epochs: &[f64], keeps: &[usize]) -> Vec<Point> {
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
                });
                for &epoch in epochs {
                    points.push(Point {
                        trigger,
                        target,
                        aging: true,
                        epoch,
                        keep,
                    });
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
    summarizer: Tokens,
    rounds_over: u64,
    compactions: u64,
    epochs: u64,
    peak: u64,
    input: u64,
    cached: u64,
}

impl Bill {
    fn merge(&mut self, o: &Bill) {
        add(&mut self.agent, &o.agent);
        add(&mut self.summarizer, &o.summarizer);
        self.rounds_over += o.rounds_over;
        self.compactions += o.compactions;
        self.epochs += o.epochs;
        self.peak = self.peak.max(o.peak);
        self.input += o.input;
        self.cached += o.cached;
    }

    fn cost(&self, pricing: &Pricing, summarizer_price: f64) -> f64 {
        pricing.cost(&self.agent) + summarizer_price * pricing.cost(&self.summarizer)
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

fn bill(
    trajectory: &[Message],
    strategy: &mut dyn Strategy,
    window: usize,
    max_output: usize,
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
        summarizer_price: 1.0,
    };
    let report = replay_with(trajectory, &mut recording, &limits, counter)?;
    let mut b = Bill {
        summarizer: recording.summarizer,
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
const PEERS: [StrategyKind; 12] = StrategyKind::ALL;

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
        grid(&triggers, &targets, &epochs, &keeps)
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
                    let b = bill(trajectory, s.as_mut(), window, max_output, counter.as_ref())?;
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
                    let b = bill(trajectory, &mut s, window, max_output, counter.as_ref())?;
                    per.insert(p.label(), b);
                }
                // Nothing to manage: `none` never goes over `ours`' trigger.
                let trigger = CompactorConfig::builder(window).build()?.trigger() as u64;
                if per["none"].peak <= trigger {
                    quiet += 1;
                    for variant in ["ours", "ours-aging"] {
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
                "{} at {window}: {quiet} of {} trajectories never pass the default trigger; `ours` and `ours-aging` \
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
    println!("{md}");
    Ok(())
}

fn write_csv(path: &Path, results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>) -> std::io::Result<()> {
    let mut csv = String::from(
        "family,window,strategy,pricing,summarizer_price,cost,vs_none,failed,rounds_over,compactions,epochs,cache_hit,peak\n",
    );
    for ((family, window), rows) in results {
        for (pricing, sp) in SETTINGS {
            let base = rows.get("none").map(|b| b.cost(&pricing, sp)).unwrap_or(0.0);
            for (label, b) in rows {
                let cost = b.cost(&pricing, sp);
                let _ = writeln!(
                    csv,
                    "{family},{window},{label},{},{sp},{cost:.0},{:.4},{},{},{},{},{:.4},{}",
                    pricing.name,
                    if base > 0.0 { cost / base } else { 0.0 },
                    b.rounds_over > 0,
                    b.rounds_over,
                    b.compactions,
                    b.epochs,
                    b.cache_hit(),
                    b.peak
                );
            }
        }
    }
    std::fs::write(path, csv)
}

fn is_peer(label: &str) -> bool {
    PEERS.iter().any(|k| k.name() == label)
}

/// The decision tables: per setting, the cheapest peer that stays inside; per grid point,
/// in how many settings it stays inside and is no dearer than that peer.
fn report(results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>, points: &[Point], exact: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## Nothing to manage: `ours` against `none`, trajectory by trajectory\n"
    );
    for line in exact {
        let _ = writeln!(md, "- {line}");
    }
    let _ = writeln!(md);
    // Per-strategy tables.
    for ((family, window), rows) in results {
        for (pricing, sp) in SETTINGS {
            let base = rows.get("none").map(|b| b.cost(&pricing, sp)).unwrap_or(0.0);
            let _ = writeln!(
                md,
                "### {family}, window {window}, pricing {}, summarizer at {sp}\n",
                pricing.name
            );
            let _ = writeln!(
                md,
                "| strategy | status | cost | vs none | cache hit | peak | rounds over | compactions | epochs |"
            );
            let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
            for kind in PEERS {
                let Some(b) = rows.get(kind.name()) else { continue };
                let cost = b.cost(&pricing, sp);
                let _ = writeln!(
                    md,
                    "| {} | {} | {:.0} | {:.3} | {:.3} | {} | {} | {} | {} |",
                    kind.name(),
                    if b.rounds_over > 0 { "FAILED" } else { "ok" },
                    cost,
                    if base > 0.0 { cost / base } else { 0.0 },
                    b.cache_hit(),
                    b.peak,
                    b.rounds_over,
                    b.compactions,
                    b.epochs
                );
            }
            let best = rows
                .iter()
                .filter(|(l, b)| is_peer(l) && b.rounds_over == 0)
                .min_by(|a, b| a.1.cost(&pricing, sp).total_cmp(&b.1.cost(&pricing, sp)));
            if let Some((label, _)) = best {
                let _ = writeln!(md, "\ncheapest that stays inside the window: `{label}`\n");
            }
        }
    }
    if points.is_empty() {
        return md;
    }
    // The grid.
    let _ = writeln!(md, "## The grid\n");
    let _ = writeln!(
        md,
        "A point **wins** a setting when it never exceeds the window and costs no more than every peer \
         strategy that never exceeds it (the named `ours` variants included). Ratio = cost / `none`, \
         mean over the mini-swe-agent settings.\n"
    );
    let mut scored: Vec<(usize, usize, f64, String)> = Vec::new();
    for p in points {
        let label = p.label();
        let (mut wins, mut ok, mut ratios) = (0usize, 0usize, Vec::new());
        for ((family, _), rows) in results {
            let Some(b) = rows.get(&label) else { continue };
            for (pricing, sp) in SETTINGS {
                let cost = b.cost(&pricing, sp);
                let failed = b.rounds_over > 0;
                if !failed {
                    ok += 1;
                }
                let best_peer = rows
                    .iter()
                    .filter(|(l, pb)| is_peer(l) && pb.rounds_over == 0)
                    .map(|(_, pb)| pb.cost(&pricing, sp))
                    .fold(f64::INFINITY, f64::min);
                if !failed && cost <= best_peer + 1e-6 {
                    wins += 1;
                }
                if family == "mini-swe-agent" {
                    let base = rows.get("none").map(|n| n.cost(&pricing, sp)).unwrap_or(1.0);
                    ratios.push(if failed { f64::INFINITY } else { cost / base });
                }
            }
        }
        let mean = if ratios.is_empty() {
            0.0
        } else {
            ratios.iter().sum::<f64>() / ratios.len() as f64
        };
        scored.push((wins, ok, mean, label));
    }
    let total = results.len() * SETTINGS.len();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.total_cmp(&b.2)));
    let _ = writeln!(
        md,
        "| rank | point | wins (of {total}) | inside the window (of {total}) | mean ratio (mini-swe-agent) |"
    );
    let _ = writeln!(md, "|---:|---|---:|---:|---:|");
    for (i, (wins, ok, mean, label)) in scored.iter().enumerate().take(40) {
        let _ = writeln!(md, "| {} | {label} | {wins} | {ok} | {mean:.3} |", i + 1);
    }
    // Per window, the best point and the best peer.
    let _ = writeln!(
        md,
        "\n### Per setting: the best grid point and the cheapest peer that stays inside\n"
    );
    let _ = writeln!(
        md,
        "| family | window | pricing | summarizer | best point | its ratio | cheapest peer inside | its ratio | default `ours` ratio |"
    );
    let _ = writeln!(md, "|---|---:|---|---:|---|---:|---|---:|---:|");
    for ((family, window), rows) in results {
        for (pricing, sp) in SETTINGS {
            let base = rows.get("none").map(|b| b.cost(&pricing, sp)).unwrap_or(1.0);
            let inside = |peer: bool| {
                rows.iter()
                    .filter(move |(l, b)| is_peer(l) == peer && b.rounds_over == 0)
                    .min_by(|a, b| a.1.cost(&pricing, sp).total_cmp(&b.1.cost(&pricing, sp)))
                    .map(|(l, b)| (l.clone(), b.cost(&pricing, sp) / base))
            };
            let point = inside(false).unwrap_or(("-".into(), f64::NAN));
            let peer = inside(true).unwrap_or(("-".into(), f64::NAN));
            let ours = rows
                .get("ours")
                .map(|b| b.cost(&pricing, sp) / base)
                .unwrap_or(f64::NAN);
            let _ = writeln!(
                md,
                "| {family} | {window} | {} | {sp} | {} | {:.3} | {} | {:.3} | {:.3} |",
                pricing.name, point.0, point.1, peer.0, peer.1, ours
            );
        }
    }
    md
}

/// Cost / none against the target ratio, one line per trigger (aging on, epoch and keep at
/// the first values given), one panel per window; Anthropic, same-model summarizer.
fn write_svg(
    path: &Path,
    family: &str,
    results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>,
    points: &[Point],
    windows: &[usize],
) -> std::io::Result<()> {
    if points.is_empty() {
        return Ok(());
    }
    let (pw, ph, margin) = (360.0, 300.0, 50.0);
    let width = pw * windows.len() as f64 + margin;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"16\" font-size=\"13\">{family}: cost / none against the target ratio (aging on, anthropic, same-model summarizer); \
         dashed: cheapest peer inside the window; x: FAILED</text>\n",
        ph + 70.0
    );
    let colors = ["#d62728", "#ff7f0e", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b"];
    let first = points[0];
    let (pricing, sp) = SETTINGS[0];
    for (w, &window) in windows.iter().enumerate() {
        let Some(rows) = results.get(&(family.to_owned(), window)) else {
            continue;
        };
        let base = rows.get("none").map(|b| b.cost(&pricing, sp)).unwrap_or(1.0);
        let x0 = margin + pw * w as f64;
        let y0 = 40.0;
        let (lo, hi) = (0.6, 1.2);
        let sx = |t: f64| x0 + 20.0 + (t - 0.15) / 0.4 * (pw - 60.0);
        let sy = |r: f64| y0 + (hi - r.clamp(lo, hi)) / (hi - lo) * ph;
        let _ = writeln!(
            svg,
            "<rect x=\"{x0}\" y=\"{y0}\" width=\"{}\" height=\"{ph}\" fill=\"none\" stroke=\"#999\"/>\n<text x=\"{}\" y=\"{}\">window {window}</text>",
            pw - 20.0,
            x0 + 10.0,
            y0 + 14.0
        );
        for r in [0.7, 0.8, 0.9, 1.0, 1.1] {
            let _ = writeln!(
                svg,
                "<line x1=\"{x0}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{y}\">{r:.1}</text>",
                x0 + pw - 20.0,
                x0 - 22.0,
                y = sy(r)
            );
        }
        for t in [0.2, 0.3, 0.4, 0.5] {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{}\">{t:.1}</text>",
                sx(t) - 8.0,
                y0 + ph + 14.0
            );
        }
        if let Some(best) = rows
            .iter()
            .filter(|(l, b)| is_peer(l) && !l.starts_with("ours") && b.rounds_over == 0)
            .map(|(_, b)| b.cost(&pricing, sp) / base)
            .min_by(f64::total_cmp)
        {
            let _ = writeln!(
                svg,
                "<line x1=\"{x0}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"black\" stroke-dasharray=\"4 3\"/>",
                x0 + pw - 20.0,
                y = sy(best)
            );
        }
        let mut triggers: Vec<f64> = points.iter().map(|p| p.trigger).collect();
        triggers.dedup();
        for (c, trigger) in triggers.iter().enumerate() {
            let color = colors[c % colors.len()];
            let mut line = Vec::new();
            for p in points
                .iter()
                .filter(|p| p.trigger == *trigger && p.aging && p.epoch == first.epoch && p.keep == first.keep)
            {
                let Some(b) = rows.get(&p.label()) else { continue };
                let (x, y) = (sx(p.target), sy(b.cost(&pricing, sp) / base));
                if b.rounds_over > 0 {
                    let _ = writeln!(
                        svg,
                        "<text x=\"{}\" y=\"{}\" fill=\"{color}\">x</text>",
                        x - 3.0,
                        y + 4.0
                    );
                } else {
                    let _ = writeln!(svg, "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\" fill=\"{color}\"/>");
                    line.push(format!("{x:.1},{y:.1}"));
                }
            }
            if line.len() > 1 {
                let _ = writeln!(
                    svg,
                    "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\"/>",
                    line.join(" ")
                );
            }
            if w == 0 {
                let _ = writeln!(
                    svg,
                    "<text x=\"{}\" y=\"{}\" fill=\"{color}\">trigger {trigger:.2}</text>",
                    margin + 90.0 * c as f64,
                    y0 + ph + 40.0
                );
            }
        }
    }
    svg.push_str("</svg>\n");
    std::fs::write(path, svg)
}
