//! Any budget from 256 tokens up fits (issue 41, item 2), swept budget by budget.
//!
//! Generated chat sessions (`chat_support`, deterministic) are compacted at every
//! budget from 256 up to their size, the way the Python package's `compact(messages,
//! budget=…)` does (the ledger summarizer, the ledger at its default policy, the budget
//! as the context window), and the real trajectories at 10, 20 and 30% of their size.
//! Every result fits its budget and makes progress; none is `exhausted` unless the
//! sticky prefix, a notice and the last turn alone are over the budget, and then it
//! carries its numbers.

use crate::chat_support::{self, compact, ledger_compactor};
use crate::common;

use std::sync::Arc;

use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::format::{Document, Format};
use llm_compactor::message::{Message, Role};
use llm_compactor::plan::SUMMARY_HEADER;

fn o200k() -> Arc<dyn TokenCounter> {
    llm_compactor::count::counter_by_name("o200k").unwrap_or_else(|_| Arc::new(HeuristicCounter))
}

/// What no pass may go below: the sticky messages, a notice, and the last turn (from
/// the newest user message on).
fn floor(messages: &[Message], counter: &dyn TokenCounter) -> usize {
    let newest_user = messages
        .iter()
        .rposition(|m| m.role == Role::User && !m.is_sticky())
        .unwrap_or(0);
    let mut kept: Vec<Message> = messages[..newest_user]
        .iter()
        .filter(|m| m.is_sticky())
        .cloned()
        .collect();
    kept.push(Message::user(format!("{SUMMARY_HEADER}\n{}", "n".repeat(200))));
    kept.extend(messages[newest_user..].iter().cloned());
    counter.count_messages(&kept)
}

/// One pass at `budget`, checked; `Ok(exhausted)`.
fn check(messages: &[Message], budget: usize, counter: &Arc<dyn TokenCounter>) -> Result<bool, String> {
    let before = counter.count_messages(messages);
    let r = compact(&ledger_compactor(budget, Arc::clone(counter)), messages);
    if r.tokens_after > before.max(budget) {
        return Err(format!(
            "budget {budget}: {} tokens after, {before} before",
            r.tokens_after
        ));
    }
    let floor = floor(messages, counter.as_ref());
    if floor <= budget && (r.exhausted || r.tokens_after > budget) {
        return Err(format!(
            "budget {budget}: the floor ({floor}) fits, yet {} tokens after, exhausted {}",
            r.tokens_after, r.exhausted
        ));
    }
    // Over the floor, the pass still shrinks what it can (the seed's "a pass always
    // makes progress"), unless nothing lies between the sticky prefix and the last turn.
    if r.exhausted
        && r.tokens_after >= before
        && r.exhaustion
            .as_ref()
            .is_some_and(|e| e.recent_tokens + e.sticky_tokens < before)
    {
        return Err(format!("budget {budget}: no progress ({} of {before})", r.tokens_after));
    }
    if r.exhausted != r.exhaustion.is_some() {
        return Err(format!("budget {budget}: exhausted without its numbers"));
    }
    Ok(r.exhausted)
}

#[test]
fn a_chat_session_fits_every_budget_from_256_up() {
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    for seed in 0..3 {
        let session = chat_support::session(seed, 65);
        let size = counter.count_messages(&session.messages);
        // Every budget where small ones break, then every 7th up to the size.
        let budgets = (256..=400).chain((401..=size).step_by(7));
        let mut checked = 0;
        for budget in budgets {
            if let Err(problem) = check(&session.messages, budget, &counter) {
                panic!("seed {seed} (size {size}): {problem}");
            }
            checked += 1;
        }
        eprintln!("seed {seed}: {checked} budgets from 256 to {size} fit, none exhausted");
    }
}

#[test]
fn the_issues_session_fits_256_600_and_1000_under_o200k() {
    let counter = o200k();
    let session = chat_support::session(41, 65);
    let size = counter.count_messages(&session.messages);
    for budget in [256, 600, 1_000, size / 10, size / 5, size * 3 / 10] {
        let r = compact(&ledger_compactor(budget, Arc::clone(&counter)), &session.messages);
        eprintln!(
            "o200k: budget {budget} of {size}: {} tokens after, exhausted {}",
            r.tokens_after, r.exhausted
        );
        assert!(
            r.tokens_after <= budget && !r.exhausted,
            "budget {budget}: {}",
            r.tokens_after
        );
    }
}

#[test]
fn every_real_trajectory_fits_at_10_20_and_30_percent() {
    if common::data_dir().is_none() {
        return;
    }
    let mut conversations: Vec<(String, Vec<Message>)> = Vec::new();
    for path in common::mini_swe_agent_files() {
        let doc = Document::read_path(&path, Some(Format::MiniSweAgent)).expect("a readable trajectory");
        conversations.push((path.display().to_string(), doc.messages().to_vec()));
    }
    for (i, traj) in common::tau_bench_conversations().into_iter().enumerate().take(20) {
        let doc = Document::from_value(traj, Some(Format::OpenAi), "tau-bench").expect("a readable conversation");
        conversations.push((format!("tau-bench #{i}"), doc.messages().to_vec()));
    }
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    for pct in [10, 20, 30] {
        let (mut fits, mut exhausted) = (0, 0);
        for (name, messages) in &conversations {
            let budget = (counter.count_messages(messages) * pct / 100).max(256);
            match check(messages, budget, &counter) {
                Ok(e) => {
                    exhausted += usize::from(e);
                    fits += usize::from(!e);
                }
                Err(problem) => panic!("{name} at {pct}%: {problem}"),
            }
        }
        eprintln!(
            "{} real conversations at {pct}%: {fits} fit, {exhausted} exhausted (each with its \
             sticky prefix and last turn alone over the budget)",
            conversations.len()
        );
    }
}

/// Regression (tau-bench #13 at 30%): a 1,547-token system prompt under a 1,847-token
/// budget left the 339-token recent window no room beside a summary, and the pass was
/// `exhausted` at 2,382 tokens where the sticky prefix and the last turn (1,642) fit.
#[test]
fn a_big_sticky_prefix_shrinks_the_recent_window_to_fit() {
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    let mut messages = vec![Message::system(format!("Policy: {}", "be careful. ".repeat(500)))];
    for i in 0..20 {
        messages.push(Message::user(format!(
            "Please change reservation R{i} to the later flight."
        )));
        messages.push(Message::assistant(format!("Done for R{i}: {}", "details ".repeat(40))));
    }
    let sticky = counter.count_messages(&messages[..1]);
    let budget = sticky + 300;
    assert!(floor(&messages, counter.as_ref()) <= budget);
    let r = compact(&ledger_compactor(budget, Arc::clone(&counter)), &messages);
    assert!(
        !r.exhausted && r.tokens_after <= budget,
        "{} tokens after, budget {budget}: {:?}",
        r.tokens_after,
        r.exhaustion
    );
    assert!(r.messages.last().is_some_and(|m| m.text().starts_with("Done for R19")));
}
