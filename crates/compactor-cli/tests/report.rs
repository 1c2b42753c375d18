//! `compactor report` and `compactor proxy report`: the page of a compacted session is
//! written where `-o` says and says so; a file or a session that is not there, or not a
//! transcript, is an error naming it.

use crate::support;

use support::{run, stderr};

/// The example session imported and compacted once, as `scripts/first-run.sh` does.
fn compacted_session(dir: &std::path::Path) -> String {
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/sessions/long-agent-session.json"
    );
    let session = dir.join("run.jsonl").display().to_string();
    let out = run(&["session", "import", example, "-o", &session], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(
        &[
            "session",
            "compact",
            &session,
            "--budget",
            "16000",
            "--age-observations",
            "--summarizer",
            "ledger",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    session
}

#[test]
fn the_report_of_a_compacted_session_is_written_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let session = compacted_session(dir.path());
    let page = dir.path().join("report.html");
    let out = run(
        &["report", &session, "-o", page.to_str().unwrap(), "--budget", "16000"],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(page.to_str().unwrap()), "{}", stderr(&out));
    // One pass is "1 pass" (it said "1 passes").
    assert!(stderr(&out).contains(" and 1 pass written"), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("class=\"pass-row compaction\""));
    assert!(html.contains("trigger 11\u{2009}200"), "the limit lines of --budget");
    assert!(html.contains("run.jsonl"), "titled by the file");
}

#[test]
fn a_report_of_what_is_not_a_transcript_names_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = run(&["report", missing.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("missing.jsonl"), "{}", stderr(&out));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"v\": 1}\n").unwrap();
    let out = run(&["report", bad.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("bad.jsonl:1"), "{}", stderr(&out));
    let out = run(&["report", bad.to_str().unwrap(), "--pricing", "free"], None);
    assert_eq!(out.status.code(), Some(2), "a bad flag is a usage error");
}

#[test]
fn proxy_report_reads_the_session_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let session = compacted_session(dir.path());
    let store = format!("sqlite:{}", dir.path().join("s.db").display());
    let out = run(
        &["session", "import", &session, "--store", &store, "--session", "agent-7"],
        None,
    );
    if !out.status.success() && stderr(&out).contains("sqlite") && stderr(&out).contains("support") {
        eprintln!(
            "SKIPPED: this build's `session import --store` has no SQLite: {}",
            stderr(&out)
        );
        return;
    }
    assert!(out.status.success(), "{}", stderr(&out));
    let page = dir.path().join("agent-7.html");
    let out = run(
        &[
            "proxy",
            "report",
            "agent-7",
            "--store",
            &store,
            "-o",
            page.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("class=\"pass-row compaction\"") && html.contains("agent-7"));
    let out = run(&["proxy", "report", "nobody", "--store", &store], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("\"nobody\""), "{}", stderr(&out));
}

/// `compactor proxy --ui` as a child process: it says where the inspector is, and `/ui`
/// answers; without the flag `/ui` is 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_serves_the_inspector_only_with_ui() {
    use std::io::{BufRead, BufReader};
    for ui in [true, false] {
        let mut command = support::bin();
        command.args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "http://127.0.0.1:9",
            "--store",
            "memory:",
            "--summarizer",
            "none",
        ]);
        if ui {
            command.arg("--ui");
        }
        let mut child = command
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let proxy = line
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        if ui {
            let mut said = String::new();
            stderr.read_line(&mut said).unwrap();
            assert!(said.contains(&format!("{proxy}/ui")), "{said}");
        }
        std::thread::spawn(move || for _ in stderr.lines() {});
        let response = reqwest::Client::new().get(format!("{proxy}/ui")).send().await.unwrap();
        let status = response.status().as_u16();
        let body = response.text().await.unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        if ui {
            assert_eq!(status, 200);
            assert!(body.contains("No session recorded yet"), "{body}");
        } else {
            assert_eq!(status, 404);
        }
    }
}
