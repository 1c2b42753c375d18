//! Issue 33: the named policies (`Policy::Default`, `Policy::Economy`), the default's
//! epoch horizon discounted by the run's own length, and economy's batched masking below
//! the trigger.

use std::sync::Arc;

use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::plan::CostPolicy;
use llm_compactor::simulate::ours::Ours;
use llm_compactor::simulate::{Pricing, StrategyKind, TrajectoryReport, replay};
use llm_compactor::{CompactorConfig, Message, Policy, ToolCall};

/// A run: `big` results of `big_chars`, then `small` results of `small_chars` (under the
/// aging size floor), then a final answer.
fn run(big: usize, big_chars: usize, small: usize, small_chars: usize) -> Vec<Message> {
    let mut m = vec![Message::system("You are an agent."), Message::user("Fix the bug.")];
    for i in 0..big + small {
        let id = format!("c{i}");
        m.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            &id,
            "read",
            format!("{{\"path\":\"f{i}\"}}"),
        )]));
        let chars = if i < big { big_chars } else { small_chars };
        let line = format!("line {i} of the file, some code here;\n");
        m.push(Message::tool(&id, line.repeat(chars / line.len() + 1)));
    }
    m.push(Message::assistant("Done."));
    m
}

fn bill(trajectory: &[Message], config: Option<CompactorConfig>, window: usize) -> TrajectoryReport {
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    let mut strategy: Box<dyn llm_compactor::simulate::Strategy> = match config {
        Some(c) => Box::new(Ours::with_config("ours", c, counter.clone()).unwrap()),
        None => StrategyKind::None.build(window, counter.clone()).unwrap(),
    };
    replay(
        trajectory,
        strategy.as_mut(),
        window,
        &Pricing::ANTHROPIC,
        counter.as_ref(),
    )
    .unwrap()
}

/// A run that never comes near a 128k window (peak ~27k tokens) with two fat reads
/// early: an epoch below the trigger is due a few requests before the run ends.
fn short_run() -> Vec<Message> {
    run(2, 50_000, 4, 1_500)
}

#[test]
fn the_default_runs_no_epoch_that_the_run_does_not_live_to_collect() {
    let window = 128_000;
    let t = short_run();
    let none = bill(&t, None, window);
    let trigger = CompactorConfig::builder(window).build().unwrap().trigger() as u64;
    assert!(
        none.totals.peak_context < trigger,
        "no request comes within the trigger"
    );
    let ours = bill(&t, Some(CompactorConfig::builder(window).build().unwrap()), window);
    assert!(
        ours.totals.cost <= none.totals.cost * 1.001,
        "default {} vs none {}",
        ours.totals.cost,
        none.totals.cost
    );
    assert_eq!(ours.totals.elision_epochs, 0);
    // The regression: counting every request of the horizon as certain (the rule before
    // issue 33) let the epoch through, and the run ended before it paid.
    let undiscounted = CostPolicy {
        discount_by_run_length: false,
        ..CostPolicy::default()
    };
    let old = bill(
        &t,
        Some(
            CompactorConfig::builder(window)
                .cost_policy(undiscounted)
                .build()
                .unwrap(),
        ),
        window,
    );
    assert_eq!(old.totals.elision_epochs, 1);
    assert!(old.totals.cost > none.totals.cost * 1.001);
}

/// A long run of many mid-sized observations: economy masks them below the trigger.
fn long_run() -> Vec<Message> {
    run(0, 0, 80, 1_800)
}

#[test]
fn economy_masks_old_observations_below_the_trigger_in_gated_batches() {
    let window = 128_000;
    let t = long_run();
    let economy = CompactorConfig::builder(window)
        .policy(Policy::Economy)
        .build()
        .unwrap();
    let trigger = economy.trigger() as u64;
    let none = bill(&t, None, window);
    assert!(
        none.totals.peak_context < trigger,
        "{} vs {trigger}",
        none.totals.peak_context
    );
    let e = bill(&t, Some(economy), window);
    // Observations of 1,800 chars are under the default's size floor: it masks nothing.
    let d = bill(&t, Some(CompactorConfig::builder(window).build().unwrap()), window);
    assert_eq!(d.totals.elision_epochs, 0);
    assert!(e.totals.elision_epochs >= 1, "economy masks below the trigger");
    assert_eq!(e.totals.compactions, 0, "no summary: it never reached its trigger");
    // In batches: far fewer cache breaks than requests, and each a net saving.
    let breaks = e.requests.iter().filter(|r| r.elision).count() as u64;
    assert_eq!(breaks, e.totals.elision_epochs);
    assert!(
        e.totals.elision_epochs * 2 < e.totals.requests,
        "{} epochs over {} requests",
        e.totals.elision_epochs,
        e.totals.requests
    );
    assert!(
        e.totals.cost < none.totals.cost,
        "{} vs {}",
        e.totals.cost,
        none.totals.cost
    );
    assert!(e.totals.peak_context < none.totals.peak_context);
}

#[test]
fn economy_is_gated_a_mask_that_does_not_pay_waits() {
    // A young run whose old observation sits near the top of the cache: masking it now
    // rewrites nearly the whole conversation for a run that may end in a request or two.
    let window = 128_000;
    let mut t = run(1, 4_000, 3, 6_000);
    t.pop();
    let economy = CompactorConfig::builder(window)
        .policy(Policy::Economy)
        .build()
        .unwrap();
    let compactor = llm_compactor::Compactor::new(economy, Arc::new(HeuristicCounter));
    let tokens = HeuristicCounter.count_messages(&t);
    let (decision, receipt) = compactor.epoch_decision(&t, tokens).expect("an epoch is due");
    assert_eq!(decision, llm_compactor::plan::EpochDecision::DoesNotPay, "{receipt:?}");
    assert!(receipt.tokens_shed > 0 && receipt.sheds_but_costs());
    assert!(!compactor.needs_compaction(&t));
    // Ungated (the seed's rule), the same mask would run.
    let ungated = CompactorConfig::builder(window)
        .policy(Policy::Economy)
        .cost_policy(CostPolicy {
            gate_epochs: false,
            ..Policy::Economy.cost_policy()
        })
        .build()
        .unwrap();
    assert!(llm_compactor::Compactor::new(ungated, Arc::new(HeuristicCounter)).needs_compaction(&t));
}

#[test]
fn a_setter_after_the_policy_overrides_it() {
    let c = CompactorConfig::builder(100_000)
        .policy(Policy::Economy)
        .trigger_ratio(0.6)
        .build()
        .unwrap();
    assert_eq!((c.trigger(), c.target()), (60_000, 20_000));
    assert_eq!(c.policy, Policy::Economy);
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["policy"], "economy");
    // A configuration saved before policies existed reads as the default.
    let mut old = json.clone();
    old.as_object_mut().unwrap().remove("policy");
    let back: CompactorConfig = serde_json::from_value(old).unwrap();
    assert_eq!(back.policy, Policy::Default);
}
