//! The report in a real browser: headless Chromium (Debian's) driven by Playwright
//! (`scripts/browser.sh` installs both; without them these tests skip with a notice, and
//! fail under `CI=true`). Each test writes a report to a file, opens its `file://` URL,
//! and asserts what `tests/browser/check_page.py` saw: the chart drawn (a point per
//! request, a marker per pass, by colour), the pass table equal to the transcript's
//! passes, a folded text that opens on a click, no request leaving the page, no console
//! error, no dialog (no injected script ran). Load times are printed, never asserted.

use crate::support;

use compactor_report::chart::{SeriesColors, hex};
use compactor_report::{PassKind, ReportOptions, SessionReport, render, report_of_file};
use serde_json::Value;
use support::{assert_page, mark};

fn load_time(seen: &Value) -> String {
    format!(
        "load event at {:.0} ms (wall {:.0} ms), {} KB",
        seen["navigation"]["load"].as_f64().unwrap_or(f64::NAN),
        seen["wall_ms"].as_f64().unwrap_or(f64::NAN),
        seen["html_bytes"].as_u64().unwrap_or(0) / 1024
    )
}

/// Writes the page into `dir` (and, to look at it, into `$COMPACTOR_REPORT_KEEP` too).
fn write(report: &SessionReport, dir: &std::path::Path) -> String {
    let path = dir.join("report.html");
    std::fs::write(&path, render(report)).unwrap();
    if let Some(keep) = std::env::var_os("COMPACTOR_REPORT_KEEP") {
        let name = format!("{}-{}.html", report.requests.len(), report.passes.len());
        std::fs::copy(&path, std::path::Path::new(&keep).join(name)).unwrap();
    }
    format!("file://{}", path.display())
}

#[tokio::test]
async fn the_report_of_the_largest_real_run_in_a_browser() {
    if support::browser().is_none() {
        return;
    }
    let Some(trajectories) = support::trajectories() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = support::play_trajectory(&trajectories[0], 24_000, dir.path()).await;
    let report = report_of_file(
        &path,
        &ReportOptions::default().limits_of(support::compactor(24_000).config()),
    )
    .unwrap();
    assert!(report.passes.len() >= 2, "{:?}", report.totals);
    let summarized = report.passes.iter().find(|p| p.kind == PassKind::Compaction);
    assert_eq!(
        summarized.and_then(|p| p.summarizer.as_deref()),
        Some("ledger"),
        "a summary names its summarizer"
    );
    let url = write(&report, dir.path());
    let seen = support::check_page(&url);
    assert_page(&seen, &report, "file://");
    // The limit lines are drawn when the budget is known.
    assert!(
        mark(&seen["marks"], "polyline", "NONE", &hex(SeriesColors::TRIGGER)) >= 1,
        "{}",
        seen["marks"]
    );
    eprintln!(
        "largest real run ({}): {} requests, {} passes; {}",
        trajectories[0].file_name().unwrap().to_string_lossy(),
        report.requests.len(),
        report.passes.len(),
        load_time(&seen)
    );
}

#[tokio::test]
async fn hostile_markup_in_a_session_runs_nothing_in_a_browser() {
    if support::browser().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hostile = "</script><img src=x onerror=alert(1)><script>alert(2)</script>";
    let mut messages = vec![
        llm_compactor::Message::system("agent"),
        llm_compactor::Message::user(format!("go {hostile}")),
    ];
    for k in 0..20 {
        let id = format!("c{k}");
        messages.push(
            llm_compactor::Message::assistant(hostile).with_tool_calls(vec![llm_compactor::ToolCall::new(
                id.clone(),
                "bash",
                "{}",
            )]),
        );
        messages.push(llm_compactor::Message::tool(
            id,
            format!("{hostile}{}", "x".repeat(800)),
        ));
    }
    let path = support::play(messages, support::compactor(2_000), dir.path()).await;
    let report = report_of_file(&path, &ReportOptions::default().title(hostile)).unwrap();
    assert!(!report.passes.is_empty());
    let seen = support::check_page(&write(&report, dir.path()));
    assert_page(&seen, &report, "file://");
    assert!(
        seen["title"].as_str().unwrap().contains("<img src=x"),
        "the title is text"
    );
}

#[tokio::test]
async fn a_ten_thousand_message_session_opens_in_a_browser() {
    if support::browser().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut messages = vec![
        llm_compactor::Message::system("agent"),
        llm_compactor::Message::user("Refactor."),
    ];
    for k in 0..4_999 {
        let id = format!("c{k}");
        messages.push(
            llm_compactor::Message::assistant("").with_tool_calls(vec![llm_compactor::ToolCall::new(
                id.clone(),
                "bash",
                format!("{{\"command\": \"cat f{k}.rs\"}}"),
            )]),
        );
        messages.push(llm_compactor::Message::tool(id, "fn f() {}\n".repeat(40)));
    }
    let path = support::play(messages, support::compactor(20_000), dir.path()).await;
    let report = report_of_file(&path, &ReportOptions::default()).unwrap();
    let seen = support::check_page(&write(&report, dir.path()));
    assert_page(&seen, &report, "file://");
    eprintln!(
        "10,000 messages: {} requests, {} passes; {}",
        report.requests.len(),
        report.passes.len(),
        load_time(&seen)
    );
}
