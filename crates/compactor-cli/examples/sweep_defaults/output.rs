//! What the sweep writes: `sweep.csv` (every row), `sweep.md` (the decision tables) and
//! the SVG plot of the grid's cost against the target ratio.

use super::*;

pub(crate) fn write_csv(
    path: &Path,
    results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>,
) -> std::io::Result<()> {
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
pub(crate) fn report(
    results: &BTreeMap<(String, usize), BTreeMap<String, Bill>>,
    points: &[Point],
    exact: &[String],
) -> String {
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
pub(crate) fn write_svg(
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
