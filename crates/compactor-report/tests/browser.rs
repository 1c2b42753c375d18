//! The report in a real browser: headless Chromium (Debian's) driven by Playwright
//! (`scripts/browser.sh` installs both; without them these tests skip with a notice, and
//! fail under `CI=true`). Each test writes a report to a file, opens its `file://` URL,
//! and asserts what `tests/browser/check_page.py` saw: the chart drawn (a point per
//! request, a marker per pass, by colour), the pass table equal to the transcript's
//! passes, a folded text that opens on a click, no request leaving the page, no console
//! error, no dialog (no injected script ran). Load times are printed, never asserted.

mod support;

use compactor_report::chart::{SeriesColors, hex};
use compactor_report::{PassKind, ReportOptions, SessionReport, render, report_of_file};
use serde_json::Value;

fn mark(marks: &Value, tag: &str, fill: &str, stroke: &str) -> u64 {
    marks[format!("{tag}|{fill}|{stroke}")].as_u64().unwrap_or(0)
}

/// What every report page must show in the browser.
fn assert_page(seen: &Value, report: &SessionReport, url_prefix: &str) {
    assert_eq!(seen["status"].as_u64().unwrap_or(200), 200, "{seen}");
    let requests: Vec<&str> = seen["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(
        requests.iter().all(|r| r.starts_with(url_prefix)),
        "only the page itself is loaded: {requests:?}"
    );
    assert_eq!(requests.len(), 1, "one request, the page: {requests:?}");
    assert_eq!(seen["console_errors"], Value::Array(vec![]), "no console error");
    assert_eq!(seen["dialogs"], Value::Array(vec![]), "no script ran");
    // The chart: one point per request, one marker per pass of each kind.
    assert!(seen["svg_visible"].as_bool().unwrap());
    let marks = &seen["marks"];
    let request = hex(SeriesColors::REQUEST);
    assert_eq!(
        seen["chart_requests"].as_str().unwrap(),
        report.requests.len().to_string()
    );
    assert!(report.requests.len() <= compactor_report::chart::MAX_POINTS);
    assert_eq!(
        mark(marks, "circle", &request, "NONE"),
        report.requests.len() as u64,
        "a point per request: {marks}"
    );
    let count = |kind| report.passes.iter().filter(|p| p.kind == kind).count() as u64;
    assert_eq!(
        mark(marks, "polygon", &hex(SeriesColors::COMPACTION), ""),
        count(PassKind::Compaction),
        "{marks}"
    );
    assert_eq!(
        mark(marks, "polygon", &hex(SeriesColors::HARD_TRIM), ""),
        count(PassKind::HardTrim),
        "{marks}"
    );
    assert_eq!(
        mark(marks, "circle", "NONE", &hex(SeriesColors::ELISION)),
        count(PassKind::Elision),
        "{marks}"
    );
    // The pass table, row by row.
    let rows = seen["passes"].as_array().unwrap();
    assert_eq!(rows.len(), report.passes.len());
    for (row, pass) in rows.iter().zip(&report.passes) {
        assert_eq!(row["line"].as_u64().unwrap() as usize, pass.line);
        assert_eq!(row["kind"].as_str().unwrap(), pass.kind.label());
        assert_eq!(row["tokens_before"].as_u64().unwrap() as usize, pass.tokens_before);
        assert_eq!(row["tokens_after"].as_u64().unwrap() as usize, pass.tokens_after);
        assert_eq!(row["replaced"].as_u64().unwrap() as usize, pass.messages_replaced);
        assert_eq!(row["elisions"].as_u64().unwrap() as usize, pass.elisions);
        assert_eq!(row["repairs"].as_u64().unwrap() as usize, pass.repairs);
        assert_eq!(row["flags"].as_str().unwrap().contains("fallback"), pass.fallback);
    }
    assert_eq!(seen["pass_sections"].as_u64().unwrap() as usize, report.passes.len());
    // Folding: a closed text is hidden until its summary is clicked.
    let fold = &seen["fold"];
    if !report.passes.is_empty() {
        assert_eq!(fold["tried"], Value::Bool(true), "{fold}");
        assert_eq!(fold["before"]["open"], Value::Bool(false), "{fold}");
        assert_eq!(fold["before"]["visible"], Value::Bool(false), "{fold}");
        assert_eq!(fold["outer_opened"]["open"], Value::Bool(true), "{fold}");
        assert_eq!(fold["outer_opened"]["visible"], Value::Bool(false), "{fold}");
        assert_eq!(fold["after"]["open"], Value::Bool(true), "{fold}");
        assert_eq!(fold["after"]["visible"], Value::Bool(true), "{fold}");
    }
}

fn load_time(seen: &Value) -> String {
    format!(
        "load event at {:.0} ms (wall {:.0} ms), {} KB",
        seen["navigation"]["load"].as_f64().unwrap_or(f64::NAN),
        seen["wall_ms"].as_f64().unwrap_or(f64::NAN),
        seen["html_bytes"].as_u64().unwrap_or(0) / 1024
    )
}

fn write(report: &SessionReport, dir: &std::path::Path) -> String {
    let path = dir.join("report.html");
    std::fs::write(&path, render(report)).unwrap();
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
