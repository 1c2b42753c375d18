//! The pages, from askama templates (`templates/`): a session's report and a list of
//! sessions (the proxy's `/ui`).
//!
//! Askama rather than minijinja: the templates are fixed and ship inside the binary, so
//! compile-time checking is worth more than loading templates at run time; a template that
//! names a missing field does not build, and every `{{ }}` is HTML-escaped unless marked
//! `|safe` — which only the stylesheet (ours) and the chart (plotters' SVG, holding no
//! conversation text) are.

use askama::Template;

use crate::chart;
use crate::model::SessionReport;

/// The stylesheet every page inlines.
const CSS: &str = include_str!("../templates/report.css");
/// What wrote the page.
const GENERATOR: &str = concat!("compactor-report ", env!("CARGO_PKG_VERSION"));

#[derive(Template)]
#[template(path = "report.html")]
struct ReportPage<'a> {
    r: &'a SessionReport,
    chart: String,
    points_drawn: usize,
    css: &'static str,
    generator: &'static str,
    back_link: Option<&'a str>,
}

/// Thousands separated by a thin space, as the page shows counts.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 * 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

/// A count as the template passes it: by value or by reference.
trait Count {
    fn count(&self) -> u64;
}

impl Count for usize {
    fn count(&self) -> u64 {
        *self as u64
    }
}

impl Count for u64 {
    fn count(&self) -> u64 {
        *self
    }
}

impl<T: Count> Count for &T {
    fn count(&self) -> u64 {
        (**self).count()
    }
}

impl ReportPage<'_> {
    fn n(&self, n: impl Count) -> String {
        group(n.count())
    }

    fn n64(&self, n: impl Count) -> String {
        group(n.count())
    }

    fn f(&self, x: &f64) -> String {
        let sign = if *x < 0.0 { "−" } else { "" };
        format!("{sign}{}", group(x.abs().round() as u64))
    }

    fn pct(&self, share: &f64) -> String {
        format!("{:.1}%", share * 100.0)
    }

    fn share(&self, part: impl Count, whole: impl Count) -> String {
        let (part, whole) = (part.count(), whole.count());
        if whole == 0 {
            "—".to_owned()
        } else {
            format!("{:.1}%", part as f64 * 100.0 / whole as f64)
        }
    }
}

/// The report as one self-contained HTML page. `back_link` adds a link back to a list of
/// sessions (the proxy's inspector).
pub fn render_with(report: &SessionReport, back_link: Option<&str>) -> String {
    let page = ReportPage {
        r: report,
        chart: chart::svg(report),
        points_drawn: if report.requests.len() <= chart::MAX_POINTS {
            report.requests.len()
        } else {
            0
        },
        css: CSS,
        generator: GENERATOR,
        back_link,
    };
    page.render().unwrap_or_else(|e| failure_page(&e.to_string()))
}

fn failure_page(problem: &str) -> String {
    let escaped = problem.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    format!(
        "<!DOCTYPE html><meta charset=\"utf-8\"><title>report</title><p>The report could not be rendered: {escaped}</p>"
    )
}

/// One line of a list of sessions, already formatted (its texts are escaped when the page
/// is rendered).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionRow {
    /// The session key.
    pub key: String,
    /// Where the report is (a relative URL).
    pub href: String,
    /// How the session was identified (`named by header`, `derived from the request`).
    pub identity: String,
    /// Requests seen.
    pub requests: String,
    /// Compaction passes.
    pub compactions: String,
    /// Tokens compaction kept out of the requests.
    pub tokens_saved: String,
    /// Estimated cost saved.
    pub cost_saved: String,
    /// The last line's timestamp.
    pub last_seen: String,
    /// Why the session's numbers could not be read (its other cells are then empty).
    pub problem: Option<String>,
}

impl SessionRow {
    /// The numbers of a built report.
    pub fn from_report(report: &SessionReport) -> SessionRow {
        let t = &report.totals;
        SessionRow {
            requests: group(t.requests as u64),
            compactions: group((t.compactions + t.hard_trims + t.elision_epochs) as u64),
            tokens_saved: group(t.tokens_saved()),
            cost_saved: if t.cost_saved < 0.0 {
                format!("−{}", group(t.cost_saved.abs().round() as u64))
            } else {
                group(t.cost_saved.round() as u64)
            },
            ..SessionRow::default()
        }
    }
}

#[derive(Template)]
#[template(path = "index.html")]
struct IndexPage<'a> {
    heading: &'a str,
    rows: &'a [SessionRow],
    omitted: usize,
    pricing: &'a str,
    css: &'static str,
    generator: &'static str,
}

/// A page that lists `rows` (`omitted` more were not listed).
pub fn render_index(heading: &str, rows: &[SessionRow], omitted: usize, pricing: &str) -> String {
    IndexPage {
        heading,
        rows,
        omitted,
        pricing,
        css: CSS,
        generator: GENERATOR,
    }
    .render()
    .unwrap_or_else(|e| failure_page(&e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_234_567), "1\u{2009}234\u{2009}567");
    }
}
