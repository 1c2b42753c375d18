//! Configured pins (issue 41, item 1): by pattern, by tool name, by message id. Each is
//! measured against the same pass without it, so each test can fail: what a pin keeps
//! must be lost without it.

use crate::chat_support::{self, Kind, compact};

use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::options::{OptionsOverlay, OverlayError};
use llm_compactor::plan::ledger::{LedgerPolicy, PinRules};
use llm_compactor::{Compactor, CompactorConfig};

fn compactor(budget: usize, pins: PinRules) -> Compactor {
    let mut policy = LedgerPolicy::default();
    policy.rules.pins = pins;
    Compactor::new(
        CompactorConfig::builder(budget).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_ledger(policy)
    .with_summarizer(Arc::new(LedgerSummarizer))
}

/// The planted instructions (all kinds) that survive `passes` passes at `budget`.
fn survivors(seed: u64, pct: usize, passes: usize, pins: &PinRules) -> (usize, usize, Vec<Message>) {
    let session = chat_support::session(seed, 65);
    let size = HeuristicCounter.count_messages(&session.messages);
    let budget = (size * pct / 100).max(256);
    let compactor = compactor(budget, pins.clone());
    let mut messages = session.messages.clone();
    for pass in 0..passes {
        if pass > 0 {
            messages.extend(chat_support::more_turns(seed, 1000 + pass * 15, 15));
        }
        let r = compact(&compactor, &messages);
        assert!(
            !r.exhausted && r.tokens_after <= budget,
            "seed {seed}: {} > {budget}",
            r.tokens_after
        );
        messages = r.messages;
    }
    let kept = session
        .planted
        .iter()
        .filter(|p| chat_support::survives(p, &messages))
        .count();
    (kept, session.planted.len(), messages)
}

#[test]
fn a_pattern_pin_keeps_every_instruction_where_the_ledger_alone_loses_some() {
    // The user's instructions all start with a word and a colon ("Rule:", "Remember:").
    let pins = PinRules::new().pattern(r"(?m)^(Rule|Constraint|Fact|Task|Preference|Remember|Correction):");
    let (mut with, mut without, mut planted) = (0, 0, 0);
    for seed in 0..4 {
        let (kept, n, messages) = survivors(seed, 20, 5, &pins);
        with += kept;
        planted += n;
        without += survivors(seed, 20, 5, &PinRules::new()).0;
        // The replaced cap is never presented as current, pinned or not.
        let session = chat_support::session(seed, 65);
        let old_cap = session.planted.iter().find(|p| p.superseded).unwrap();
        assert!(
            chat_support::survives(old_cap, &messages),
            "seed {seed}: old cap presented as current"
        );
        assert_eq!(
            chat_support::listed(&session.planted[8].text, &messages),
            1,
            "seed {seed}: the repeated rule listed once"
        );
    }
    eprintln!(
        "20% of the session, five passes: {with}/{planted} planted instructions kept with the pin, {without}/{planted} without"
    );
    assert_eq!(
        with, planted,
        "every planted instruction survives five passes with the pin"
    );
    assert!(
        without < planted,
        "the control loses some ({without}/{planted}): else this test proves nothing"
    );
}

#[test]
fn a_pattern_pin_keeps_the_rules_at_ten_percent() {
    let pins = PinRules::new().pattern(r"(?m)^(Rule|Remember):");
    let (mut with, mut without, mut rules) = (0, 0, 0);
    for seed in 0..4 {
        let session = chat_support::session(seed, 65);
        let (_, _, pinned) = survivors(seed, 10, 1, &pins);
        let (_, _, plain) = survivors(seed, 10, 1, &PinRules::new());
        for planted in session.planted.iter().filter(|p| p.kind == Kind::Rule) {
            rules += 1;
            with += usize::from(chat_support::survives(planted, &pinned));
            without += usize::from(chat_support::survives(planted, &plain));
        }
    }
    eprintln!("10%: rules kept {with}/{rules} with the pin, {without}/{rules} without");
    assert_eq!(with, rules);
    assert!(without < rules);
}

/// A tool loop whose early `memory` result and brief would be summarized away.
fn tool_loop() -> Vec<Message> {
    let mut brief = Message::user("Brief: port the billing module to the new API; keep invoice numbers stable.");
    brief.id = Some("msg_brief".into());
    let mut messages = vec![Message::system("You are a coding agent."), brief];
    messages.push(Message::assistant("Noting that.").with_tool_calls(vec![ToolCall::new(
        "m1",
        "memory",
        r#"{"note":"invoice prefix"}"#,
    )]));
    messages.push(Message::tool(
        "m1",
        "Saved: invoice numbers use the prefix INV-2026- and never reset.",
    ));
    for i in 0..40 {
        let id = format!("c{i}");
        messages.push(
            Message::assistant(format!("Step {i}.")).with_tool_calls(vec![ToolCall::new(
                &id,
                "bash",
                format!(r#"{{"command":"cat src/billing/part{i}.py"}}"#),
            )]),
        );
        messages.push(Message::tool(
            &id,
            format!("# part {i}\n{}", "def f(): pass\n".repeat(30)),
        ));
    }
    messages.push(Message::user("Now run the tests."));
    messages
}

#[test]
fn tool_and_id_pins_keep_a_memory_result_and_a_brief_whole() {
    let messages = tool_loop();
    let memory = "Saved: invoice numbers use the prefix INV-2026- and never reset.";
    let brief = "Brief: port the billing module to the new API; keep invoice numbers stable.";
    let text = |m: &[Message]| m.iter().map(Message::text).collect::<Vec<_>>().join("\n");
    let pinned = compact(
        &compactor(1_500, PinRules::new().tool("memory").id("msg_brief")),
        &messages,
    );
    let plain = compact(&compactor(1_500, PinRules::new()), &messages);
    assert!(pinned.tokens_after <= 1_500 && !pinned.exhausted);
    let (with, without) = (text(&pinned.messages), text(&plain.messages));
    assert!(with.contains(&format!("[memory result] {memory}")), "{with}");
    assert!(with.contains(brief), "{with}");
    assert!(!without.contains(memory), "the control must lose the memory result");
}

#[test]
fn a_bad_pattern_is_refused_naming_the_option() {
    let mut overlay = OptionsOverlay::new();
    overlay.pin_patterns = Some(vec!["^Rule:".into(), "(unclosed".into()]);
    let error = overlay.config().unwrap_err();
    assert!(matches!(error, OverlayError::Pin(_)), "{error:?}");
    assert_eq!(error.option(), Some("pin_patterns"));
    assert!(error.to_string().contains("(unclosed"), "{error}");
    let mut ok = OptionsOverlay::new();
    ok.pin_tools = Some(vec!["memory".into()]);
    assert_eq!(ok.ledger().unwrap().rules.pins, PinRules::new().tool("memory"));
}
