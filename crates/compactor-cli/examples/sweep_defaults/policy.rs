//! `policy.md`: the default and economy policies against every peer (issue 33), with
//! what each strategy drops of the context, and the goals checked.
//!
//! "Dropped" is the share of the context `none` would have sent that the strategy did
//! not send, summed over every request of every trajectory (1 - its request tokens /
//! `none`'s): what it elided or summarized away, net of the summaries it added.

use super::*;

/// Runs where `none` never passes the default trigger: how `ours` bills on them.
#[derive(Default)]
pub(crate) struct Quiet {
    runs: usize,
    /// Per setting: the worst `ours` / `none` and its trajectory.
    worst: [(f64, String); 4],
    /// Per setting: runs where `ours` billed over `none` x 1.001.
    over: [usize; 4],
}

impl Quiet {
    pub(crate) fn add(&mut self, name: &str, per: &BTreeMap<String, Bill>) {
        self.runs += 1;
        let (Some(none), Some(ours)) = (per.get("none"), per.get("ours")) else {
            return;
        };
        for (i, (pricing, sp)) in SETTINGS.iter().enumerate() {
            let ratio = ours.cost(pricing, *sp) / none.cost(pricing, *sp).max(1e-9);
            if ratio > self.worst[i].0 {
                self.worst[i] = (ratio, name.to_owned());
            }
            if ratio > 1.001 {
                self.over[i] += 1;
            }
        }
    }
}

fn setting_name(pricing: &Pricing, sp: f64) -> String {
    format!("{} / {sp}", pricing.name)
}

fn window_k(window: usize) -> String {
    format!("{}k", window / 1000)
}

/// The cheapest strategy among `rows` that passes `keep` and stays inside the window.
fn cheapest<'a>(
    rows: &'a BTreeMap<String, Bill>,
    pricing: &Pricing,
    sp: f64,
    keep: impl Fn(&str) -> bool,
) -> Option<(&'a str, f64)> {
    rows.iter()
        .filter(|(label, b)| b.rounds_over == 0 && keep(label))
        .map(|(label, b)| (label.as_str(), b.cost(pricing, sp)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn keeps(label: &str) -> bool {
    label
        .parse::<StrategyKind>()
        .is_ok_and(StrategyKind::keeps_context_below_trigger)
}

pub(crate) fn policy_report(
    results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>,
    quiet: &BTreeMap<(String, usize), Quiet>,
    peers: &[StrategyKind],
) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "### The goals, setting by setting (cost / `none`; a strategy over the window is not a price)\n"
    );
    let _ = writeln!(
        md,
        "| family | window | pricing / summarizer | default (`ours`) | economy | cheapest that keeps context, inside | cheapest of all, inside | default's goal | economy's goal |"
    );
    let _ = writeln!(md, "|---|---:|---|---:|---:|---|---|---|---|");
    for ((family, window), rows) in results {
        let Some(none) = rows.get("none") else { continue };
        for (pricing, sp) in SETTINGS {
            let base = none.cost(&pricing, sp).max(1e-9);
            let ratio = |label: &str| rows.get(label).map(|b| b.cost(&pricing, sp) / base);
            let inside = |label: &str| rows.get(label).is_some_and(|b| b.rounds_over == 0);
            let keep = cheapest(rows, &pricing, sp, |l| keeps(l) && l != "ours");
            let all = cheapest(rows, &pricing, sp, |l| l != "ours-economy");
            let show = |c: Option<(&str, f64)>| match c {
                Some((label, cost)) => format!("{label} {:.3}", cost / base),
                None => "none inside".into(),
            };
            let default_goal = match (ratio("ours"), inside("ours")) {
                (Some(_), false) => "**over the window**".to_owned(),
                (Some(r), true) => match keep {
                    Some((_, c)) if r > 1.01 * c / base => format!("**no**: {:+.1}%", (r * base / c - 1.0) * 100.0),
                    Some((_, c)) => format!("yes ({:+.1}%)", (r * base / c - 1.0) * 100.0),
                    None => "yes (the only one inside)".into(),
                },
                _ => "-".into(),
            };
            let economy_goal = match (ratio("ours-economy"), inside("ours-economy")) {
                (Some(_), false) => "**over the window**".to_owned(),
                (Some(r), true) => {
                    let against = all.map(|(_, c)| c / base).unwrap_or(f64::INFINITY);
                    let gap = (r / against - 1.0) * 100.0;
                    let need_cheapest = *window <= 32_000;
                    if (need_cheapest && gap > 0.0) || gap > 1.0 {
                        format!("**no**: {gap:+.1}%")
                    } else {
                        format!("yes ({gap:+.1}%)")
                    }
                }
                _ => "-".into(),
            };
            let _ = writeln!(
                md,
                "| {family} | {} | {} | {} | {} | {} | {} | {default_goal} | {economy_goal} |",
                window_k(*window),
                setting_name(&pricing, sp),
                ratio("ours").map_or("-".into(), |r| format!("{r:.3}")),
                ratio("ours-economy").map_or("-".into(), |r| format!("{r:.3}")),
                show(keep),
                show(all),
            );
        }
    }
    let _ = writeln!(
        md,
        "\n\"Keeps context\": `none`, `clear-tool-uses`, `clear-tool-uses-scaled`, \
         `summarize-at-threshold` (Codex-like), `claude-code-like`, `ours-no-aging`, `ours-inline`. \
         The default (`ours`) prepares its passes and, at summarizer price 1 (the agent's own model), \
         sends the cache-reading summary request; at 0.1 (another model) a plain one. The default's \
         goal: inside the window and within 1% of the cheapest of those inside. Economy's goal: \
         within 1% of the cheapest of all strategies inside the window, and the cheapest at 32k.\n"
    );

    let _ = writeln!(
        md,
        "### Where no request comes within the default trigger: `ours` / `none`, run by run\n"
    );
    let _ = writeln!(
        md,
        "| family | window | runs | worst anthropic / 1 | worst anthropic / 0.1 | worst openai-gpt5 / 1 | worst openai-gpt5 / 0.1 | runs over none x 1.001 |"
    );
    let _ = writeln!(md, "|---|---:|---:|---|---|---|---|---:|");
    for ((family, window), q) in quiet {
        let cell = |i: usize| {
            let (r, name) = &q.worst[i];
            if *r == 0.0 {
                "-".to_owned()
            } else {
                format!("{r:.4} ({})", name.trim_end_matches(".traj.json"))
            }
        };
        let _ = writeln!(
            md,
            "| {family} | {} | {} | {} | {} | {} | {} | {} |",
            window_k(*window),
            q.runs,
            cell(0),
            cell(1),
            cell(2),
            cell(3),
            q.over.iter().max().copied().unwrap_or(0)
        );
    }
    let _ = writeln!(md);

    for ((family, window), rows) in results {
        let Some(none) = rows.get("none") else { continue };
        let _ = writeln!(md, "#### {family}, window {}\n", window_k(*window));
        let _ = writeln!(
            md,
            "| strategy | status | anthropic / 1 | anthropic / 0.1 | openai-gpt5 / 1 | openai-gpt5 / 0.1 | dropped | compactions | epochs | peak |"
        );
        let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
        for kind in peers {
            let Some(b) = rows.get(kind.name()) else { continue };
            let status = if b.rounds_over == 0 {
                "ok".to_owned()
            } else {
                format!("FAILED ({} over)", b.rounds_over)
            };
            let mut cells = String::new();
            for (pricing, sp) in SETTINGS {
                let _ = write!(
                    cells,
                    " {:.3} |",
                    b.cost(&pricing, sp) / none.cost(&pricing, sp).max(1e-9)
                );
            }
            let dropped = 1.0 - b.context as f64 / (none.context.max(1)) as f64;
            let name = match kind {
                StrategyKind::Ours => "**ours (default)**".to_owned(),
                StrategyKind::OursEconomy => "**ours-economy**".to_owned(),
                other => other.name().to_owned(),
            };
            let _ = writeln!(
                md,
                "| {name} | {status} |{cells} {:.1}% | {} | {} | {} |",
                dropped * 100.0,
                b.compactions,
                b.epochs,
                b.peak
            );
        }
        let _ = writeln!(md);
    }
    md
}
