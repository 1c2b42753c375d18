//! Seed rules that the engine tests did not pin down: each test here fails when the rule
//! it names is broken (checked by mutating the engine while writing them).

use crate::engine_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use engine_support::{
    Chars, Scripted, compact_once, compactor, config, conversation, http, reply, round, tokens, truncated,
};
use llm_compactor::compactor::{
    AttemptKind, AttemptOutcome, CompactionHooks, RequestDecision, ResponseDecision, backoff_delay,
};
use llm_compactor::count::{HeuristicCounter, RequestCounter, TokenCounter};
use llm_compactor::format::Document;
use llm_compactor::message::{Message, Role, ToolCall};
use llm_compactor::plan::{self, AgingRules, Pairs};
use llm_compactor::summarize::{
    FailureClass, FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest,
};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Usage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn with_target(target: usize) -> CompactOptions {
    CompactOptions::new().with_target(Some(target))
}

#[test]
fn the_newest_copy_of_a_repeated_call_is_never_elided_even_when_fat_and_old() {
    // The same fs_read answered twice; the newest copy is fat and a whole epoch old.
    let mut m = vec![Message::system("s"), Message::user("task")];
    m.extend(round("a", "fs_read", r#"{"path":"x"}"#, 5000));
    m.extend(round("b", "fs_read", r#"{"path": "x"}"#, 5000));
    m.push(Message::user("y".repeat(20_000)));
    m.push(Message::assistant("recent"));
    let rules = AgingRules {
        min_chars: 1000,
        reclaim_min: 10_000,
    };
    let pairs = Pairs::build(&m);
    let e = plan::eligible(&m, &pairs, &plan::layout(&m, 1), rules);
    assert_eq!(
        e.iter().map(|e| e.index).collect::<Vec<_>>(),
        [3],
        "index 5 is protected"
    );
}

#[tokio::test]
async fn developer_and_anthropic_system_messages_are_sticky_in_a_compaction() {
    let mut wire = vec![json!({"role": "system", "content": "rules"})];
    for i in 0..8 {
        wire.push(json!({"role": "user", "content": format!("question {i} {}", "q".repeat(400))}));
        wire.push(json!({"role": "assistant", "content": format!("answer {i}")}));
        if i == 3 {
            wire.push(json!({"role": "developer", "content": "mid-run developer note"}));
        }
    }
    let document = Document::from_value(json!(wire), None, "t.json").unwrap();
    let input = document.messages().to_vec();
    let config = CompactorConfig::builder(1000).keep_recent(2).build().unwrap();
    let s = Scripted::new(vec![reply("summary")]);
    let r = compact_once(config.clone(), s, &input).await;
    assert!(!r.fallback && r.dropped > 0);
    let roles: Vec<&Role> = r.messages.iter().map(|m| &m.role).collect();
    assert_eq!(&roles[..3], [&Role::System, &Role::Developer, &Role::User]);
    assert_eq!(r.messages[1].text(), "mid-run developer note");
    // Anthropic's top-level system survives a hard trim.
    let anthropic = json!({"system": "be brief", "messages": wire[1..].iter().filter(|m| m["role"] != "developer").collect::<Vec<_>>()});
    let input = Document::from_value(anthropic, None, "a.json")
        .unwrap()
        .messages()
        .to_vec();
    let r = Compactor::new(config, Arc::new(HeuristicCounter))
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    assert!(r.fallback);
    assert_eq!(
        (r.messages[0].role.clone(), r.messages[0].text()),
        (Role::System, "be brief".into())
    );
}

#[tokio::test]
async fn a_noop_is_exhausted_against_the_target_override_and_with_only_sticky_before_the_cut() {
    // Only sticky messages before the recent window: the middle is empty although the
    // cut exists.
    let input = vec![
        Message::system("s".repeat(400)),
        Message::user("pinned").sticky(),
        Message::user("u".repeat(400)),
        Message::assistant("a".repeat(400)),
    ];
    let s = Scripted::always(reply("never"));
    let c = Compactor::new(
        CompactorConfig::builder(100_000).keep_recent(2).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_summarizer(s.clone());
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(r.is_noop() && !r.exhausted && r.cut_index == -1 && r.messages == input);
    let before = tokens(&input);
    let r = c.compact(&input, with_target(before)).await.unwrap();
    assert!(!r.exhausted, "before == target is not past it");
    let r = c.compact(&input, with_target(before - 1)).await.unwrap();
    assert!(r.exhausted, "judged against the override, not the budget");
    assert_eq!(s.calls(), 0);
}

/// sys, task, two fat rounds, an epoch of filler, two recent messages.
fn aging_input(size: usize) -> Vec<Message> {
    let mut m = vec![Message::system("s"), Message::user("task")];
    m.extend(round("a", "fs_read", r#"{"p":1}"#, size));
    m.extend(round("b", "fs_read", r#"{"p":2}"#, size));
    m.push(Message::user("x".repeat(1000)));
    m.push(Message::assistant("r1"));
    m.push(Message::user("r2"));
    m
}

fn aging_config(budget: usize) -> CompactorConfig {
    CompactorConfig::builder(budget)
        .trigger_ratio(0.5)
        .target_ratio(0.25)
        .keep_recent(2)
        .age_observations(true)
        .age_min_chars(100)
        .age_reclaim_min(1000)
        // The seed's rules (no cost gate, elision-only judged against the trigger).
        .cost_policy(llm_compactor::plan::CostPolicy {
            epoch_ratio: None,
            ..llm_compactor::plan::CostPolicy::seed()
        })
        .build()
        .unwrap()
}

#[test]
fn needs_compaction_is_strictly_over_the_trigger_or_a_whole_pool() {
    // Aging off: 800 chars against a trigger of 800 is not over it; 801 is.
    let c = Compactor::new(
        CompactorConfig::builder(1000).trigger_ratio(0.8).build().unwrap(),
        Arc::new(Chars),
    );
    assert!(!c.needs_compaction(&[Message::user("z".repeat(800))]));
    assert!(c.needs_compaction(&[Message::user("z".repeat(801))]));
    // Aging on, far below the trigger: a pool of exactly age_reclaim_min is an epoch.
    let c = Compactor::new(aging_config(1_000_000), Arc::new(Chars));
    assert_eq!(
        c.plan(&aging_input(500), &CompactOptions::default()).reclaimable_pool,
        1000
    );
    assert!(c.needs_compaction(&aging_input(500)));
    let mut short = aging_input(500);
    short[3] = Message::tool("a", "r".repeat(499));
    assert!(!c.needs_compaction(&short), "999 chars is not a whole epoch");
}

#[tokio::test]
async fn elision_only_is_judged_against_the_target_override_else_the_trigger() {
    let input = aging_input(500);
    let c = Compactor::new(aging_config(1_000_000), Arc::new(Chars));
    let report = c.plan(&input, &CompactOptions::default());
    let elisions: Vec<_> = report
        .eligible
        .iter()
        .map(|e| llm_compactor::compactor::Elision::new(e.index, e.stub.clone()))
        .collect();
    let aged = Chars.count_messages(&plan::apply_elisions(&input, &elisions));
    // Without an override: aged == trigger is enough, aged == trigger + 1 is not.
    for (budget, elision_only) in [(2 * aged, true), (2 * (aged - 1), false)] {
        let s = Scripted::always(reply("S"));
        let r = Compactor::new(aging_config(budget), Arc::new(Chars))
            .with_summarizer(s.clone())
            .compact(&input, CompactOptions::default())
            .await
            .unwrap();
        assert_eq!(r.is_elision_only(), elision_only, "budget {budget}");
        assert_eq!(s.calls(), usize::from(!elision_only));
        if elision_only {
            assert_eq!(r.tokens_after, aged);
        }
    }
    // With an override the trigger no longer matters: under the trigger but over the
    // caller's target, the pass goes on to the summarizer.
    for (target, elision_only) in [(aged, true), (aged - 1, false)] {
        let s = Scripted::always(reply("S"));
        let r = Compactor::new(aging_config(1_000_000), Arc::new(Chars))
            .with_summarizer(s.clone())
            .compact(&input, with_target(target))
            .await
            .unwrap();
        assert_eq!(r.is_elision_only(), elision_only, "target {target}");
        assert_eq!(s.calls(), usize::from(!elision_only));
    }
}

#[tokio::test]
async fn with_aging_off_the_pass_is_byte_identical_to_one_where_nothing_is_eligible() {
    let input = aging_input(5000);
    let run = |aging: bool| {
        let input = input.clone();
        async move {
            let config = CompactorConfig::builder(2000)
                .keep_recent(2)
                .age_observations(aging)
                .age_min_chars(usize::MAX)
                .age_reclaim_min(usize::MAX)
                .build()
                .unwrap();
            let s = Scripted::always(reply("summary"));
            let c = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(s.clone());
            let r = c.compact(&input, CompactOptions::default()).await.unwrap();
            (
                serde_json::to_string(&r).unwrap(),
                s.request(0),
                c.needs_compaction(&input),
            )
        }
    };
    let off = run(false).await;
    assert_eq!(off, run(true).await);
    assert!(!off.1.transcript.contains("elided by the harness"));
    // And with aging off (no longer the default since issue 12), a fat old pool is no
    // reason to compact.
    let c = Compactor::new(
        CompactorConfig::builder(1_000_000)
            .age_observations(false)
            .keep_recent(2)
            .age_min_chars(1)
            .age_reclaim_min(1)
            .build()
            .unwrap(),
        Arc::new(HeuristicCounter),
    );
    assert!(!c.needs_compaction(&input));
}

#[test]
fn the_failure_table_is_the_specs() {
    use FailureClass::*;
    for status in 100u16..=599 {
        let expected = match status {
            400..=404 => Abort,
            429 => Advance,
            500..=599 => RetrySame,
            _ => Advance,
        };
        assert_eq!(FailureKind::Http { status }.class(), expected, "{status}");
    }
    assert_eq!(FailureKind::Parse.class(), Advance);
    assert_eq!(FailureKind::Timeout.class(), Advance);
    assert_eq!(FailureKind::Connect.class(), RetrySame);
    assert_eq!(FailureKind::Other.class(), RetrySame);
    assert_eq!(FailureKind::Empty.class(), Response);
    assert!(Response.is_retryable() && Advance.is_retryable() && RetrySame.is_retryable());
    assert!(!Abort.is_retryable());
}

#[tokio::test(start_paused = true)]
async fn every_abort_status_trims_after_one_call_and_others_use_every_attempt() {
    let input = conversation(10, 400);
    for (status, calls) in [(400, 1), (402, 1), (403, 1), (404, 1), (408, 4), (429, 4), (502, 4)] {
        let s = Scripted::always(http(status));
        let config = CompactorConfig::builder(2000)
            .keep_recent(3)
            .max_attempts(4)
            .build()
            .unwrap();
        let r = compact_once(config, s.clone(), &input).await;
        assert_eq!(s.calls(), calls, "status {status}");
        assert!(r.fallback);
        assert_eq!(r.attempts.len(), calls);
    }
}

#[tokio::test(start_paused = true)]
async fn backoff_doubles_is_capped_at_30s_and_floors_on_retry_after() {
    let input = conversation(10, 400);
    let s = Scripted::always(http(503));
    let config = CompactorConfig::builder(2000)
        .keep_recent(3)
        .max_attempts(8)
        .build()
        .unwrap();
    let r = compact_once(config, s.clone(), &input).await;
    let waits: Vec<u64> = r.attempts.iter().map(|a| a.wait_ms).collect();
    assert_eq!(waits.len(), 8);
    assert_eq!(waits[0], 0);
    for (n, wait) in waits.iter().enumerate().skip(1).take(5) {
        let base = 1000u64 << (n - 1);
        assert!(
            (base..base + 500).contains(wait),
            "wait before attempt {}: {wait}",
            n + 1
        );
    }
    assert_eq!(&waits[6..], [30_000, 30_000], "2^5 s and more is capped");
    // Retry-After is a floor, still capped; the jitter stays in [0, 0.5) s.
    assert_eq!(
        backoff_delay(1, Some(Duration::from_secs(3)), "x"),
        Duration::from_secs(3)
    );
    assert_eq!(
        backoff_delay(2, Some(Duration::from_secs(300)), "x"),
        Duration::from_secs(30)
    );
    for seed in 0..200 {
        let d = backoff_delay(1, None, &seed.to_string());
        assert!(d >= Duration::from_secs(1) && d < Duration::from_millis(1500), "{d:?}");
    }
}

#[tokio::test]
async fn the_tighten_retry_keeps_the_completion_budget() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![reply(&"h".repeat(20_000)), reply("tight")]);
    let config = CompactorConfig::builder(2000)
        .keep_recent(3)
        .summary_max_tokens(777)
        .build()
        .unwrap();
    let r = compact_once(config, s.clone(), &input).await;
    assert!(!r.fallback);
    assert_eq!(s.request(0).max_output_tokens, 777);
    assert_eq!(s.request(1).max_output_tokens, 777, "tightened with words, not a cap");
}

/// Answers by what it is asked: a tighten gets "tight"; a first-budget request is
/// truncated; the request holding the last middle message gets a summary too long to
/// shrink anything; other chunks get a carried summary.
struct ByRequest {
    base: u32,
    calls: AtomicUsize,
}

#[async_trait]
impl Summarizer for ByRequest {
    fn name(&self) -> &str {
        "by-request"
    }
    fn input_room(&self) -> Option<usize> {
        Some(900)
    }
    async fn summarize(&self, request: SummaryRequest, _: &CancellationToken) -> Result<SummaryReply, SummarizerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (text, stop) = if request.system.contains("too long") {
            ("tight".to_owned(), StopReason::Complete)
        } else if request.max_output_tokens == self.base {
            ("partial".to_owned(), StopReason::Truncated)
        } else if request.transcript.contains("LAST-MIDDLE") {
            ("h".repeat(200_000), StopReason::Complete)
        } else {
            ("carried".to_owned(), StopReason::Complete)
        };
        Ok(SummaryReply::new(text, stop, Usage::default()))
    }
}

#[derive(Default)]
struct Counting {
    before: AtomicUsize,
    after: AtomicUsize,
}

#[async_trait]
impl CompactionHooks for Counting {
    async fn before_request(&self, _: &SummaryRequest) -> RequestDecision {
        self.before.fetch_add(1, Ordering::SeqCst);
        RequestDecision::Proceed
    }
    async fn on_response(&self, _: &SummaryRequest, _: &SummaryReply) -> ResponseDecision {
        self.after.fetch_add(1, Ordering::SeqCst);
        ResponseDecision::Accept
    }
}

#[tokio::test]
async fn hooks_see_every_chunk_expand_and_tighten_call() {
    let mut input = conversation(12, 1500);
    let n = input.len();
    input[n - 2] = Message::tool("c11", "LAST-MIDDLE");
    let summarizer = Arc::new(ByRequest {
        base: 2048,
        calls: AtomicUsize::new(0),
    });
    let hooks = Arc::new(Counting::default());
    let config = CompactorConfig::builder(100_000).keep_recent(1).build().unwrap();
    let r = Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(summarizer.clone())
        .with_hooks(hooks.clone())
        .compact(&input, CompactOptions::default())
        .await
        .unwrap();
    let kinds: Vec<AttemptKind> = r.attempts.iter().map(|a| a.kind).collect();
    for kind in [
        AttemptKind::Chunk,
        AttemptKind::Expand,
        AttemptKind::Summary,
        AttemptKind::Tighten,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
    assert!(!r.fallback && r.summary.ends_with("tight"));
    let calls = summarizer.calls.load(Ordering::SeqCst);
    assert_eq!(calls, r.attempts.len());
    assert_eq!(hooks.before.load(Ordering::SeqCst), calls);
    assert_eq!(hooks.after.load(Ordering::SeqCst), calls);
}

/// Never answers, and ignores its cancellation token.
struct Hung;

#[async_trait]
impl Summarizer for Hung {
    fn name(&self) -> &str {
        "hung"
    }
    async fn summarize(&self, _: SummaryRequest, _: &CancellationToken) -> Result<SummaryReply, SummarizerError> {
        std::future::pending().await
    }
}

/// Runs `compactor` over a conversation, cancels it after 50 ms, and returns how long
/// the pass took to end after the cancel, and its result.
async fn cancel_after_50ms(compactor: Compactor) -> (Duration, llm_compactor::CompactionResult) {
    let options = CompactOptions::default();
    let cancel = options.cancel.clone();
    let cancelled_at = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
        std::time::Instant::now()
    });
    let input = conversation(10, 400);
    let r = tokio::time::timeout(Duration::from_secs(10), compactor.compact(&input, options))
        .await
        .expect("the cancel ended the pass")
        .unwrap();
    let ended = std::time::Instant::now();
    let cancelled_at = cancelled_at.await.unwrap();
    (ended.saturating_duration_since(cancelled_at), r)
}

#[tokio::test]
async fn a_cancel_ends_a_hung_call_and_a_long_wait_within_250ms_then_trims() {
    let c = compactor(2000, None);
    let (late, r) = cancel_after_50ms(c.with_summarizer(Arc::new(Hung))).await;
    assert!(late < Duration::from_millis(250), "{late:?}");
    assert!(r.fallback);
    assert_eq!(r.attempts.len(), 1);
    let slow =
        Err(SummarizerError::new(FailureKind::Http { status: 503 }, "down").with_retry_after(Duration::from_secs(30)));
    let c = compactor(2000, None);
    let (late, r) = cancel_after_50ms(c.with_summarizer(Scripted::always(slow))).await;
    assert!(late < Duration::from_millis(250), "{late:?}");
    assert!(r.fallback && r.attempts.len() == 1);
}

#[tokio::test]
async fn a_complete_request_counter_override_is_used_for_every_reported_count() {
    let input = conversation(10, 400);
    let tools = vec![json!({"name": "fs_read", "description": "d".repeat(2000)})];
    let adapter: Arc<dyn TokenCounter> = Arc::new(RequestCounter::new(Arc::new(HeuristicCounter), tools, "cwd: /repo"));
    let overhead = adapter.count_messages(&input) - tokens(&input);
    assert!(overhead > 400);
    let target = tokens(&input[input.len() - 3..]) + overhead + 400;
    for summarizer in [None, Some(Scripted::always(reply("a short summary")))] {
        let mut c = Compactor::new(
            CompactorConfig::builder(100_000).keep_recent(3).build().unwrap(),
            Arc::new(HeuristicCounter),
        );
        if let Some(s) = summarizer.clone() {
            c = c.with_summarizer(s);
        }
        let options = CompactOptions::new()
            .with_target(Some(target))
            .with_counter(adapter.clone());
        let r = c.compact(&input, options).await.unwrap();
        assert_eq!(r.fallback, summarizer.is_none());
        assert_eq!(r.tokens_before, adapter.count_messages(&input));
        assert_eq!(r.tokens_after, adapter.count_messages(&r.messages));
        assert!(
            r.tokens_after <= target && !r.exhausted,
            "{} > {target}",
            r.tokens_after
        );
    }
}

#[tokio::test]
async fn a_trim_that_cannot_shrink_leaves_the_conversation_as_it_is() {
    // The middle is one short message: the notice is bigger than what it replaces. A
    // pass never returns more tokens than it was given (issue 41): the conversation
    // comes back unchanged, exhausted only when it is over the limit.
    let input = vec![Message::system("s"), Message::user("a"), Message::user("recent")];
    for (budget, exhausted) in [(100_000, false), (10, true)] {
        let c = Compactor::new(
            CompactorConfig::builder(budget).keep_recent(1).build().unwrap(),
            Arc::new(HeuristicCounter),
        );
        let r = c.compact(&input, CompactOptions::default()).await.unwrap();
        assert_eq!(r.messages, input);
        assert!(!r.fallback && r.dropped == 0);
        assert_eq!(r.tokens_after, r.tokens_before);
        assert_eq!(r.exhausted, exhausted, "budget {budget}");
    }
}

#[tokio::test(start_paused = true)]
async fn usage_counts_failed_truncated_rejected_and_accepted_calls() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![
        http(503),
        truncated("part"),
        reply(&"h".repeat(20_000)),
        reply("tight"),
    ]);
    let r = compact_once(config(2000), s.clone(), &input).await;
    assert!(!r.fallback);
    let outcomes: Vec<(AttemptKind, AttemptOutcome)> = r.attempts.iter().map(|a| (a.kind, a.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            (AttemptKind::Summary, AttemptOutcome::Failed),
            (AttemptKind::Summary, AttemptOutcome::Rejected),
            (AttemptKind::Expand, AttemptOutcome::Rejected),
            (AttemptKind::Tighten, AttemptOutcome::Accepted),
        ]
    );
    assert_eq!(r.usage.input_tokens, 3 + 10 + 10 + 10);
    assert_eq!(r.usage.output_tokens, 15);
    let _ = ToolCall::new("x", "y", "z");
}
