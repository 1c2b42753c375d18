//! Each peer strategy on a small hand-made conversation with exactly known outcomes.

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::simulate::clear_tool_uses::{self, ClearToolUses};
use llm_compactor::simulate::mask_last_n::{MaskLastN, placeholder};
use llm_compactor::simulate::none::NoManagement;
use llm_compactor::simulate::summarize_at_threshold::{SUMMARY_PREFIX, SummarizeAtThreshold};
use llm_compactor::simulate::{Pricing, Strategy, replay, standin_summary_tokens};
use llm_compactor::{Message, Role, TokenCounter, ToolCall};

fn call(id: &str) -> Message {
    Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "read", "{}")])
}

/// S, U, then three rounds of (call, 3-line result of 400 chars), then a final answer:
/// four requests, at the assistant turns 2, 4, 6 and 8.
fn conversation() -> Vec<Message> {
    let result = |c: char| {
        format!(
            "{}\n{}\n{}",
            c.to_string().repeat(132),
            c.to_string().repeat(132),
            c.to_string().repeat(134)
        )
    };
    vec![
        Message::system("s".repeat(40)),
        Message::user("u".repeat(80)),
        call("c1"),
        Message::tool("c1", result('x')),
        call("c2"),
        Message::tool("c2", result('y')),
        call("c3"),
        Message::tool("c3", result('z')),
        Message::assistant("done"),
    ]
}

fn run(strategy: &mut dyn Strategy, window: usize) -> llm_compactor::simulate::TrajectoryReport {
    replay(
        &conversation(),
        strategy,
        window,
        &Pricing::ANTHROPIC,
        &HeuristicCounter,
    )
    .unwrap()
}

#[test]
fn none_carries_everything_and_caches_all_but_the_newest_messages() {
    let mut strategy = NoManagement::default();
    let report = run(&mut strategy, 100_000);
    assert_eq!(strategy.conversation(), &conversation()[..8]);
    let counter = HeuristicCounter;
    for (k, request) in report.requests.iter().enumerate().skip(1) {
        // Request k (at assistant turn 2k+2) reuses request k-1's whole prompt.
        assert_eq!(
            request.cached_tokens as usize,
            counter.count_messages(&conversation()[..2 * k])
        );
    }
    assert_eq!((report.totals.compactions, report.totals.elision_epochs), (0, 0));
}

#[test]
fn mask_last_n_masks_all_but_the_newest_observations_every_round() {
    let mut strategy = MaskLastN::new(1);
    let report = run(&mut strategy, 100_000);
    let shaped = strategy.conversation();
    assert_eq!(shaped[3].text(), placeholder(3));
    assert_eq!(shaped[5].text(), placeholder(3));
    assert_eq!(shaped[7], conversation()[7]);
    assert_eq!(shaped[3].tool_call_id.as_deref(), Some("c1"));
    // Rounds 3 and 4 each masked one more observation: two epochs, two cache breaks.
    assert_eq!(report.totals.elision_epochs, 2);
    let counter = HeuristicCounter;
    let conv = conversation();
    assert_eq!(
        report.requests[2].cached_tokens as usize,
        counter.count_messages(&conv[..3])
    );
    let mut masked = conv[..5].to_vec();
    masked[3].content = placeholder(3).into();
    assert_eq!(
        report.requests[3].cached_tokens as usize,
        counter.count_messages(&masked[..5])
    );
}

#[test]
fn clear_tool_uses_clears_the_oldest_results_over_the_trigger_and_they_stay_cleared() {
    let counter = HeuristicCounter;
    let conv = conversation();
    // Over the trigger once two results are in (request 3), not before.
    let trigger = counter.count_messages(&conv[..6]) - 1;
    let mut strategy = ClearToolUses::new("t", trigger, 1, None);
    let report = run(&mut strategy, 100_000);
    let shaped = strategy.conversation();
    assert_eq!(shaped[3].text(), clear_tool_uses::PLACEHOLDER);
    assert_eq!(shaped[3].role, Role::Tool);
    // Request 4: c1 cleared (stays), c2 cleared when the conversation is over again.
    let after_first = counter.count_messages(&shaped[..5]) + counter.count_message(&conv[5]);
    let over_again = after_first + counter.count_messages(&conv[6..8]) > trigger;
    assert!(over_again, "the hand-made sizes put request 4 over the trigger again");
    assert_eq!(shaped[5].text() == clear_tool_uses::PLACEHOLDER, over_again);
    assert_eq!(report.totals.elision_epochs, if over_again { 2 } else { 1 });
    assert_eq!(
        report.requests[1].cached_tokens,
        counter.count_messages(&conv[..2]) as u64
    );
    assert_eq!(
        report.requests[2].cached_tokens,
        counter.count_messages(&conv[..3]) as u64
    );
}

#[test]
fn clear_at_least_skips_activations_that_would_free_too_little() {
    let counter = HeuristicCounter;
    let conv = conversation();
    let trigger = counter.count_messages(&conv[..6]) - 1;
    let mut strategy = ClearToolUses::new("t", trigger, 1, Some(1_000_000));
    let report = run(&mut strategy, 100_000);
    assert_eq!(strategy.conversation(), &conv[..8]);
    assert_eq!(report.totals.elision_epochs, 0);
}

#[test]
fn clear_tool_uses_defaults_never_fire_below_100k() {
    let none = run(&mut NoManagement::default(), 32_000);
    let clear = run(&mut ClearToolUses::anthropic_defaults(), 32_000);
    assert_eq!(none.requests, clear.requests);
}

#[test]
fn summarize_at_threshold_keeps_system_and_user_messages_and_one_summary() {
    let counter = HeuristicCounter;
    let conv = conversation();
    // Threshold ceil(0.9 w) just below the request at turn 6 (S, U, two rounds).
    let at_six = counter.count_messages(&conv[..6]);
    let window = (at_six - 1) * 10 / 9;
    assert!(((window as f64 * 0.9).ceil() as usize) < at_six);
    assert!(counter.count_messages(&conv[..4]) < (window as f64 * 0.9).ceil() as usize);
    let mut strategy = SummarizeAtThreshold::new(window, Arc::new(HeuristicCounter));
    let report = run(&mut strategy, window);
    assert_eq!(report.totals.compactions, 1);
    assert_eq!(report.totals.summarizer_calls, 1);
    assert!(report.requests[2].compaction);
    // After the compaction at request 3: [S, U, summary], then c3 and its result appended.
    let shaped = strategy.conversation();
    assert_eq!(&shaped[..2], &conv[..2]);
    assert!(shaped[2].text().starts_with(SUMMARY_PREFIX));
    assert_eq!(&shaped[3..], &conv[6..8]);
    // The summary is the stand-in's length: ceil((history + prompt) / 10) filler words.
    let prompt = counter.count_message(&Message::user(llm_compactor::simulate::summarize_at_threshold::PROMPT));
    let words = standin_summary_tokens(at_six + prompt);
    let filler = shaped[2].text().lines().nth(1).unwrap_or_default().to_owned();
    assert_eq!(filler.split(' ').count(), words);
    // Request 3 after compacting shares only S and U with request 2.
    assert_eq!(
        report.requests[2].cached_tokens as usize,
        counter.count_messages(&conv[..2])
    );
}

#[test]
fn the_stand_in_filler_is_one_o200k_token_a_word() {
    use llm_compactor::count::BpeCounter;
    use llm_compactor::simulate::standin_text;
    assert_eq!(BpeCounter::o200k().count_text(&standin_text(1000)), 1000);
    assert_eq!(HeuristicCounter.count_text(&standin_text(1000)), 1000);
}
