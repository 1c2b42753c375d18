//! The compaction pass: every rule of the seed, through the public API, with scripted
//! summarizers.

use crate::engine_support;

use std::sync::Arc;

use engine_support::{
    Scripted, Spy, check, compactor, config, conversation, http, replay, reply, round, tokens, truncated,
};
use llm_compactor::compactor::{AttemptKind, AttemptOutcome};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::Message;
use llm_compactor::plan::SUMMARY_HEADER;
use llm_compactor::summarize::FailureClass;
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};

#[tokio::test]
async fn no_op_makes_no_backend_call() {
    let s = Scripted::always(reply("never"));
    let c = Compactor::new(
        CompactorConfig::builder(100_000).keep_recent(50).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_summarizer(s.clone());
    let input = conversation(5, 100);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.calls(), 0);
    assert_eq!(
        (r.dropped, r.cut_index, r.summary.as_str(), r.fallback, r.exhausted),
        (0, -1, "", false, false)
    );
    assert_eq!(r.messages, input);
    assert!(r.attempts.is_empty() && r.is_noop());
    // A no-op over a conversation past the budget is exhausted. (Since issue 10 item 22
    // the recent window shrinks to its token cap, so the no-op needs a conversation
    // that is only its newest user message.)
    let c = Compactor::new(
        CompactorConfig::builder(100).keep_recent(50).build().unwrap(),
        Arc::new(HeuristicCounter),
    );
    let input = vec![Message::user("q".repeat(1000))];
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(r.exhausted && r.is_noop());
}

#[tokio::test]
async fn accepted_summary_replaces_the_middle() {
    let s = Scripted::new(vec![reply("## Goals\nfix the bug")]);
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 1);
    assert_eq!(r.summary, format!("{SUMMARY_HEADER}\n## Goals\nfix the bug"));
    assert!(!r.fallback && !r.exhausted);
    assert!(r.tokens_after < r.tokens_before);
    assert_eq!(r.cut_index, (input.len() - 4) as i64);
    assert_eq!(r.dropped, input.len() - 4);
    assert_eq!(r.messages[0], input[0]);
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(
        (r.attempts[0].kind, r.attempts[0].outcome),
        (AttemptKind::Summary, AttemptOutcome::Accepted)
    );
    assert_eq!(r.usage.input_tokens, 10);
    // The instruction has the four headings in order and no-invention rules.
    let system = s.request(0).system;
    let positions: Vec<usize> = ["Goals", "Decisions", "Files and commands", "Unresolved"]
        .iter()
        .map(|h| system.find(h).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    assert!(system.contains("no preamble") && system.contains("never invent"));
}

#[tokio::test]
async fn summarizer_sees_capped_results_and_arguments() {
    let s = Scripted::new(vec![reply("short")]);
    let config = CompactorConfig::builder(100_000)
        .keep_recent(1)
        .tool_result_cap(100)
        .build()
        .unwrap();
    let c = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    let mut input = vec![Message::system("s"), Message::user("u")];
    input.extend(round(
        "a",
        "fs_write",
        &format!("{{\"text\":\"{}\"}}", "w".repeat(500)),
        5000,
    ));
    input.push(Message::user("recent"));
    let r = c
        .compact(&input, CompactOptions::new().with_focus("the writes".to_owned()))
        .await
        .unwrap();
    assert!(!r.fallback);
    let request = s.request(0);
    let t = &request.transcript;
    assert!(t.contains("[tool]\n"), "{t}");
    assert!(
        t.contains(&format!("{}\n[... 4900 more characters truncated]", "r".repeat(100))),
        "{t}"
    );
    assert!(!t.contains(&"r".repeat(101)));
    let args_cut = 511 - 100;
    assert!(
        t.contains(&format!(
            "-> calls fs_write({{\"text\":\"{} [... {args_cut} more characters truncated])",
            "w".repeat(91)
        )),
        "{t}"
    );
    assert!(t.contains("[user]\nu\n"));
    assert!(request.system.ends_with("Focus especially on: the writes"));
    // The conversation itself is not capped.
    assert_eq!(input[3].text().len(), 5000);
}

#[tokio::test]
async fn abort_class_trims_at_once() {
    let s = Scripted::always(http(401));
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 1);
    assert!(r.fallback);
    assert!(r.tokens_after <= config(2000).target());
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(r.attempts[0].class, Some(FailureClass::Abort));
    assert_eq!(r.attempts[0].status, Some(401));
    assert!(r.summary.contains("dropped unsummarized"));
    assert_eq!(r.usage.input_tokens, 3);
}

#[tokio::test(start_paused = true)]
async fn transient_failure_is_retried_with_backoff_then_trimmed() {
    let s = Scripted::always(http(503));
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 3);
    assert!(r.fallback);
    let waits: Vec<u64> = r.attempts.iter().map(|a| a.wait_ms).collect();
    assert_eq!(waits[0], 0);
    assert!((1000..1500).contains(&waits[1]), "{waits:?}");
    assert!((2000..2500).contains(&waits[2]), "{waits:?}");
    assert!(r.attempts.iter().all(|a| a.class == Some(FailureClass::RetrySame)));
    assert_eq!(r.usage.input_tokens, 9, "failed calls are billed too");
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_a_floor_and_recovery_is_accepted() {
    let busy = Err(llm_compactor::SummarizerError::new(
        llm_compactor::summarize::FailureKind::Http { status: 429 },
        "slow down",
    )
    .with_retry_after(std::time::Duration::from_secs(7)));
    let s = Scripted::new(vec![busy, reply("ok")]);
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(!r.fallback);
    assert_eq!(r.attempts[1].wait_ms, 7000);
    assert_eq!(r.attempts[0].class, Some(FailureClass::Advance));
    assert_eq!(r.usage.input_tokens, 10);
}

#[tokio::test(start_paused = true)]
async fn empty_summary_is_a_failure() {
    let s = Scripted::new(vec![reply(" \n\t "), reply("real summary")]);
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 2);
    assert_eq!(r.attempts[0].outcome, AttemptOutcome::Failed);
    assert_eq!(r.attempts[0].class, Some(FailureClass::Response));
    assert!(r.summary.ends_with("real summary"));
    assert_eq!(r.usage.input_tokens, 20, "the empty reply was billed");
    // Always empty: never used as a summary, the pass trims.
    let s = Scripted::always(reply(""));
    let r = compactor(2000, Some(s.clone()))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert!(r.fallback);
    assert_eq!(s.calls(), 3);
}

#[tokio::test]
async fn a_summary_that_does_not_shrink_gets_one_tighten_retry() {
    let input = conversation(10, 400);
    let huge = "h".repeat(20_000);
    let s = Scripted::new(vec![reply(&huge), reply("tight")]);
    let c = compactor(2000, Some(s.clone()));
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 2);
    assert!(!r.fallback);
    assert!(r.summary.ends_with("tight"));
    let kinds: Vec<(AttemptKind, AttemptOutcome)> = r.attempts.iter().map(|a| (a.kind, a.outcome)).collect();
    assert_eq!(
        kinds,
        [
            (AttemptKind::Summary, AttemptOutcome::Rejected),
            (AttemptKind::Tighten, AttemptOutcome::Accepted)
        ]
    );
    let tighten = s.request(1);
    assert!(tighten.system.contains("too long"));
    assert!(tighten.system.contains(&format!(
        "at most {} characters",
        tighten.transcript.chars().count() / 4
    )));
    assert_eq!(tighten.transcript, s.request(0).transcript);
}

#[tokio::test]
async fn tighten_is_accepted_only_if_it_shrinks_and_beats_the_first() {
    let input = conversation(10, 400);
    let huge = "h".repeat(20_000);
    // The same size again: rejected, hard trim.
    let s = Scripted::new(vec![reply(&huge), reply(&huge)]);
    let r = compactor(2000, Some(s.clone()))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 2);
    assert!(r.fallback);
    assert!(
        r.attempts[1]
            .note
            .as_deref()
            .unwrap()
            .contains("not shorter than the first attempt")
    );
    // Shorter than the first but still not smaller than the conversation: rejected too.
    let s = Scripted::new(vec![reply(&huge), reply(&"h".repeat(10_000))]);
    let r = compactor(2000, Some(s.clone()))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert!(r.fallback);
    assert_eq!(r.attempts[1].outcome, AttemptOutcome::Rejected);
}

#[tokio::test]
async fn truncated_summary_is_retried_with_a_doubled_budget() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![truncated("## Goals\nfix the"), reply("## Goals\nfix the bug")]);
    let r = compactor(2000, Some(s.clone()))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 2);
    assert_eq!(s.request(1).max_output_tokens, 2 * s.request(0).max_output_tokens);
    let kinds: Vec<(AttemptKind, AttemptOutcome)> = r.attempts.iter().map(|a| (a.kind, a.outcome)).collect();
    assert_eq!(
        kinds,
        [
            (AttemptKind::Summary, AttemptOutcome::Rejected),
            (AttemptKind::Expand, AttemptOutcome::Accepted)
        ]
    );
    assert!(r.summary.ends_with("fix the bug"));
    assert_eq!(r.usage.output_tokens, 10);
}

#[tokio::test]
async fn trim_never_eats_the_recent_window() {
    // The recent window alone is far over the target.
    let mut input = conversation(6, 100);
    let n = input.len();
    input[n - 1] = Message::user("q".repeat(8000));
    let r = compactor(2000, None)
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    check(&input, &r);
    assert!(r.fallback);
    // Issue 10 item 22: the window shrinks to its token cap, down to the newest user
    // message, which is never touched; what still does not fit is exhausted.
    assert_eq!(r.messages[r.messages.len() - 1..], input[n - 1..]);
    assert_eq!(r.cut_index, (n - 2) as i64, "the whole middle went");
    assert!(r.exhausted, "after {} > budget", r.tokens_after);
    assert!(r.attempts[0].note.as_deref().unwrap().contains("no summarizer"));
}

#[tokio::test]
async fn one_huge_result_in_the_last_turn_is_cut_to_fit() {
    // Issue 10 item 22 changed this rule: it used to be exhausted, every pass.
    let mut input = conversation(6, 100);
    input.extend(round("big", "fs_read", "{\"path\":\"huge\"}", 400_000));
    let s = Scripted::always(reply("summary"));
    let r = compactor(64_000, Some(s))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert_eq!(replay(&input, &r), r.messages, "replay contract");
    assert!(!r.exhausted);
    assert!(r.tokens_after <= 64_000);
    assert_eq!(r.truncations.len(), 1);
    let text = r.messages.last().unwrap().text();
    assert!(text.contains(&format!("[... {} characters cut", r.truncations[0].cut_chars)));
}

#[tokio::test]
async fn target_override_is_honoured_by_acceptance_trim_and_exhausted() {
    let input = conversation(10, 400);
    let before = tokens(&input);
    // A summary that shrinks but not to the target is not an answer.
    let medium = "m".repeat(1600);
    let s = Scripted::new(vec![reply(&medium), reply(&medium)]);
    let c = compactor(100_000, Some(s.clone()));
    let target = tokens(&input[input.len() - 3..]) + 300;
    let r = c
        .compact(&input, CompactOptions::new().with_target(Some(target)))
        .await
        .unwrap();
    check(&input, &r);
    assert!(r.fallback, "a summary above the target fell through to the trim");
    assert!(r.tokens_after <= target);
    assert!(!r.exhausted);
    assert!(r.attempts[0].note.as_deref().unwrap().contains("above the target"));
    // Without the override the same summary is fine.
    let s = Scripted::new(vec![reply(&medium)]);
    let r = compactor(100_000, Some(s))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert!(!r.fallback && r.tokens_after < before);
    // A target below the recent window: exhausted against the target, not the budget.
    let r = compactor(100_000, None)
        .compact(&input, CompactOptions::new().with_target(Some(50)))
        .await
        .unwrap();
    assert!(r.exhausted && r.fallback);
    // A zero target is invalid input.
    assert!(
        compactor(100_000, None)
            .compact(&input, CompactOptions::new().with_target(Some(0)))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn counter_override_is_used_for_every_count() {
    let own = Arc::new(Spy::default());
    let other = Arc::new(Spy::default());
    let s = Scripted::new(vec![reply(&"h".repeat(20_000)), reply(&"h".repeat(20_000))]);
    let config = CompactorConfig::builder(2000)
        .keep_recent(3)
        .age_observations(true)
        .age_min_chars(10)
        .age_reclaim_min(100)
        .build()
        .unwrap();
    let c = Compactor::new(config, own.clone()).with_summarizer(s.clone());
    let input = conversation(10, 400);
    let r = c
        .compact(
            &input,
            CompactOptions::new().with_counter(other.clone()).with_target(Some(500)),
        )
        .await
        .unwrap();
    assert_eq!(own.calls(), 0, "the compactor's own counter was never asked");
    assert!(other.calls() >= 4, "before, aged, two summaries, trim");
    assert!(r.fallback);
    let _ = c.plan(&input, &CompactOptions::new().with_counter(other.clone()));
    assert_eq!(own.calls(), 0);
}

#[tokio::test]
async fn summaries_of_summaries() {
    let c = compactor(
        2000,
        Some(Scripted::new(vec![reply("first summary"), reply("second summary")])),
    );
    let mut input = conversation(10, 400);
    let r1 = c.compact(&input, CompactOptions::default()).await.unwrap();
    input = r1.messages.clone();
    for i in 0..6 {
        input.extend(round(&format!("n{i}"), "bash", "ls", 400));
    }
    input.push(Message::user("next"));
    let r2 = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r2);
    assert!(r2.summary.ends_with("second summary"));
    assert!(
        !r2.messages.iter().any(|m| m.text().contains("first summary")),
        "the old summary was folded in"
    );
}

#[tokio::test]
async fn summaries_of_summaries_feed_the_old_summary_to_the_summarizer() {
    let s = Scripted::new(vec![reply("first summary"), reply("second summary")]);
    let c = compactor(2000, Some(s.clone()));
    let r1 = c
        .compact(&conversation(10, 400), CompactOptions::default())
        .await
        .unwrap();
    let mut input = r1.messages.clone();
    for i in 0..6 {
        input.extend(round(&format!("n{i}"), "bash", "ls", 400));
    }
    input.push(Message::user("next"));
    c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(
        s.request(1)
            .transcript
            // Message text starting with `[` is escaped in the summarizer's input
            // (issue 10 item 17), our own header included.
            .contains(&format!("[user]\n\\{SUMMARY_HEADER}\nfirst summary"))
    );
}

#[tokio::test(start_paused = true)]
async fn same_input_same_bytes() {
    let input = conversation(10, 400);
    let run = || async {
        let s = Scripted::new(vec![http(503), http(500), reply(&"h".repeat(20_000))]);
        let r = compactor(2000, Some(s))
            .compact(&input, CompactOptions::default())
            .await
            .unwrap();
        serde_json::to_string(&r).unwrap()
    };
    let a = run().await;
    let b = run().await;
    assert_eq!(a, b);
    assert!(a.contains("\"fallback\":true"));
}
