//! The pure planning core: cut, eligibility, stubs, trim, assembly, validation.

use crate::engine_support;

use engine_support::{conversation, round, tokens};
use llm_compactor::compactor::Elision;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::{
    self, AgingRules, EligibleReason, Pairs, TrimSearch, Violation, apply_elisions, assemble, eligible, is_stub,
    layout, reclaimable_pool, stub_text, validate,
};

const RULES: AgingRules = AgingRules {
    min_chars: 100,
    reclaim_min: 1000,
};

#[test]
fn cut_moves_back_over_tool_results() {
    // 0 sys, 1 user, 2 ask(3 calls), 3,4,5 results, 6 assistant
    let messages = vec![
        Message::system("s"),
        Message::user("u"),
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("a", "t", "{}"),
            ToolCall::new("b", "t", "[]"),
            ToolCall::new("c", "t", "1"),
        ]),
        Message::tool("a", "1"),
        Message::tool("b", "2"),
        Message::tool("c", "3"),
        Message::assistant("done"),
    ];
    // keep_recent 3 would start at index 4 (a tool result): moved back to the asking turn.
    let l = layout(&messages, 3);
    assert_eq!(l.recent_start, 2);
    assert_eq!(l.cut, Some(1));
    assert_eq!(l.middle, vec![1]);
    // keep_recent 1 starts at 6: no move.
    let l = layout(&messages, 1);
    assert_eq!((l.recent_start, l.cut), (6, Some(5)));
    assert_eq!(l.middle, vec![1, 2, 3, 4, 5]);
    // keep_recent bigger than the conversation: no cut, no middle.
    let l = layout(&messages, 50);
    assert_eq!((l.cut, l.cut_index(), l.middle.len()), (None, -1, 0));
    assert!(l.is_noop());
}

#[test]
fn sticky_messages_are_never_in_the_middle() {
    let messages = vec![
        Message::system("s"),
        Message::user("a"),
        Message::user("pinned").sticky(),
        Message::user("b"),
        Message::user("injected").at_depth(2),
        Message::user("c"),
        Message::user("d"),
    ];
    let l = layout(&messages, 2);
    assert_eq!(l.cut, Some(4));
    assert_eq!(l.middle, vec![1, 3]);
    let (out, dropped) = assemble(&messages, 4, "SUMMARY");
    assert_eq!(dropped, 2);
    let texts: Vec<String> = out.iter().map(Message::text).collect();
    assert_eq!(texts, ["s", "pinned", "injected", "SUMMARY", "c", "d"]);
    assert!(!out[3].is_sticky());
    assert_eq!(out[3].role.as_str(), "user");
}

#[test]
fn stubs_are_pure_and_recognised() {
    assert_eq!(
        stub_text(41062, Some("fs_read")),
        "[elided by the harness: 41062-char fs_read result; re-run the call if you need it again]"
    );
    assert_eq!(
        stub_text(41062, None),
        "[elided by the harness: 41062-char result; re-run the call if you need it again]"
    );
    assert_eq!(stub_text(7, Some("x")), stub_text(7, Some("x")));
    assert!(is_stub(&stub_text(5, Some("bash")).as_str().into()));
    assert!(!is_stub(&"plain".into()));
    assert!(!is_stub(
        &"[elided by the harness: x-char result; re-run the call if you need it again]".into()
    ));
}

/// sys, user, then rounds 0..4 of `size` chars, then a filler user message of `tail` chars,
/// then two recent messages.
fn aging_conversation(size: usize, tail: usize) -> Vec<Message> {
    let mut m = vec![Message::system("s"), Message::user("task")];
    for i in 0..4 {
        m.extend(round(&format!("c{i}"), "fs_read", &format!("{{\"p\":{i}}}"), size));
    }
    m.push(Message::user("x".repeat(tail)));
    m.push(Message::assistant("recent 1"));
    m.push(Message::user("recent 2"));
    m
}

#[test]
fn eligibility_matrix() {
    // Fat results followed by an epoch of content: all four eligible.
    let m = aging_conversation(500, 1000);
    let pairs = Pairs::build(&m);
    let l = layout(&m, 2);
    let e = eligible(&m, &pairs, &l, RULES);
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 5, 7, 9]);
    assert!(e.iter().all(|e| e.reason == EligibleReason::Aged && e.chars == 500));
    assert_eq!(e[0].stub, stub_text(500, Some("fs_read")));
    assert_eq!(reclaimable_pool(&e), 2000);

    // Not fat enough (size == min_chars is not "longer than").
    let m = aging_conversation(100, 1000);
    let pairs = Pairs::build(&m);
    assert!(eligible(&m, &pairs, &layout(&m, 2), RULES).is_empty());

    // Inside the recent window: keep_recent big enough to cover the last round.
    let m = aging_conversation(500, 1000);
    let pairs = Pairs::build(&m);
    let e = eligible(&m, &pairs, &layout(&m, 5), RULES);
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 5, 7]);

    // Sticky results and stubs are never eligible.
    let mut m = aging_conversation(500, 1000);
    m[3].sticky = true;
    m[5].content = stub_text(500, Some("fs_read")).into();
    let pairs = Pairs::build(&m);
    let e = eligible(&m, &pairs, &layout(&m, 2), RULES);
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [7, 9]);

    // Non-tool messages are never eligible however fat.
    let mut m = aging_conversation(10, 1000);
    m[1] = Message::user("y".repeat(5000));
    let pairs = Pairs::build(&m);
    assert!(eligible(&m, &pairs, &layout(&m, 2), RULES).is_empty());
}

#[test]
fn trailing_grace_is_measured_in_content() {
    // After result 9 come: the tail user message (t chars) + "recent 1" (8) + "recent 2" (8).
    for (tail, eligible_last) in [(984, true), (983, false)] {
        let m = aging_conversation(500, tail);
        let pairs = Pairs::build(&m);
        let e = eligible(&m, &pairs, &layout(&m, 2), RULES);
        assert_eq!(e.iter().any(|e| e.index == 9), eligible_last, "tail {tail}");
        // Earlier results have later fat results after them: always eligible.
        assert!(e.iter().any(|e| e.index == 3));
    }
}

#[test]
fn duplicate_identity_loop_breaker() {
    // The same call (arguments in another key order) answered three times; small results,
    // no grace at all.
    let mut m = vec![Message::system("s")];
    m.extend(round("a", "fs_read", r#"{"path":"x","n":1}"#, 300));
    m.extend(round("b", "fs_read", r#"{"n":1,"path":"x"}"#, 300));
    m.extend(round("c", "fs_list", r#"{"path":"x"}"#, 300));
    m.extend(round("d", "fs_read", r#"{"n": 1, "path": "x"}"#, 300));
    m.push(Message::user("recent"));
    let rules = AgingRules {
        min_chars: 10_000,
        reclaim_min: 1_000_000,
    };
    let pairs = Pairs::build(&m);
    // keep_recent 1: the newest copy (index 8) is in the middle but protected.
    let e = eligible(&m, &pairs, &layout(&m, 1), rules);
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [2, 4]);
    assert!(e.iter().all(|e| e.reason == EligibleReason::Duplicate));
    // Once stubbed, older copies are not eligible again, the newest stays protected.
    let elisions: Vec<Elision> = e.iter().map(|e| Elision::new(e.index, e.stub.clone())).collect();
    let aged = apply_elisions(&m, &elisions);
    let pairs = Pairs::build(&aged);
    assert!(eligible(&aged, &pairs, &layout(&aged, 1), rules).is_empty());
    // A result whose asking turn is gone has no identity: ordinary rules.
    let orphaned: Vec<Message> = m
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, m)| m.clone())
        .collect();
    let pairs = Pairs::build(&orphaned);
    let e = eligible(&orphaned, &pairs, &layout(&orphaned, 1), rules);
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [3]);
}

#[test]
fn a_stub_never_replaces_something_shorter() {
    let mut m = vec![Message::system("s")];
    m.extend(round("a", "t", "{}", 20));
    m.extend(round("b", "t", "{}", 20));
    m.push(Message::user("recent"));
    let pairs = Pairs::build(&m);
    assert!(eligible(&m, &pairs, &layout(&m, 1), RULES).is_empty());
}

#[test]
fn trim_is_pair_aligned_and_never_touches_the_recent_window() {
    let m = conversation(10, 400);
    let pairs = Pairs::build(&m);
    let l = layout(&m, 3);
    let before = tokens(&m);
    let goal = before / 2;
    let mut count = |x: &[Message]| tokens(x);
    let t = TrimSearch::new(&m, &pairs, &l, goal)
        .ceiling(before)
        .plan_by(&mut count)
        .unwrap();
    assert!(t.tokens <= goal);
    // The first message after the notice is never a tool result.
    let notice_at = t.messages.iter().position(|x| x.text() == t.notice).unwrap();
    assert!(!t.messages[notice_at + 1].is_tool_result());
    assert!(validate(&m, &t.messages, l.recent_start).is_ok());
    // Least destructive: dropping one round less would not fit.
    let (fewer, _) = assemble(&m, t.cut_index - 2, &t.notice);
    assert!(tokens(&fewer) > goal);
    // An impossible goal: the whole middle goes, the recent window stays.
    let t = TrimSearch::new(&m, &pairs, &l, 1)
        .ceiling(before)
        .plan_by(&mut count)
        .unwrap();
    assert_eq!(t.cut_index, l.cut.unwrap());
    assert_eq!(t.messages[t.messages.len() - 3..], m[l.recent_start..]);
    assert!(
        t.notice
            .contains(&format!("{} earlier messages were dropped unsummarized", t.dropped))
    );
    assert!(t.notice.contains("ask the user rather than guess"));
}

#[test]
fn validator_catches_every_violation() {
    let m = conversation(3, 10);
    let l = layout(&m, 2);
    assert_eq!(validate(&m, &m, l.recent_start), Ok(()));
    // Drop an asking turn, keep its result.
    let mut orphan = m.clone();
    orphan.remove(2);
    assert!(matches!(
        validate(&m, &orphan, l.recent_start),
        Err(Violation::Orphan { .. })
    ));
    // Drop a result, keep its asking turn.
    let mut unanswered = m.clone();
    unanswered.remove(3);
    assert!(matches!(
        validate(&m, &unanswered, l.recent_start),
        Err(Violation::Unanswered { .. })
    ));
    // Lose the system prompt.
    assert_eq!(validate(&m, &m[1..], l.recent_start), Err(Violation::StickyChanged));
    // Touch the recent window.
    let mut recent = m.clone();
    let last = recent.len() - 1;
    recent[last] = Message::user("changed");
    assert_eq!(validate(&m, &recent, l.recent_start), Err(Violation::RecentChanged));
    // An orphan already in the input is not a new one.
    let input: Vec<Message> = m
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, x)| x.clone())
        .collect();
    assert_eq!(validate(&input, &input, input.len()), Ok(()));
}

#[test]
fn elisions_keep_role_position_and_id() {
    let m = conversation(2, 5000);
    let stub = stub_text(5000, Some("fs_read"));
    let aged = apply_elisions(&m, &[Elision::new(3, stub.clone())]);
    assert_eq!(aged.len(), m.len());
    assert_eq!(aged[3].text(), stub);
    assert_eq!(aged[3].tool_call_id, m[3].tool_call_id);
    assert_eq!(aged[3].role, m[3].role);
    assert_eq!(aged[2], m[2]);
    let _ = plan::SUMMARY_HEADER;
}
