//! The chart: tokens per request as inline SVG drawn by plotters.
//!
//! One panel of tokens per request (what was sent, and in grey what would have been sent
//! without compaction), the budget, trigger and target lines, and a marker at every pass
//! placed between the requests it came between, at the tokens it started from:
//! compactions as filled triangles, hard trims as red triangles, elision epochs as hollow
//! circles, repairs as crosses. When any request recorded its billed usage a second panel
//! shows the share of its prompt read from the provider's cache.
//!
//! Each series has its own colour ([`COLORS`]): the page's legend and the browser tests
//! find the marks by it. No text from the conversation goes into the SVG (plotters
//! escapes its own labels), so it is the one fragment the page includes unescaped.

use plotters::prelude::*;

use crate::model::{PassKind, SessionReport};

/// The colour of each series, as plotters writes it (`#RRGGBB`).
pub struct SeriesColors;

/// The colours of the chart's series.
pub const COLORS: SeriesColors = SeriesColors;

impl SeriesColors {
    /// A request's point and the tokens line.
    pub const REQUEST: RGBColor = RGBColor(31, 119, 180);
    /// The uncompacted line.
    pub const UNCOMPACTED: RGBColor = RGBColor(170, 170, 170);
    /// The budget line.
    pub const BUDGET: RGBColor = RGBColor(0, 0, 0);
    /// The trigger line.
    pub const TRIGGER: RGBColor = RGBColor(214, 39, 40);
    /// The target line.
    pub const TARGET: RGBColor = RGBColor(44, 160, 44);
    /// A compaction marker.
    pub const COMPACTION: RGBColor = RGBColor(148, 103, 189);
    /// A hard-trim marker.
    pub const HARD_TRIM: RGBColor = RGBColor(200, 0, 0);
    /// An elision-epoch marker.
    pub const ELISION: RGBColor = RGBColor(255, 127, 14);
    /// A repair marker.
    pub const REPAIR: RGBColor = RGBColor(140, 86, 75);
    /// A cache-read share point.
    pub const CACHE: RGBColor = RGBColor(23, 190, 207);
}

/// `#RRGGBB` of a colour, as plotters writes it.
pub fn hex(color: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2)
}

/// Above this many requests the points are not drawn one by one (the line still is).
pub const MAX_POINTS: usize = 10_000;

const WIDTH: u32 = 1000;
const TOKENS_HEIGHT: u32 = 380;
const CACHE_HEIGHT: u32 = 150;

/// The chart of `report` as an SVG document (no XML declaration).
pub fn svg(report: &SessionReport) -> String {
    let mut out = String::new();
    if let Err(error) = draw(report, &mut out) {
        // Drawing into a string cannot fail for I/O; say so rather than show half a chart.
        return format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"40\"><text x=\"10\" y=\"25\">the chart could not be drawn: {}</text></svg>",
            escape_text(&error.to_string())
        );
    }
    out
}

fn escape_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn draw(report: &SessionReport, out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let with_cache = report.requests.iter().any(|r| r.cache_read_share().is_some());
    let height = TOKENS_HEIGHT + if with_cache { CACHE_HEIGHT } else { 0 };
    let root = SVGBackend::with_string(out, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(TOKENS_HEIGHT);
    let n = report.requests.len().max(1) as f64;
    let limits = report.limits;
    let peak = report
        .requests
        .iter()
        .map(|r| r.tokens.max(r.uncompacted))
        .chain(report.passes.iter().map(|p| p.tokens_before))
        .chain(limits.budget)
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.08;
    let x_range = 0.5f64..n + 0.5;
    let mut chart = ChartBuilder::on(&top)
        .caption("tokens per request", ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(32)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range.clone(), 0f64..peak)?;
    chart
        .configure_mesh()
        .x_desc("request")
        .y_desc("tokens")
        .disable_x_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()?;
    for (value, color, label) in [
        (limits.budget, SeriesColors::BUDGET, "budget"),
        (limits.trigger, SeriesColors::TRIGGER, "trigger"),
        (limits.target, SeriesColors::TARGET, "target"),
    ] {
        if let Some(value) = value {
            chart
                .draw_series(LineSeries::new(
                    [(x_range.start, value as f64), (x_range.end, value as f64)],
                    color.mix(0.7).stroke_width(1),
                ))?
                .label(label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(1)));
        }
    }
    let point = |k: usize, tokens: usize| ((k + 1) as f64, tokens as f64);
    chart
        .draw_series(LineSeries::new(
            report.requests.iter().enumerate().map(|(k, r)| point(k, r.uncompacted)),
            SeriesColors::UNCOMPACTED.stroke_width(1),
        ))?
        .label("without compaction")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], SeriesColors::UNCOMPACTED.stroke_width(1)));
    chart
        .draw_series(LineSeries::new(
            report.requests.iter().enumerate().map(|(k, r)| point(k, r.tokens)),
            SeriesColors::REQUEST.stroke_width(2),
        ))?
        .label("sent")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], SeriesColors::REQUEST.stroke_width(2)));
    if report.requests.len() <= MAX_POINTS {
        chart.draw_series(
            report
                .requests
                .iter()
                .enumerate()
                .map(|(k, r)| Circle::new(point(k, r.tokens), 2, SeriesColors::REQUEST.filled())),
        )?;
    }
    for pass in &report.passes {
        let at = (pass.after_requests as f64 + 0.5, pass.tokens_before as f64);
        match pass.kind {
            PassKind::Compaction => {
                chart.draw_series([TriangleMarker::new(at, 7, SeriesColors::COMPACTION.filled())])?;
            }
            PassKind::HardTrim => {
                chart.draw_series([TriangleMarker::new(at, 7, SeriesColors::HARD_TRIM.filled())])?;
            }
            PassKind::Elision => {
                chart.draw_series([Circle::new(at, 5, SeriesColors::ELISION.stroke_width(2))])?;
            }
            PassKind::Repair => {
                chart.draw_series([Cross::new(at, 5, SeriesColors::REPAIR.stroke_width(2))])?;
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    if with_cache {
        let mut cache = ChartBuilder::on(&bottom)
            .caption("share of the billed prompt read from the cache", ("sans-serif", 14))
            .margin(10)
            .x_label_area_size(28)
            .y_label_area_size(64)
            .build_cartesian_2d(x_range, 0f64..1.0)?;
        cache
            .configure_mesh()
            .disable_x_mesh()
            .y_labels(3)
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{:.0}%", y * 100.0))
            .draw()?;
        cache.draw_series(report.requests.iter().enumerate().filter_map(|(k, r)| {
            r.cache_read_share()
                .map(|share| Circle::new(((k + 1) as f64, share), 2, SeriesColors::CACHE.filled()))
        }))?;
    }
    root.present()?;
    Ok(())
}
