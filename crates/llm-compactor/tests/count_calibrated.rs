//! The calibrated usage counter, rule by rule: a matching prefix anchors on the bill; a
//! changed prefix or a shorter list is counted with the fallback (the record kept for
//! the conversation it matches); a changed model forgets it; a report without usage keeps
//! it; one instance is shared by threads; asking the compactor whether an epoch is due
//! does not change the counter's answers.

use std::sync::Arc;

use llm_compactor::count::{CalibratedCounter, HeuristicCounter, MemoCounter, TokenCounter};
use llm_compactor::{Message, Usage};

fn conversation(n: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are a careful coding agent.")];
    for i in 1..n {
        if i % 2 == 1 {
            messages.push(Message::user(format!("step {i}: please look at file_{i}.rs")));
        } else {
            messages.push(Message::assistant(format!("Looked at it, round {i}.")));
        }
    }
    messages
}

fn h(messages: &[Message]) -> usize {
    HeuristicCounter.count_messages(messages)
}

#[test]
fn without_a_record_it_is_the_fallback() {
    let counter = CalibratedCounter::new();
    let m = conversation(5);
    assert_eq!(counter.count_messages(&m), h(&m));
    assert_eq!(counter.name(), "calibrated");
    assert!(counter.calibration().is_none());
}

#[test]
fn a_matching_prefix_counts_bill_plus_fallback_of_the_rest() {
    let counter = CalibratedCounter::new();
    let m = conversation(6);
    counter.record(&m[..4], "gpt-4o", Some(5_000));
    assert_eq!(counter.count_messages(&m[..4]), 5_000);
    assert_eq!(counter.count_messages(&m), 5_000 + h(&m[4..]));
    let record = counter.calibration().expect("kept");
    assert_eq!(
        (record.messages, record.billed_prompt_tokens, record.model.as_str()),
        (4, 5_000, "gpt-4o")
    );
    // A matching prefix keeps the record across counts.
    assert_eq!(counter.count_messages(&m), 5_000 + h(&m[4..]));
}

#[test]
fn a_changed_prefix_falls_back_and_the_record_stays_for_the_conversation_it_matches() {
    let counter = CalibratedCounter::new();
    let m = conversation(6);
    counter.record(&m[..4], "gpt-4o", Some(5_000));
    let mut edited = m.clone();
    edited[2] = Message::user("[elided]");
    assert_eq!(counter.count_messages(&edited), h(&edited));
    // Counting another list (a compactor's candidate) is not a change of the
    // conversation: the original still anchors on its bill.
    assert!(counter.calibration().is_some());
    assert_eq!(counter.count_messages(&m), 5_000 + h(&m[4..]));
}

#[test]
fn a_shorter_list_falls_back_and_the_record_stays() {
    let counter = CalibratedCounter::new();
    let m = conversation(6);
    counter.record(&m, "gpt-4o", Some(9_000));
    assert_eq!(counter.count_messages(&m[..3]), h(&m[..3]));
    assert_eq!(counter.count_messages(&m), 9_000);
}

#[test]
fn asking_whether_an_epoch_is_due_does_not_change_the_answer() {
    use llm_compactor::message::ToolCall;
    use llm_compactor::plan::CostPolicy;
    use llm_compactor::{Compactor, CompactorConfig};
    // An agent run with fat old results: below the trigger, a whole epoch eligible.
    let mut m = vec![Message::system("You are an agent."), Message::user("Fix the bug.")];
    for i in 0..12 {
        let id = format!("c{i}");
        m.push(Message::assistant("").with_tool_calls(vec![ToolCall::new(
            id.clone(),
            "read",
            format!("{{\"path\":\"f{i}\"}}"),
        )]));
        m.push(Message::tool(id, format!("line {i}\n").repeat(400)));
    }
    let counter = Arc::new(CalibratedCounter::with_fallback(Arc::new(HeuristicCounter)));
    let config = CompactorConfig::builder(200_000)
        .age_observations(true)
        .age_min_chars(500)
        .age_reclaim_min(5_000)
        .keep_recent(2)
        .cost_policy(CostPolicy {
            epoch_ratio: None,
            ..CostPolicy::default()
        })
        .build()
        .unwrap();
    let compactor = Compactor::new(config, counter.clone());
    // The loop's last bill: the whole conversation as sent.
    counter.record(&m, "gpt-4o", Some(31_000));
    assert_eq!(counter.count_messages(&m), 31_000);
    let first = compactor.epoch_decision(&m, 31_000);
    let (_, receipt) = first.clone().expect("an epoch is due");
    assert_eq!(receipt.tokens_before, 31_000, "the receipt starts from the bill");
    // The decision counted a stubbed copy; the loop's calibration is intact...
    assert_eq!(counter.count_messages(&m), 31_000);
    // ...and the same question gets the same answer.
    assert_eq!(
        format!("{first:?}"),
        format!("{:?}", compactor.epoch_decision(&m, 31_000))
    );
    assert_eq!(compactor.needs_compaction(&m), compactor.needs_compaction(&m));
}

#[test]
fn a_changed_model_forgets_the_record() {
    let counter = CalibratedCounter::new();
    let m = conversation(4);
    counter.record(&m, "gpt-4o", Some(3_000));
    assert_eq!(counter.count_for_model(&m, "gpt-4o"), 3_000);
    assert_eq!(counter.count_for_model(&m, "claude-sonnet-4"), h(&m));
    assert!(counter.calibration().is_none());

    // A usage-less report from another model forgets too.
    counter.record(&m, "gpt-4o", Some(3_000));
    counter.record(&m, "claude-sonnet-4", None);
    assert!(counter.calibration().is_none());
    assert_eq!(counter.count_messages(&m), h(&m));
}

#[test]
fn a_report_without_usage_keeps_the_record() {
    let counter = CalibratedCounter::new();
    let m = conversation(6);
    counter.record(&m[..4], "gpt-4o", Some(4_321));
    counter.record(&m, "gpt-4o", None);
    counter.record_optional_usage(&m, "gpt-4o", None);
    counter.record_usage(&m, "gpt-4o", &Usage::default());
    assert_eq!(counter.calibration().map(|r| r.messages), Some(4));
    assert_eq!(counter.count_messages(&m), 4_321 + h(&m[4..]));
}

#[test]
fn a_new_bill_replaces_the_record_and_usage_helpers_use_input_tokens() {
    let counter = CalibratedCounter::new();
    let m = conversation(8);
    counter.record(&m[..4], "gpt-4o", Some(1_000));
    // Anthropic: input_tokens already sums input + cache read + cache creation.
    let usage = Usage {
        input_tokens: 1_700,
        output_tokens: 90,
        cache_read_tokens: 1_200,
        cache_write_tokens: 400,
    };
    counter.record_usage(&m[..6], "claude-sonnet-4", &usage);
    assert_eq!(counter.count_for_model(&m, "claude-sonnet-4"), 1_700 + h(&m[6..]));
    counter.record_optional_usage(&m, "claude-sonnet-4", Some(&usage));
    assert_eq!(counter.count_messages(&m), 1_700);
}

#[test]
fn requests_anchor_on_the_bill_which_already_includes_tools() {
    let counter = CalibratedCounter::new();
    let m = conversation(6);
    let tools = vec![serde_json::json!({"name": "bash"})];
    counter.record(&m[..4], "gpt-4o", Some(2_000));
    assert_eq!(counter.count_request(&m, &tools, "ctx"), 2_000 + h(&m[4..]));
    counter.forget();
    assert_eq!(
        counter.count_request(&m, &tools, "ctx"),
        HeuristicCounter.count_request(&m, &tools, "ctx")
    );
}

#[test]
fn any_fallback_can_be_configured() {
    let fallback: Arc<dyn TokenCounter> = Arc::new(MemoCounter::new(HeuristicCounter));
    let counter = CalibratedCounter::with_fallback(fallback.clone());
    let m = conversation(6);
    counter.record(&m[..2], "m", Some(77));
    assert_eq!(counter.count_messages(&m), 77 + fallback.count_messages(&m[2..]));
    assert_eq!(counter.count_text("abcd"), 1);
    assert_eq!(counter.fallback().name(), "heuristic");
    assert!(!counter.additive());
}

#[test]
fn one_instance_shared_by_threads() {
    let counter: Arc<CalibratedCounter> = Arc::new(CalibratedCounter::new());
    let shared: Arc<dyn TokenCounter> = counter.clone();
    let m = conversation(40);
    counter.record(&m[..20], "gpt-4o", Some(10_000));
    let expected = 10_000 + h(&m[20..]);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let shared = shared.clone();
            let counter = counter.clone();
            let m = &m;
            scope.spawn(move || {
                for round in 0..50 {
                    assert_eq!(shared.count_messages(m), expected, "thread {t} round {round}");
                    // Re-recording the same bill never disturbs the others.
                    counter.record(&m[..20], "gpt-4o", Some(10_000));
                    counter.record(&m[..20], "gpt-4o", None);
                }
            });
        }
    });
    assert_eq!(shared.count_messages(&m), expected);
}
