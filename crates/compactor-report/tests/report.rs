//! The report of real and hostile sessions, without a browser: what it says matches the
//! transcript, everything from the conversation is escaped, and a 10,000-message session
//! stays within the page's caps.

use crate::support;

use compactor_report::{PassKind, ReportOptions, SessionReport, render, report_of_file};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::session::{Record, Transcript};

/// Every pass the report shows is the transcript's, with the transcript's numbers.
fn assert_matches_transcript(report: &SessionReport, path: &std::path::Path) {
    let transcript = Transcript::read(path).unwrap();
    let compactions: Vec<_> = transcript
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            Record::Compaction(c) => Some((e.line, c)),
            _ => None,
        })
        .collect();
    let summarized: Vec<_> = report
        .passes
        .iter()
        .filter(|p| matches!(p.kind, PassKind::Compaction | PassKind::HardTrim))
        .collect();
    assert_eq!(summarized.len(), compactions.len(), "one pass per compaction line");
    for (pass, (line, record)) in summarized.iter().zip(&compactions) {
        assert!(pass.line <= *line, "the pass starts at or before its compaction line");
        assert_eq!(pass.tokens_before, record.tokens_before);
        assert_eq!(pass.tokens_after, record.tokens_after);
        assert_eq!(pass.messages_replaced, record.dropped);
        assert_eq!(pass.fallback, record.fallback);
        assert_eq!(pass.receipt, record.receipt);
    }
    let stubbed: usize = transcript
        .entries()
        .iter()
        .map(|e| match &e.record {
            Record::Elision(el) => el.items.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(report.passes.iter().map(|p| p.elisions).sum::<usize>(), stubbed);
    let assistants = transcript
        .entries()
        .iter()
        .filter(|e| matches!(&e.record, Record::Message(m) if m.role == llm_compactor::Role::Assistant))
        .count();
    assert!(
        report.requests.len() == assistants || report.requests.len() == assistants + 1,
        "a request per assistant turn (and the pending one): {} vs {assistants}",
        report.requests.len()
    );
    assert_eq!(report.messages_now, transcript.messages().len());
}

#[tokio::test]
async fn the_report_of_a_real_run_matches_its_transcript() {
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
    assert!(
        report.totals.compactions >= 2,
        "a long run under a small budget compacts more than once: {:?}",
        report.totals
    );
    assert_matches_transcript(&report, &path);
    // Compaction kept the run inside the budget, and the report shows what it saved.
    assert!(report.requests.iter().all(|r| r.tokens <= 24_000));
    assert!(report.totals.tokens_saved() > 0 && report.totals.cost_saved > 0.0);
    // The trajectory recorded its billed usage: the cache-read share is drawn.
    assert!(report.totals.requests_with_usage > 0);
    let html = render(&report);
    assert_eq!(html.matches("<tr class=\"pass-row").count(), report.passes.len());
    assert_eq!(html.matches("<section class=\"pass ").count(), report.passes.len());
    for needle in ["<svg", "Ledger", "tool results stubbed", "messages replaced"] {
        assert!(html.contains(needle), "{needle} missing");
    }
    assert_no_external_reference(&html);
}

/// The page names no resource anywhere: no tag has a src, no href but in-page anchors and
/// (in the inspector) its own paths, no script or linked stylesheet, no CSS url() or
/// @import. (Text from the conversation is escaped, so every `<` opens one of our tags.)
fn assert_no_external_reference(html: &str) {
    for tag in html.split('<').skip(1).map(|t| t.split('>').next().unwrap()) {
        let name = tag.split_whitespace().next().unwrap_or_default().to_ascii_lowercase();
        assert!(!tag.contains(" src="), "a tag with a src: <{tag}>");
        assert!(
            !matches!(name.as_str(), "script" | "link" | "iframe" | "img" | "object" | "embed"),
            "<{tag}>"
        );
        if let Some(href) = tag.split("href=\"").nth(1) {
            let target = href.split('"').next().unwrap();
            assert!(
                target.starts_with('#') || target.starts_with("/ui"),
                "href {target:?} leaves the page"
            );
        }
    }
    let style = html.split("<style>").nth(1).unwrap().split("</style>").next().unwrap();
    assert!(
        !style.contains("url(") && !style.contains("@import"),
        "no CSS that loads"
    );
}

const HOSTILE: &str = "</script><img src=x onerror=alert(1)><script>alert('x')</script>&amp;";

/// A run whose user, assistant, tool calls and results all carry markup.
fn hostile_messages() -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are an agent."),
        Message::user(format!("Fix it {HOSTILE}")),
    ];
    for k in 0..24 {
        let id = format!("call_{k}");
        messages.push(
            Message::assistant(format!("step {k} {HOSTILE}")).with_tool_calls(vec![ToolCall::new(
                id.clone(),
                "bash",
                format!("{{\"command\": \"cat f{k}.html # {HOSTILE}\"}}"),
            )]),
        );
        messages.push(Message::tool(id, format!("{HOSTILE}\n{}", "<b>output</b> ".repeat(60))));
    }
    messages.push(Message::assistant("done"));
    messages
}

#[tokio::test]
async fn hostile_content_is_escaped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = support::play(hostile_messages(), support::compactor(2_000), dir.path()).await;
    let options = ReportOptions::default().title(format!("title {HOSTILE}"));
    let report = report_of_file(&path, &options).unwrap();
    assert!(!report.passes.is_empty(), "the run compacted");
    assert!(
        report
            .passes
            .iter()
            .any(|p| !p.stubs.is_empty() || !p.replaced.is_empty())
    );
    let html = render(&report);
    assert!(!html.contains("<img"), "a tool result's markup is not markup");
    assert!(!html.contains("<script"), "no script, not even an injected one");
    assert!(!html.contains("<b>output"), "no injected element");
    // Escaped as numeric character references (askama's way) or named ones.
    let shown = |text: &str| {
        html.contains(&text.replace('<', "&#60;").replace('>', "&#62;"))
            || html.contains(&text.replace('<', "&lt;").replace('>', "&gt;"))
    };
    assert!(
        shown("<img src=x onerror=alert(1)>"),
        "the original text is shown, escaped"
    );
    assert!(shown("title </script>"), "the title is escaped");
    assert_no_external_reference(&html);
}

#[test]
fn a_transcript_that_is_not_one_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"not\": \"a transcript\"}\n{}\n").unwrap();
    let error = report_of_file(&path, &ReportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("bad.jsonl") && error.contains(":1"), "{error}");
    let missing = report_of_file(&dir.path().join("none.jsonl"), &ReportOptions::default())
        .unwrap_err()
        .to_string();
    assert!(missing.contains("none.jsonl"), "{missing}");
}

/// 10,000 messages of tool calls and results, compacted as they grow.
pub fn long_run(rounds: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are an agent."),
        Message::user("Refactor the crate."),
    ];
    for k in 0..rounds {
        let id = format!("c{k}");
        messages.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            id.clone(),
            "bash",
            format!("{{\"command\": \"cat src/file_{k}.rs\"}}"),
        )]));
        messages.push(Message::tool(id, format!("// file {k}\n{}", "fn f() {}\n".repeat(40))));
    }
    messages
}

#[tokio::test]
async fn a_ten_thousand_message_session_stays_within_the_caps() {
    let dir = tempfile::tempdir().unwrap();
    let messages = long_run(4_999);
    assert_eq!(messages.len(), 10_000);
    let path = support::play(messages, support::compactor(20_000), dir.path()).await;
    let started = std::time::Instant::now();
    let options = ReportOptions::default();
    let report = report_of_file(&path, &options).unwrap();
    let built = started.elapsed();
    let html = render(&report);
    eprintln!(
        "10,000 messages: {} requests, {} passes; built in {:.0} ms, rendered in {:.0} ms, {} KB of HTML",
        report.requests.len(),
        report.passes.len(),
        built.as_secs_f64() * 1e3,
        (started.elapsed() - built).as_secs_f64() * 1e3,
        html.len() / 1024
    );
    assert_eq!(report.messages_appended, 10_000);
    assert!(report.passes.len() > 10);
    for pass in &report.passes {
        assert!(pass.stubs.len() <= compactor_report::DEFAULT_MAX_LISTED);
        assert!(pass.replaced.len() <= compactor_report::DEFAULT_MAX_LISTED);
        assert!(pass.shape_before.len() <= compactor_report::DEFAULT_MAX_SEGMENTS);
        assert_eq!(pass.stubs.len() + pass.stubs_omitted, pass.elisions);
    }
    // Everything beyond the caps is counted, not shown: the page stays a few MB.
    assert!(html.len() < 16 << 20, "{} bytes", html.len());
    std::fs::write(dir.path().join("report.html"), &html).unwrap();
}

/// A transcript written line by line: an elision epoch, then a repair, then a compaction
/// that hard-trims, each its own pass, each named, counted and marked in the chart.
/// A summarizer request that failed with a retryable error.
fn failed_attempt() -> llm_compactor::compactor::Attempt {
    let mut attempt = llm_compactor::compactor::Attempt::new(
        llm_compactor::compactor::AttemptKind::Summary,
        llm_compactor::compactor::AttemptOutcome::Failed,
    );
    attempt.class = Some(llm_compactor::summarize::FailureClass::RetrySame);
    attempt.status = Some(503);
    attempt
}

#[test]
fn every_kind_of_pass_is_named_counted_and_marked() {
    use compactor_report::chart::{SeriesColors, hex};
    use llm_compactor::session::{
        CompactionRecord, ElisionItem, ElisionRecord, RepairRecord, SessionMeta, SyntheticAnswerItem, encode_line,
    };
    let ts = "2026-01-01T00:00:00.000000Z";
    let mut lines = vec![encode_line("meta", ts, &Record::Meta(SessionMeta::default())).unwrap()];
    let mut push = |id: &str, record: Record| lines.push(encode_line(id, ts, &record).unwrap());
    push("u", Record::Message(Message::user("go")));
    push(
        "a1",
        Record::Message(Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", "{}")])),
    );
    push("t1", Record::Message(Message::tool("c1", "x".repeat(4_000))));
    push(
        "a2",
        Record::Message(Message::assistant("").with_tool_calls(vec![ToolCall::new("c2", "bash", "{}")])),
    );
    push(
        "e",
        Record::Elision(ElisionRecord::new(vec![ElisionItem::new("t1", "[stub of t1]")])),
    );
    push(
        "r",
        Record::Repair({
            let mut repair = RepairRecord::default();
            repair.answers = vec![SyntheticAnswerItem::new("a2", "no result recorded", "c2")];
            repair
        }),
    );
    push("u2", Record::Message(Message::user("next")));
    push("a3", Record::Message(Message::assistant("ok")));
    push(
        "k",
        Record::Compaction({
            let mut record = CompactionRecord::new("u2".to_owned(), String::new());
            record.dropped = 4;
            record.exhausted = true;
            record.fallback = true;
            record.summarizer = Some("openai:gpt-test".to_owned());
            record.attempts = vec![failed_attempt(), failed_attempt()];
            record.tokens_after = 3;
            record.tokens_before = 1_050;
            record
        }),
    );
    let jsonl = lines.concat();
    let report = compactor_report::report_of_jsonl("kinds.jsonl", jsonl.as_bytes(), &ReportOptions::default()).unwrap();
    let kinds: Vec<_> = report.passes.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, [PassKind::Elision, PassKind::Repair, PassKind::HardTrim]);
    let epoch = &report.passes[0];
    assert_eq!(epoch.stubs.len(), 1);
    assert_eq!(epoch.stubs[0].stub, "[stub of t1]");
    assert_eq!(
        epoch.stubs[0].original.text,
        "x".repeat(2_000),
        "the original, cut to the cap"
    );
    assert_eq!(epoch.stubs[0].original.cut_chars, 2_000);
    assert!(epoch.tokens_after < epoch.tokens_before, "the epoch shed tokens");
    assert_eq!(report.passes[1].repairs, 1);
    let trim = &report.passes[2];
    assert!(trim.fallback && trim.exhausted);
    assert_eq!(
        trim.attempts,
        ["summary failed (retry-same)", "summary failed (retry-same)"]
    );
    assert_eq!(trim.summarizer_cell(), "openai:gpt-test · 2 requests (2 failed)");
    assert_eq!(
        report.passes[0].summarizer_cell(),
        "not recorded",
        "an epoch asks no summarizer"
    );
    let html = render(&report);
    assert!(
        html.contains("openai:gpt-test · 2 requests (2 failed)"),
        "the pass table names the summarizer"
    );
    assert_eq!(
        (trim.tokens_before, trim.tokens_after, trim.messages_replaced),
        (1_050, 3, 4)
    );
    // Requests: before a1, a2 and a3, then the pending one after the trim.
    assert_eq!(report.requests.len(), 4);
    assert_eq!(report.requests[3].line, 0);
    assert_eq!(
        (report.passes[0].after_requests, report.passes[2].after_requests),
        (2, 3)
    );
    let (t, pending) = (&report.totals, report.requests[3].tokens);
    assert_eq!((t.elision_epochs, t.repairs, t.hard_trims, t.compactions), (1, 1, 1, 0));
    assert!(pending < report.requests[2].tokens);
    let svg = compactor_report::chart::svg(&report);
    let count = |needle: String| svg.matches(&needle).count();
    assert_eq!(
        count(format!("fill=\"none\" stroke=\"{}\"", hex(SeriesColors::ELISION))),
        1
    );
    assert_eq!(count(format!("fill=\"{}\"", hex(SeriesColors::HARD_TRIM))), 1);
    assert!(count(format!("stroke=\"{}\"", hex(SeriesColors::REPAIR))) >= 1);
    let html = render(&report);
    assert!(html.contains("hard trim") && html.contains("fallback / exhausted"));
}

#[test]
fn an_empty_session_and_one_without_passes_render() {
    let meta =
        r#"{"id":"m","payload":{"created_by":"test"},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}"#;
    let empty =
        compactor_report::report_of_jsonl("empty.jsonl", format!("{meta}\n").as_bytes(), &ReportOptions::default())
            .unwrap();
    assert_eq!((empty.requests.len(), empty.passes.len()), (0, 0));
    let html = render(&empty);
    assert!(html.contains("Nothing was compacted") && html.contains("<svg"));
    let dir = tempfile::tempdir().unwrap();
    let answered = vec![Message::user("hi"), Message::assistant("hello")];
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let path = rt.block_on(support::play(answered, support::compactor(10_000), dir.path()));
    let report = report_of_file(&path, &ReportOptions::default()).unwrap();
    assert_eq!(
        report.requests.len(),
        1,
        "the one request; the answered run has no pending one"
    );
    assert!(render(&report).contains("Nothing was compacted"));
}
