//! The check of a prepared compaction (issue 28): a pass computed over a frozen snapshot
//! is installed only while its snapshot is still an exact prefix of the conversation,
//! with the ledger lines that changed since amended, or discarded when its prose names
//! them; the install is validated and topped up within the new messages.

use crate::engine_support;

use std::sync::Arc;

use engine_support::{Scripted, reply, run};
use llm_compactor::compactor::PreparedPass;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::plan::prepared::{CHANGED_HEADING, Change, DiscardReason, InstallPlan, Verdict};
use llm_compactor::{Compactor, CompactorConfig, Message, ToolCall};
use proptest::prelude::*;

/// One round of the agent: an assistant turn with one call and its result.
fn round(id: &str, args: serde_json::Value, result: &str) -> Vec<Message> {
    vec![
        Message::assistant("working").with_tool_calls(vec![ToolCall::new(id, "bash", args.to_string())]),
        Message::tool(id, result),
    ]
}

/// A round of kind `kind` numbered `n` (ids are unique by `n`).
fn round_of(kind: u8, n: usize) -> Vec<Message> {
    let id = format!("call_{n}");
    match kind % 5 {
        0 => round(
            &id,
            serde_json::json!({"command": format!("cat src/f{}.py", n % 4)}),
            &format!("<returncode>0</returncode>\n{}", "def f(): pass\n".repeat(220)),
        ),
        1 => round(
            &id,
            serde_json::json!({"command": "pytest tests/test_parser.py"}),
            "<returncode>1</returncode>\nFAILED tests/test_parser.py::test_empty - KeyError: 'x'",
        ),
        2 => round(
            &id,
            serde_json::json!({"command": "pytest tests/test_parser.py"}),
            "<returncode>0</returncode>\n1 passed",
        ),
        3 => round(
            &id,
            serde_json::json!({"command": format!("rm src/f{}.py", n % 4)}),
            "<returncode>0</returncode>",
        ),
        _ => vec![Message::user(format!("Now also handle case {n}."))],
    }
}

fn history(kinds: &[u8]) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent.").sticky(),
        Message::user("Fix the crash in the parser."),
    ];
    for (n, kind) in kinds.iter().enumerate() {
        messages.extend(round_of(*kind, n));
    }
    messages
}

fn compactor(prose: &str) -> Compactor {
    let config = CompactorConfig::builder(8_000)
        .keep_recent(4)
        .age_observations(false)
        .build()
        .unwrap();
    Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(Scripted::always(reply(prose)))
        .with_ledger(LedgerPolicy::default())
}

fn prepare(compactor: &Compactor, snapshot: &[Message]) -> PreparedPass {
    let result = run(compactor, snapshot).unwrap();
    PreparedPass::new(snapshot, result)
}

/// The plan for `current`, with the digest computed from scratch.
fn plan_for(compactor: &Compactor, prepared: &PreparedPass, current: &[Message]) -> (Verdict, InstallPlan) {
    let digest = (current.len() >= prepared.snapshot.len)
        .then(|| llm_compactor::message::conversation_digest(&current[..prepared.snapshot.len]));
    let check = prepared.check(current, digest.as_deref(), compactor);
    let plan = prepared.plan(current, &check, compactor, &HeuristicCounter, Some(usize::MAX));
    (check.verdict, plan)
}

#[test]
fn an_unchanged_prefix_installs_the_replacement_and_every_message_since() {
    let compactor = compactor("The agent is reading the parser sources.");
    let snapshot = history(&[0, 0, 0, 0, 0, 0]);
    let prepared = prepare(&compactor, &snapshot);
    assert!(prepared.result.cut_index > 0, "the pass summarized");
    let mut current = snapshot.clone();
    current.extend(round_of(0, 40));
    let (verdict, plan) = plan_for(&compactor, &prepared, &current);
    assert_eq!(verdict, Verdict::Install);
    let InstallPlan::Install(installed) = plan else {
        panic!("{plan:?}")
    };
    let mut expected = prepared.result.messages.clone();
    expected.extend(current[snapshot.len()..].iter().cloned());
    assert_eq!(installed.messages, expected);
    assert!(installed.top_up.is_empty());
    // As a result over the current conversation it replays like any pass.
    let result = prepared.installed_result(&current, *installed, &compactor, &HeuristicCounter);
    engine_support::check(&current, &result);
}

#[test]
fn a_resolved_error_amends_the_ledger_line_when_the_prose_does_not_name_it() {
    let compactor = compactor("The agent investigates a crash.");
    let snapshot = history(&[0, 1, 0, 0, 0, 0]);
    let prepared = prepare(&compactor, &snapshot);
    assert!(
        prepared
            .result
            .summary
            .contains("FAILED tests/test_parser.py::test_empty")
    );
    let mut current = snapshot.clone();
    current.extend(round_of(2, 40));
    let (verdict, plan) = plan_for(&compactor, &prepared, &current);
    let Verdict::Amend { changes } = verdict else {
        panic!("{verdict:?}")
    };
    assert!(matches!(&changes[..], [Change::ErrorResolved { text }] if text.contains("test_empty")));
    let InstallPlan::Install(installed) = plan else {
        panic!("{plan:?}")
    };
    let line = installed
        .summary
        .lines()
        .find(|l| l.contains("FAILED tests/test_parser.py::test_empty"))
        .unwrap();
    assert!(
        line.ends_with("[resolved since: see the messages after this summary]"),
        "{line}"
    );
    assert!(installed.messages.iter().any(|m| m.text() == installed.summary));
}

#[test]
fn a_resolved_error_the_prose_names_discards_the_summary() {
    let compactor = compactor("The test test_parser.py::test_empty fails with KeyError; fixing it next.");
    let snapshot = history(&[0, 1, 0, 0, 0, 0]);
    let prepared = prepare(&compactor, &snapshot);
    let mut current = snapshot.clone();
    current.extend(round_of(2, 40));
    let (verdict, plan) = plan_for(&compactor, &prepared, &current);
    let Verdict::Discard { reasons } = verdict else {
        panic!("{verdict:?}")
    };
    assert!(matches!(&reasons[0], DiscardReason::ProseDepends { .. }), "{reasons:?}");
    assert_eq!(plan, InstallPlan::Discarded);
}

#[test]
fn a_deleted_file_and_a_newer_request_are_amendments() {
    let compactor = compactor("The agent reads sources.");
    let snapshot = history(&[0, 0, 0, 0, 0, 0]);
    let prepared = prepare(&compactor, &snapshot);
    let mut current = snapshot.clone();
    current.extend(round_of(3, 41)); // rm src/f1.py
    current.extend(round_of(4, 42));
    let (verdict, plan) = plan_for(&compactor, &prepared, &current);
    let Verdict::Amend { changes } = verdict else {
        panic!("{verdict:?}")
    };
    assert!(
        changes.iter().any(
            |c| matches!(c, Change::FileChanged { path, operation } if path == "src/f1.py" && operation == "delete")
        ),
        "{changes:?}"
    );
    assert!(
        changes.iter().any(|c| matches!(c, Change::NewerRequest { .. })),
        "{changes:?}"
    );
    let InstallPlan::Install(installed) = plan else {
        panic!("{plan:?}")
    };
    assert!(
        installed
            .summary
            .contains("[superseded: a newer request follows this summary]")
            || installed.summary.contains(CHANGED_HEADING)
    );
    assert!(installed.summary.contains("[delete since"), "{}", installed.summary);
}

#[test]
fn new_messages_over_the_goal_are_topped_up_by_elision_or_sent_inline() {
    let compactor = compactor("The agent reads sources.");
    let snapshot = history(&[0, 0, 0, 0, 0, 0]);
    let prepared = prepare(&compactor, &snapshot);
    let mut current = snapshot.clone();
    for n in 40..52 {
        current.extend(round_of(0, n));
    }
    let digest = llm_compactor::message::conversation_digest(&current[..snapshot.len()]);
    let check = prepared.check(&current, Some(&digest), &compactor);
    assert_eq!(check.verdict, Verdict::Install);
    let target = compactor.config().target();
    let plan = prepared.plan(&current, &check, &compactor, &HeuristicCounter, Some(usize::MAX));
    let InstallPlan::Install(installed) = plan else {
        panic!("{plan:?}")
    };
    assert!(!installed.top_up.is_empty());
    assert!(installed.top_up.iter().all(|e| e.index >= snapshot.len()));
    assert!(installed.tokens <= target || installed.over_goal);
    assert!(installed.tokens < HeuristicCounter.count_messages(&current));
    let result = prepared.installed_result(&current, *installed, &compactor, &HeuristicCounter);
    engine_support::check(&current, &result);
    // With a ceiling the top-up cannot reach, the plan asks for an inline pass.
    let plan = prepared.plan(&current, &check, &compactor, &HeuristicCounter, Some(50));
    assert!(matches!(plan, InstallPlan::NeedsInline { ceiling: 50, .. }), "{plan:?}");
}

/// What happens to the conversation after the snapshot.
#[derive(Clone, Debug)]
enum Event {
    /// A round arrives (a request, possibly concurrent with the prepared pass).
    Append(u8),
    /// A message is edited.
    Edit(usize, String),
    /// An edited message is put back as it was.
    Restore(usize),
    /// History is rewound by this many messages.
    Rewind(usize),
    /// Another pass (inline, another instance) compacted the conversation.
    Compact,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => any::<u8>().prop_map(Event::Append),
        2 => (any::<usize>(), "[a-z ]{0,12}").prop_map(|(i, t)| Event::Edit(i, t)),
        1 => any::<usize>().prop_map(Event::Restore),
        1 => (1usize..6).prop_map(Event::Rewind),
        1 => Just(Event::Compact),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// 0 prepared results installed over a changed prefix: after every event, a plan
    /// that installs has the snapshot as an exact prefix, rebuilds as the replacement
    /// plus every message since, and passes the validator (inside the plan).
    #[test]
    fn no_prepared_result_is_installed_over_a_changed_prefix(
        kinds in proptest::collection::vec(any::<u8>(), 5..12),
        prose in prop_oneof![Just("The agent reads sources."), Just("Fixing src/f1.py; test_parser.py::test_empty fails.")],
        events in proptest::collection::vec(event(), 1..10),
    ) {
        let compactor = compactor(prose);
        let snapshot = history(&kinds);
        let prepared = prepare(&compactor, &snapshot);
        let original = snapshot.clone();
        let mut current = snapshot.clone();
        let mut n = 100;
        let mut installs = 0;
        for event in events {
            match event {
                Event::Append(kind) => {
                    n += 1;
                    current.extend(round_of(kind, n));
                }
                Event::Edit(i, text) if !current.is_empty() => {
                    let i = i % current.len();
                    current[i].content = llm_compactor::message::Content::Text(text);
                }
                Event::Restore(i) if !current.is_empty() => {
                    let i = i % current.len().min(original.len());
                    current[i] = original[i].clone();
                }
                Event::Rewind(k) => current.truncate(current.len().saturating_sub(k)),
                Event::Compact => {
                    let result = run(&compactor, &current).unwrap();
                    current = result.messages;
                }
                _ => {}
            }
            let (verdict, plan) = plan_for(&compactor, &prepared, &current);
            let prefix_same = current.len() >= snapshot.len()
                && current[..snapshot.len()].iter().zip(&snapshot).all(|(a, b)| a.eq_for_digest(b));
            if let InstallPlan::Install(installed) = plan {
                installs += 1;
                prop_assert!(prefix_same, "installed over a changed prefix: {verdict:?}");
                prop_assert_eq!(installed.messages.len(), prepared.result.messages.len() + current.len() - snapshot.len());
                let since = llm_compactor::plan::apply_elisions(&current, &installed.top_up);
                prop_assert_eq!(&installed.messages[prepared.result.messages.len()..], &since[snapshot.len()..]);
            } else if !prefix_same {
                prop_assert!(!verdict.installable(), "{verdict:?}");
            }
        }
        let _ = installs;
    }
}
