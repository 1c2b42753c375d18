//! The replay's running bookkeeping (each strategy says which message it first
//! rewrote; the replay keeps prefix sums) bills exactly what comparing every request
//! with the previous one message by message bills, for every strategy.

use std::sync::Arc;

use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, Role, ToolCall};
use llm_compactor::simulate::{Env, Pricing, ReplayLimits, StrategyKind, bill_request, replay_with};

fn trajectory(rounds: usize) -> Vec<Message> {
    let mut m = vec![Message::system("You are an agent."), Message::user("Fix it.")];
    for i in 0..rounds {
        let id = format!("c{i}");
        m.push(
            Message::assistant(format!("step {i}")).with_tool_calls(vec![ToolCall::new(
                id.clone(),
                "read",
                format!("{{\"f\":{}}}", i % 5),
            )]),
        );
        m.push(Message::tool(id, format!("row {i}\n").repeat(50 + (i * 311) % 900)));
    }
    m.push(Message::assistant("Done."));
    m
}

/// The reference: every request compared with the previous one in full.
fn naive(kind: StrategyKind, t: &[Message], window: usize) -> Vec<(u64, u64)> {
    let counter = HeuristicCounter;
    let mut strategy = kind.build(window, Arc::new(HeuristicCounter)).unwrap();
    let mut previous: Vec<Message> = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for (at, turn) in t.iter().enumerate() {
        if turn.role != Role::Assistant {
            continue;
        }
        let env = Env {
            counter: &counter,
            window,
            previous_len: previous.len(),
            max_output: 0,
            agent_summarizer: true,
        };
        strategy.prepare(&t[next..at], &env).unwrap();
        next = at;
        let bill = bill_request(
            &previous,
            strategy.conversation(),
            counter.count_message(turn),
            &counter,
        );
        out.push((bill.input_tokens, bill.cached_tokens));
        previous = strategy.conversation().to_vec();
    }
    out
}

#[test]
fn the_linear_replay_bills_what_a_full_comparison_bills() {
    let t = trajectory(120);
    for window in [6_000usize, 20_000] {
        for kind in StrategyKind::ALL {
            let mut strategy = kind.build(window, Arc::new(HeuristicCounter)).unwrap();
            let report = replay_with(
                &t,
                strategy.as_mut(),
                &ReplayLimits::new(window, &Pricing::ANTHROPIC),
                &HeuristicCounter,
            )
            .unwrap();
            let fast: Vec<(u64, u64)> = report
                .requests
                .iter()
                .map(|r| (r.input_tokens, r.cached_tokens))
                .collect();
            assert_eq!(fast, naive(kind, &t, window), "{kind} at {window}");
        }
    }
}

#[test]
fn the_output_reserve_makes_a_request_over_the_window() {
    let t = trajectory(10);
    let tokens = HeuristicCounter.count_messages(&t);
    let mut none = StrategyKind::None.build(tokens, Arc::new(HeuristicCounter)).unwrap();
    let pricing = Pricing::ANTHROPIC;
    let mut limits = ReplayLimits::new(tokens, &pricing);
    let report = replay_with(&t, none.as_mut(), &limits, &HeuristicCounter).unwrap();
    assert_eq!(report.totals.rounds_over_window, 0);
    let mut none = StrategyKind::None.build(tokens, Arc::new(HeuristicCounter)).unwrap();
    limits.max_output = tokens;
    let report = replay_with(&t, none.as_mut(), &limits, &HeuristicCounter).unwrap();
    assert_eq!(report.totals.rounds_over_window, report.totals.requests);
}

/// A counter that counts its own work: how many messages (and texts) it was asked to
/// count. The replay's cost is dominated by counting, so this measures its complexity
/// without a clock.
#[derive(Default)]
struct Tally {
    counted: std::sync::atomic::AtomicU64,
}

impl Tally {
    fn take(&self) -> u64 {
        self.counted.swap(0, std::sync::atomic::Ordering::Relaxed)
    }
}

impl TokenCounter for Tally {
    fn name(&self) -> &str {
        "tally"
    }

    fn count_text(&self, text: &str) -> usize {
        self.counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HeuristicCounter.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        self.counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HeuristicCounter.count_message(message)
    }
}

/// Messages counted to replay `rounds` rounds under `kind` at `window`.
fn work(kind: StrategyKind, rounds: usize, window: usize) -> u64 {
    let t = trajectory(rounds);
    let tally = Arc::new(Tally::default());
    let mut strategy = kind.build(window, tally.clone()).unwrap();
    replay_with(
        &t,
        strategy.as_mut(),
        &ReplayLimits::new(window, &Pricing::ANTHROPIC),
        tally.as_ref(),
    )
    .unwrap();
    tally.take()
}

/// Issue 10, item 12: a replay is linear in the rounds apart from the compactions
/// themselves. Work is measured as messages counted (no clock): at a fixed window,
/// doubling the rounds must about double it, for every strategy (the passes double too,
/// and each counts a conversation the window bounds). A replay that recounts the whole
/// conversation every round, as the first release's did, quadruples it.
#[test]
fn replay_work_grows_linearly_with_the_rounds() {
    let window = 20_000;
    for kind in StrategyKind::ALL {
        let small = work(kind, 400, window);
        let large = work(kind, 800, window);
        assert!(
            large <= small * 5 / 2,
            "{kind}: {small} messages counted for 400 rounds, {large} for 800: not linear"
        );
    }
}
