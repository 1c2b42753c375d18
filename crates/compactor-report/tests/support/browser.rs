//! The browser the tests drive (Debian's Chromium through Playwright, which
//! `scripts/browser.sh` installs) and what every report page must show in it. Shared by
//! the report's tests and the proxy inspector's (`#[path]`-included there).

use std::path::PathBuf;

use compactor_report::chart::{SeriesColors, hex};
use compactor_report::{PassKind, SessionReport};
use serde_json::Value;

/// The Python with Playwright and the system Chromium (`scripts/browser.sh` installs
/// both), or `None` after a notice. Under `CI=true` their absence fails the test.
pub fn browser() -> Option<(PathBuf, PathBuf)> {
    let venv = std::env::var_os("COMPACTOR_PY_BROWSER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py-browser"));
    let python = venv.join("bin/python");
    let chromium = std::env::var_os("COMPACTOR_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let missing = if !python.exists() {
        Some(format!("the Playwright venv is missing at {}", venv.display()))
    } else if !chromium.exists() {
        Some(format!("Chromium is missing at {}", chromium.display()))
    } else {
        None
    };
    if let Some(missing) = missing {
        let notice = format!("{missing} (run scripts/browser.sh)");
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{notice}");
        }
        eprintln!("SKIPPED: {notice}");
        return None;
    }
    Some((python, chromium))
}

/// The page checker every browser test runs.
pub fn page_check_script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../compactor-report/tests/browser/check_page.py"
    ))
}

/// Loads `url` in headless Chromium and returns what `check_page.py` observed (JSON).
pub fn check_page(url: &str) -> serde_json::Value {
    let (python, chromium) = browser().expect("checked by the caller");
    let output = std::process::Command::new(python)
        .arg(page_check_script())
        .arg(url)
        .env("COMPACTOR_CHROMIUM", chromium)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "check_page.py failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("check_page.py printed no JSON ({e}):\n{stdout}"))
}

pub fn mark(marks: &Value, tag: &str, fill: &str, stroke: &str) -> u64 {
    marks[format!("{tag}|{fill}|{stroke}")].as_u64().unwrap_or(0)
}

/// What every report page must show in the browser.
pub fn assert_page(seen: &Value, report: &SessionReport, url_prefix: &str) {
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
    // The cache-read share: a point per request that recorded its billed usage.
    let shares = report
        .requests
        .iter()
        .filter(|r| r.cache_read_share().is_some())
        .count() as u64;
    assert_eq!(
        mark(marks, "circle", &hex(SeriesColors::CACHE), "NONE"),
        shares,
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
        let summarizer = row["summarizer"].as_str().unwrap();
        assert!(summarizer.starts_with(&pass.summarizer_cell()), "{summarizer:?}");
        for attempt in &pass.attempts {
            assert!(
                summarizer.contains(attempt.as_str()),
                "{summarizer:?} lists {attempt:?}"
            );
        }
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
