//! Issue 16 items 2 and 3 through the public API: what every summary request carries
//! (the task restated after the transcript, the answer's prefill), and the retry after
//! a truncated summary never raising an explicit output cap.

use crate::engine_support;

use std::sync::Arc;

use async_trait::async_trait;
use engine_support::{Scripted, check, conversation, reply, truncated};
use llm_compactor::compactor::{AttemptKind, AttemptOutcome};
use llm_compactor::count::HeuristicCounter;
use llm_compactor::summarize::{
    DEFAULT_PREFILL, DEFAULT_SUFFIX, Prompts, Summarizer, SummarizerError, SummaryReply, SummaryRequest,
};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use tokio_util::sync::CancellationToken;

/// A scripted summarizer that declares an output cap of its own.
struct Capped {
    inner: Arc<Scripted>,
    cap: u32,
}

#[async_trait]
impl Summarizer for Capped {
    fn name(&self) -> &str {
        "capped"
    }

    fn max_output_tokens(&self) -> Option<u32> {
        Some(self.cap)
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.inner.summarize(request, cancel).await
    }
}

fn config(expand: bool, max_tokens: u32) -> CompactorConfig {
    CompactorConfig::builder(2000)
        .keep_recent(3)
        .summary_max_tokens(max_tokens)
        .expand_truncated(expand)
        .build()
        .unwrap()
}

fn attempts(r: &llm_compactor::CompactionResult) -> Vec<(AttemptKind, AttemptOutcome)> {
    r.attempts.iter().map(|a| (a.kind, a.outcome)).collect()
}

#[tokio::test]
async fn an_explicit_cap_is_kept_on_the_retry_with_the_instruction_to_write_less() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![truncated("## Goals\nfix the"), reply("## Goals\nfix the bug")]);
    let c = Compactor::new(config(false, 512), Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    let r = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &r);
    assert_eq!(s.calls(), 2);
    assert_eq!(s.request(0).max_output_tokens, 512);
    assert_eq!(s.request(1).max_output_tokens, 512, "the cap was raised");
    assert!(!s.request(0).system.contains("cut off"));
    assert!(
        s.request(1)
            .system
            .contains("cut off at the output limit of 512 tokens"),
        "{}",
        s.request(1).system
    );
    assert_eq!(s.request(1).transcript, s.request(0).transcript);
    assert_eq!(
        attempts(&r),
        [
            (AttemptKind::Summary, AttemptOutcome::Rejected),
            (AttemptKind::Expand, AttemptOutcome::Accepted)
        ]
    );
    assert!(r.attempts[0].note.as_deref().unwrap().contains("output cap of 512"));
}

#[tokio::test]
async fn a_backend_cap_bounds_the_doubled_budget() {
    let input = conversation(10, 400);
    // Doubling 512 would ask for 1024; the backend writes at most 700.
    let s = Scripted::new(vec![truncated("## Goals\nfix the"), reply("## Goals\nfix the bug")]);
    let capped = Arc::new(Capped {
        inner: s.clone(),
        cap: 700,
    });
    let c = Compactor::new(config(true, 512), Arc::new(HeuristicCounter)).with_summarizer(capped);
    c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.request(1).max_output_tokens, 700);
    assert!(!s.request(1).system.contains("cut off"));

    // Already at the backend's cap: retried at it, asking for less.
    let s = Scripted::new(vec![truncated("## Goals\nfix the"), reply("## Goals\nfix the bug")]);
    let capped = Arc::new(Capped {
        inner: s.clone(),
        cap: 512,
    });
    let c = Compactor::new(config(true, 512), Arc::new(HeuristicCounter)).with_summarizer(capped);
    c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.request(1).max_output_tokens, 512);
    assert!(
        s.request(1)
            .system
            .contains("cut off at the output limit of 512 tokens")
    );
}

#[tokio::test]
async fn without_a_cap_the_retry_still_doubles() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![truncated("## Goals\nfix the"), reply("## Goals\nfix the bug")]);
    let c = Compactor::new(config(true, 512), Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(s.request(1).max_output_tokens, 1024);
}

#[tokio::test]
async fn every_request_restates_the_task_after_the_transcript_and_prefills_the_answer() {
    let input = conversation(10, 400);
    let s = Scripted::new(vec![reply("## Goals\nfix the bug")]);
    let c = Compactor::new(config(true, 512), Arc::new(HeuristicCounter)).with_summarizer(s.clone());
    c.compact(&input, CompactOptions::default()).await.unwrap();
    let request = s.request(0);
    assert!(request.transcript.starts_with("[system]") || request.transcript.starts_with('['));
    assert!(request.transcript.ends_with(DEFAULT_SUFFIX), "{}", request.transcript);
    assert!(DEFAULT_SUFFIX.contains("Do not continue it"));
    assert_eq!(request.prefill, DEFAULT_PREFILL);
    assert_eq!(DEFAULT_PREFILL, "## Goals\n");

    // Custom prefix, suffix and prefill reach the request.
    let prompts = Prompts {
        prefix: "<conversation>\n".into(),
        suffix: "\n</conversation>\nNOW SUMMARIZE".into(),
        prefill: "## Goals\n- ".into(),
        ..Prompts::default()
    };
    let s = Scripted::new(vec![reply("## Goals\nfix the bug")]);
    let c = Compactor::new(config(true, 512), Arc::new(HeuristicCounter))
        .with_summarizer(s.clone())
        .with_prompts(prompts);
    c.compact(&input, CompactOptions::default()).await.unwrap();
    let request = s.request(0);
    assert!(request.transcript.starts_with("<conversation>\n["));
    assert!(request.transcript.ends_with("</conversation>\nNOW SUMMARIZE"));
    assert_eq!(request.prefill, "## Goals\n- ");
}

#[tokio::test]
async fn the_chunk_room_counts_the_suffix() {
    // A room that fits the transcript chunks only when the suffix is counted too.
    let input = conversation(20, 1000);
    let s = Arc::new(
        Scripted::build(vec![])
            .with_room(1400)
            .with_fallback(reply("## Goals\nso far")),
    );
    let c = Compactor::new(
        CompactorConfig::builder(100_000).keep_recent(3).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_summarizer(s.clone())
    .with_prompts(Prompts {
        suffix: format!("\n{}", "restated task ".repeat(60)),
        ..Prompts::default()
    });
    let target = c.config().target();
    let options = CompactOptions::new().with_target(Some(target.min(3000)));
    let _ = c.compact(&input, options).await.unwrap();
    assert!(s.calls() > 1);
    for i in 0..s.calls() {
        let request = s.request(i);
        let size = (request.system.len() + request.transcript.len()).div_ceil(3);
        assert!(size <= 1400, "request {i} is {size} tokens, over the room of 1400");
    }
}
