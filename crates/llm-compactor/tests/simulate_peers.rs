//! The two peer strategies of issue 12 on hand-made conversations with exactly known
//! outcomes: SWE-agent's batched observation masking and JetBrains' masking + summary
//! hybrid.

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::jetbrains_hybrid::{self, JetBrainsHybrid};
use llm_compactor::simulate::mask_batched::MaskBatched;
use llm_compactor::simulate::mask_last_n::{MaskLastN, placeholder};
use llm_compactor::simulate::{Pricing, Strategy, StrategyKind, TrajectoryReport, replay};
use llm_compactor::{Message, Role, TokenCounter, ToolCall};

fn call(id: &str) -> Message {
    Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "read", "{}")])
}

/// S, U, then `rounds` rounds of (call, `lines`-line result), then a final answer.
fn conversation(rounds: usize, lines: usize) -> Vec<Message> {
    let mut m = vec![Message::system("s".repeat(40)), Message::user("u".repeat(80))];
    for i in 0..rounds {
        let id = format!("c{i}");
        m.push(call(&id));
        m.push(Message::tool(id, format!("result {i} line\n").repeat(lines)));
    }
    m.push(Message::assistant("done"));
    m
}

fn run(trajectory: &[Message], strategy: &mut dyn Strategy, window: usize) -> TrajectoryReport {
    replay(trajectory, strategy, window, &Pricing::ANTHROPIC, &HeuristicCounter).unwrap()
}

/// Every tool result answers a call of an earlier assistant message.
fn well_formed(conversation: &[Message]) -> bool {
    conversation.iter().enumerate().all(|(i, m)| {
        m.role != Role::Tool
            || conversation[..i].iter().any(|a| {
                a.tool_calls
                    .iter()
                    .any(|c| Some(c.id.as_str()) == m.tool_call_id.as_deref())
            })
    })
}

#[test]
fn batched_masking_moves_the_mask_once_per_batch_and_keeps_the_cache_in_between() {
    let trajectory = conversation(3, 3);
    // n = 1, polling = 2: after 2 observations 1 is masked; after 3 still 1.
    let mut batched = MaskBatched::new(1, 2);
    let report = run(&trajectory, &mut batched, 100_000);
    let shaped = batched.conversation();
    assert_eq!(shaped[3].text(), placeholder(3));
    assert_eq!(
        shaped[5], trajectory[5],
        "the second observation stays until the next batch"
    );
    assert_eq!(report.totals.elision_epochs, 1);
    // Request 4 reads the whole of request 3's prompt from the cache.
    let counter = HeuristicCounter;
    assert_eq!(
        report.requests[3].cached_tokens as usize,
        counter.count_messages(&shaped[..6])
    );

    // Masking every round (SWE-agent's default polling of 1) breaks the cache twice.
    let mut every_round = MaskLastN::new(1);
    assert_eq!(run(&trajectory, &mut every_round, 100_000).totals.elision_epochs, 2);
}

#[test]
fn batched_masking_with_a_batch_of_one_is_masking_every_round() {
    let trajectory = conversation(14, 4);
    let a = run(&trajectory, &mut MaskBatched::new(10, 1), 100_000);
    let b = run(&trajectory, &mut MaskLastN::new(10), 100_000);
    assert_eq!(a.requests, b.requests);
}

#[test]
fn the_hybrid_summarizes_every_43_turns_keeping_the_last_10_and_masks_all_but_10_observations() {
    // 60 small turns, a window nothing comes near: only the turn count triggers.
    let trajectory = conversation(60, 2);
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    let mut hybrid = JetBrainsHybrid::new(1_000_000, counter);
    let report = run(&trajectory, &mut hybrid, 1_000_000);
    // Request k carries k - 1 turns: the summary runs at the 54th request (53 turns),
    // and 43 more turns do not accumulate before the end.
    assert_eq!(report.totals.compactions, 1);
    assert!(report.requests[53].compaction);
    assert_eq!(report.totals.summarizer_calls, 1);
    // Masking moves every round from the 12th request (11 observations) on, except at the
    // summary, which rebuilt the conversation: 42 rounds before it, 7 after.
    assert_eq!(report.totals.elision_epochs, 49);

    let shaped = hybrid.conversation();
    assert_eq!(&shaped[..2], &trajectory[..2], "the system prompt and the task stay");
    assert!(shaped[2].text().starts_with(jetbrains_hybrid::SUMMARY_PREFIX));
    assert_eq!(
        shaped[3],
        trajectory[2 + 2 * 43],
        "the summary replaced the first 43 turns"
    );
    let observations: Vec<&Message> = shaped.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(observations.len(), 17);
    let masked = observations
        .iter()
        .filter(|m| m.text().starts_with("Old environment output"))
        .count();
    assert_eq!(masked, 7, "all but the last 10 observations are masked");
    assert!(well_formed(shaped));
    // After the summary only the head is still cached.
    let head = HeuristicCounter.count_messages(&trajectory[..2]);
    assert_eq!(report.requests[53].cached_tokens as usize, head);
}

#[test]
fn the_hybrid_also_summarizes_at_90_percent_of_the_window_and_stays_inside() {
    // 30 turns of ~300-token results in a 4k window: the turn count (53) never triggers,
    // the masked conversation passes 90% of the window after about 23 turns.
    let trajectory = conversation(30, 80);
    let window = 4_000;
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    let mut hybrid = JetBrainsHybrid::new(window, counter.clone());
    let report = run(&trajectory, &mut hybrid, window);
    assert!(report.totals.compactions >= 1, "the threshold triggered a summary");
    let first = report.requests.iter().position(|r| r.compaction).unwrap();
    let threshold = (window as f64 * jetbrains_hybrid::THRESHOLD_RATIO).ceil() as u64;
    assert!(report.requests[..first].iter().all(|r| r.input_tokens <= threshold));
    assert!(
        report.requests.iter().all(|r| r.input_tokens <= window as u64),
        "{:?}",
        report.totals
    );
    assert!(well_formed(hybrid.conversation()));
    // The batched variant moves the mask less often.
    let mut batched = JetBrainsHybrid::batched(window, counter);
    let b = run(&trajectory, &mut batched, window);
    assert!(b.totals.elision_epochs < report.totals.elision_epochs);
}

#[test]
fn the_new_peers_are_listed_and_parse_by_name() {
    for name in ["mask-last-n-batched", "jetbrains-hybrid", "jetbrains-hybrid-batched"] {
        let kind: StrategyKind = name.parse().unwrap();
        assert_eq!(kind.name(), name);
        assert!(StrategyKind::ALL.contains(&kind));
    }
}
