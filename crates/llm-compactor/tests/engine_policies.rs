//! The compaction pass, continued: aging epochs, cancellation, hooks, chunking, events.

use crate::engine_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use engine_support::{Scripted, check, compactor, conversation, http, replay, reply, round, tokens};
use llm_compactor::compactor::{
    AttemptKind, AttemptOutcome, CompactionEvent, CompactionHooks, RequestDecision, ResponseDecision,
};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::Message;
use llm_compactor::plan;
use llm_compactor::summarize::{FailureClass, SummaryReply, SummaryRequest};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};

/// A system prompt, then rounds of fat results, then `tail` chars of conversation.
fn aging_input(rounds: usize, size: usize, tail: usize) -> Vec<Message> {
    let mut m = vec![Message::system("s"), Message::user("task")];
    for i in 0..rounds {
        m.extend(round(&format!("c{i}"), "fs_read", &format!("{{\"p\":{i}}}"), size));
    }
    m.push(Message::user("x".repeat(tail)));
    m.push(Message::assistant("recent 1"));
    m.push(Message::user("recent 2"));
    m
}

fn aging_config(budget: usize) -> CompactorConfig {
    CompactorConfig::builder(budget)
        .keep_recent(2)
        .age_observations(true)
        .age_min_chars(1000)
        .age_reclaim_min(8000)
        .build()
        .unwrap()
}

#[tokio::test]
async fn elision_only_pass_makes_no_request() {
    let input = aging_input(6, 4000, 8000);
    let before = tokens(&input);
    // Over the trigger; aging alone gets it back under.
    let budget = before * 10 / 9;
    let s = Scripted::always(reply("never"));
    let c = Compactor::new(aging_config(budget), Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    assert!(c.needs_compaction(&input));
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.calls(), 0);
    assert!(r.is_elision_only());
    assert_eq!(
        (r.dropped, r.cut_index, r.summary.as_str(), r.fallback),
        (0, -1, "", false)
    );
    assert_eq!(
        r.elisions.iter().map(|e| e.index).collect::<Vec<_>>(),
        [3, 5, 7, 9, 11, 13]
    );
    assert_eq!(r.elisions[0].stub, plan::stub_text(4000, Some("fs_read")));
    assert_eq!(r.messages.len(), input.len());
    assert_eq!(replay(&input, &r), r.messages);
    assert!(r.tokens_after < r.tokens_before);
    // The epoch floor resets itself: nothing to do right after.
    assert!(!c.needs_compaction(&r.messages));
}

#[tokio::test]
async fn reclaimable_epoch_is_entered_below_the_trigger() {
    let input = aging_input(3, 4000, 8000);
    // The mechanism, not the gate's horizon: a three-turn run is young, and the default
    // horizon, discounted by the run's length, would wait (tests/cost_policy_choice.rs).
    let mut config = aging_config(1_000_000);
    config.cost_policy.discount_by_run_length = false;
    let c = Compactor::new(config, Arc::new(HeuristicCounter));
    assert!(c.needs_compaction(&input), "pool 12000 >= 8000 below the trigger");
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(r.is_elision_only());
    assert!(!c.needs_compaction(&r.messages));
    let report = c.plan(&r.messages, &CompactOptions::default());
    assert_eq!(report.reclaimable_pool, 0);
    // Below the floor: not needed.
    let small = aging_input(1, 4000, 8000);
    assert!(!c.needs_compaction(&small));
}

#[tokio::test]
async fn aging_that_is_not_enough_summarizes_the_stubbed_middle() {
    let input = aging_input(6, 4000, 8000);
    let s = Scripted::new(vec![reply("summary")]);
    let c = Compactor::new(aging_config(2000), Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.calls(), 1);
    assert!(
        s.request(0)
            .transcript
            .contains("[elided by the harness: 4000-char fs_read result")
    );
    // Issue 10 item 16: the stubs are reported although the summary replaced them all.
    assert!(!r.fallback && !r.elisions.is_empty());
    assert!(
        r.elisions.iter().all(|e| !r.survived(e)),
        "every elision was inside the summarized middle"
    );
    assert_eq!(replay(&input, &r), r.messages);
}

#[tokio::test]
async fn with_aging_off_nothing_about_elision_shows() {
    // Aging is on by default since issue 12's defaults sweep; off, nothing of it shows.
    let input = aging_input(6, 4000, 60_000);
    let c = Compactor::new(
        CompactorConfig::builder(1_000_000)
            .keep_recent(2)
            .age_observations(false)
            .build()
            .unwrap(),
        Arc::new(HeuristicCounter),
    );
    assert!(!c.needs_compaction(&input));
    let report = c.plan(&input, &CompactOptions::default());
    assert!(report.eligible.is_empty() && report.reclaimable_pool == 0 && !report.aging);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(r.elisions.is_empty());
    assert!(r.messages.iter().all(|m| !m.text().contains("elided by the harness")));
}

#[tokio::test]
async fn cancellation_mid_backoff_returns_quickly_and_trims() {
    let slow = Err(llm_compactor::SummarizerError::new(
        llm_compactor::summarize::FailureKind::Http { status: 503 },
        "down",
    )
    .with_retry_after(std::time::Duration::from_secs(30)));
    let s = Scripted::always(slow);
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let options = CompactOptions::default();
    let cancel = options.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        cancel.cancel();
    });
    let started = std::time::Instant::now();
    let r = c.compact(&input, options).await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < std::time::Duration::from_millis(100 + 900), "{elapsed:?}");
    assert_eq!(s.calls(), 1);
    assert!(r.fallback);
    check(&input, &r);
}

#[tokio::test(start_paused = true)]
async fn cancel_during_a_call_goes_to_the_trim() {
    let options = CompactOptions::default();
    let s = Arc::new(
        Scripted::build(vec![])
            .with_fallback(http(503))
            .cancelling(options.cancel.clone()),
    );
    let c = compactor(2000, Some(s.clone()));
    let input = conversation(10, 400);
    let r = c.compact(&input, options).await.unwrap();
    assert_eq!(s.calls(), 1);
    assert!(r.fallback);
}

struct Hooks {
    block_request: bool,
    feedback: bool,
    seen: AtomicUsize,
}

#[async_trait]
impl CompactionHooks for Hooks {
    async fn before_request(&self, request: &SummaryRequest) -> RequestDecision {
        self.seen.fetch_add(1, Ordering::SeqCst);
        if self.block_request {
            return RequestDecision::Block("policy".into());
        }
        let mut modified = request.clone();
        modified.system.push_str("\nREDACTED BY HOOK");
        RequestDecision::Modify(modified)
    }

    async fn on_response(&self, _request: &SummaryRequest, _reply: &SummaryReply) -> ResponseDecision {
        if self.feedback {
            ResponseDecision::RetryWithFeedback("try again".into())
        } else {
            ResponseDecision::Accept
        }
    }
}

#[tokio::test]
async fn hooks_modify_and_block() {
    let input = conversation(10, 400);
    // Modify: the summarizer gets the modified request.
    let s = Scripted::new(vec![reply("ok")]);
    let hooks = Arc::new(Hooks {
        block_request: false,
        feedback: false,
        seen: AtomicUsize::new(0),
    });
    let r = compactor(2000, Some(s.clone()))
        .with_hooks(hooks.clone())
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert!(!r.fallback);
    assert!(s.request(0).system.ends_with("REDACTED BY HOOK"));
    // Block before the request: no call, a failed attempt, the trim.
    let s = Scripted::always(reply("ok"));
    let hooks = Arc::new(Hooks {
        block_request: true,
        feedback: false,
        seen: AtomicUsize::new(0),
    });
    let r = compactor(2000, Some(s.clone()))
        .with_hooks(hooks)
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert_eq!(s.calls(), 0);
    assert!(r.fallback);
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(
        (r.attempts[0].outcome, r.attempts[0].class),
        (AttemptOutcome::Failed, Some(FailureClass::Abort))
    );
    // Retry-with-feedback on the response: one paid call, never a loop.
    let s = Scripted::always(reply("ok"));
    let hooks = Arc::new(Hooks {
        block_request: false,
        feedback: true,
        seen: AtomicUsize::new(0),
    });
    let r = compactor(2000, Some(s.clone()))
        .with_hooks(hooks.clone())
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert_eq!(s.calls(), 1);
    assert_eq!(hooks.seen.load(Ordering::SeqCst), 1);
    assert!(r.fallback);
    assert_eq!(r.usage.input_tokens, 10, "the rejected call is billed");
}

#[tokio::test]
async fn chunking_keeps_every_request_inside_a_tiny_room() {
    // Just above the fixed part of a request (instruction, tighten and truncation notes,
    // the task restated after the transcript (issue 16 item 2), the sentence that says
    // the transcript is data (issue 10 item 17)) plus the minimum transcript room: it was
    // 700 before those existed.
    let room = 950;
    let s = Arc::new(
        Scripted::build(vec![])
            .with_room(room)
            .with_fallback(reply("carried summary")),
    );
    let input = conversation(30, 1500);
    let r = compactor(100_000, Some(s.clone()))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    check(&input, &r);
    assert!(!r.fallback);
    let n = s.calls();
    assert!(n > 3, "{n} requests");
    for i in 0..n {
        let req = s.request(i);
        let size = (req.system.chars().count() + req.transcript.chars().count()).div_ceil(3);
        assert!(size <= room, "request {i}: {size} > {room}");
    }
    assert!(s.request(1).transcript.contains("carried summary"));
    let kinds: Vec<AttemptKind> = r.attempts.iter().map(|a| a.kind).collect();
    assert!(kinds[..n - 1].iter().all(|k| *k == AttemptKind::Chunk));
    assert_eq!(kinds[n - 1], AttemptKind::Summary);
    assert!(r.attempts[..n - 1].iter().all(|a| a.outcome == AttemptOutcome::Carried));
    // Every round made it into some request.
    for i in 0..29 {
        let needle = format!("fs_read({{\"path\":\"f{i}.rs\"}})");
        assert!((0..n).any(|j| s.request(j).transcript.contains(&needle)), "round {i}");
    }
}

#[tokio::test]
async fn one_message_too_big_for_the_room_is_capped() {
    let room = 1000;
    let s = Arc::new(Scripted::build(vec![]).with_room(room).with_fallback(reply("s")));
    let config = CompactorConfig::builder(1_000_000).keep_recent(1).build().unwrap();
    let c = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    let input = vec![
        Message::system("s"),
        Message::user("u".repeat(50_000)),
        Message::user("recent"),
    ];
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(!r.fallback);
    let req = s.request(0);
    assert!((req.system.chars().count() + req.transcript.chars().count()).div_ceil(3) <= room);
    assert!(req.transcript.contains("more characters truncated]"));
}

#[tokio::test]
async fn events_report_start_and_done() {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let c = compactor(2000, None).with_observer(Arc::new(move |e: &CompactionEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    let input = conversation(10, 400);
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    c.compact(&input, CompactOptions::default()).await.unwrap();
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 4);
    assert!(matches!(events[0], CompactionEvent::CompactionStarted { round: 1, .. }));
    match &events[1] {
        CompactionEvent::CompactionDone {
            tokens_before,
            tokens_after,
            dropped,
            fallback,
            round,
            ..
        } => {
            assert_eq!(
                (*tokens_before, *tokens_after, *dropped, *fallback, *round),
                (r.tokens_before, r.tokens_after, r.dropped, true, 1)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(events[3], CompactionEvent::CompactionDone { round: 2, .. }));
}
