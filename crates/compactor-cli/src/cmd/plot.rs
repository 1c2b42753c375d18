//! `--plot`: an SVG of one trajectory's replay under each strategy.
//!
//! Two panels: context tokens per request (with the window drawn, so a run over it is
//! visible, and markers at compactions (filled) and elision epochs (hollow)), and the
//! cumulative cost, so the price of each cache break shows as a change of slope.

use std::path::Path;

use llm_compactor::simulate::TrajectoryReport;
use plotters::prelude::*;

use crate::error::CliError;

const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 0, 0),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Writes the plot of `reports` (one per strategy, same trajectory) to `path`.
pub fn write_svg(
    path: &Path,
    name: &str,
    window: usize,
    pricing: &str,
    reports: &[TrajectoryReport],
) -> Result<(), CliError> {
    draw(path, name, window, pricing, reports).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))
}

fn draw(
    path: &Path,
    name: &str,
    window: usize,
    pricing: &str,
    reports: &[TrajectoryReport],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1100, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(450);
    let requests = reports.iter().map(|r| r.requests.len()).max().unwrap_or(0).max(1);
    let peak = reports
        .iter()
        .flat_map(|r| r.requests.iter().map(|q| q.input_tokens))
        .max()
        .unwrap_or(0)
        .max(window as u64) as f64
        * 1.05;
    let title = name.rsplit('/').next().unwrap_or(name);

    let mut context = ChartBuilder::on(&top)
        .caption(
            format!("context tokens per request: {title} (window {window})"),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0usize..requests, 0f64..peak)?;
    context
        .configure_mesh()
        .x_desc("request")
        .y_desc("input tokens")
        .disable_x_mesh()
        .draw()?;
    context
        .draw_series(LineSeries::new(
            [(0, window as f64), (requests, window as f64)],
            BLACK.mix(0.4),
        ))?
        .label("window")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.4)));
    for (i, report) in reports.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<(usize, f64)> = report
            .requests
            .iter()
            .enumerate()
            .map(|(k, q)| (k, q.input_tokens as f64))
            .collect();
        context
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(report.totals.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        context.draw_series(
            report
                .requests
                .iter()
                .enumerate()
                .filter(|(_, q)| q.compaction)
                .map(|(k, q)| Circle::new((k, q.input_tokens as f64), 4, color.filled())),
        )?;
        context.draw_series(
            report
                .requests
                .iter()
                .enumerate()
                .filter(|(_, q)| q.elision)
                .map(|(k, q)| Circle::new((k, q.input_tokens as f64), 4, color.stroke_width(1))),
        )?;
    }
    context
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;

    let max_cost = reports
        .iter()
        .map(|r| r.requests.iter().map(|q| q.cost).sum::<f64>())
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.05;
    let mut cost = ChartBuilder::on(&bottom)
        .caption(
            format!("cumulative cost ({pricing}, base-input-token units)"),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0usize..requests, 0f64..max_cost)?;
    cost.configure_mesh()
        .x_desc("request")
        .y_desc("cost")
        .disable_x_mesh()
        .draw()?;
    for (i, report) in reports.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut running = 0.0;
        let points: Vec<(usize, f64)> = report
            .requests
            .iter()
            .enumerate()
            .map(|(k, q)| {
                running += q.cost;
                (k, running)
            })
            .collect();
        cost.draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(report.totals.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    cost.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}
