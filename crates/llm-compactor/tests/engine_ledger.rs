//! The ledger in a pass: appended to a model's summary after the grounding gate, the
//! whole summary of the model-free `LedgerSummarizer`, and the fallback before the hard
//! trim when the model fails or loops. Each test fails without the rule it names.

use crate::engine_support;

use std::sync::Arc;

use engine_support::{Scripted, check, compactor, conversation, http, reply};
use llm_compactor::CompactOptions;
use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::compactor::{AttemptKind, AttemptOutcome};
use llm_compactor::plan::ledger::{LEDGER_HEADING, LedgerPolicy};

#[tokio::test]
async fn the_ledger_is_appended_to_a_model_summary() {
    let input = conversation(10, 400);
    let c = compactor(2000, Some(Scripted::always(reply("## Goals\nFix the bug in f3.rs."))))
        .with_ledger(LedgerPolicy::default());
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &result);
    assert!(!result.fallback);
    assert!(result.summary.contains("Fix the bug in f3.rs."));
    assert!(result.summary.contains(LEDGER_HEADING), "{}", result.summary);
    assert!(
        result.summary.contains("- Fix the bug."),
        "the user's request is supplied: {}",
        result.summary
    );
    assert!(result.summary.contains("f8.rs (read)"), "{}", result.summary);
    // f9.rs is in the recent window, not in the replaced middle.
    assert!(!result.summary.contains("f9.rs"), "{}", result.summary);
}

#[tokio::test]
async fn without_the_ledger_the_summary_is_exactly_the_models() {
    let input = conversation(10, 400);
    let c = compactor(2000, Some(Scripted::always(reply("Fix the bug in nowhere.rs."))));
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(result.summary.ends_with("\nFix the bug in nowhere.rs."));
}

#[tokio::test]
async fn invented_identifiers_are_flagged() {
    let input = conversation(10, 400);
    let c = compactor(2000, Some(Scripted::always(reply("Edited f3.rs and src/invented.rs."))))
        .with_ledger(LedgerPolicy::default());
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert!(
        result.summary.contains("src/invented.rs. [unverified]"),
        "{}",
        result.summary
    );
    assert!(!result.summary.contains("f3.rs and [unverified]"));
    let accepted = result
        .attempts
        .iter()
        .find(|a| a.outcome == AttemptOutcome::Accepted)
        .unwrap();
    assert!(
        accepted
            .note
            .as_deref()
            .unwrap()
            .contains("1 identifiers not in the source")
    );
}

// A looping reply is a failed attempt, retried per the policy (issue 11); every attempt
// loops here, so after the last one the ledger is written instead. (Paused clock: the
// backoff between the attempts is real.)
#[tokio::test(start_paused = true)]
async fn a_looping_summary_is_rejected_and_the_ledger_written_instead() {
    let input = conversation(10, 400);
    let looped = "The tax class multiplier is calculated using the formula. ".repeat(12);
    let c = compactor(2000, Some(Scripted::always(reply(&looped)))).with_ledger(LedgerPolicy::default());
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &result);
    assert!(!result.fallback);
    assert!(!result.summary.contains("tax class"));
    assert!(result.summary.contains(LEDGER_HEADING));
    let failed: Vec<_> = result
        .attempts
        .iter()
        .filter(|a| a.outcome == AttemptOutcome::Failed)
        .collect();
    assert_eq!(failed.len(), 3, "{:?}", result.attempts);
    assert!(
        failed.iter().all(|a| a.note.as_deref().unwrap().contains("repetition")),
        "{failed:?}"
    );
    let last = result.attempts.last().unwrap();
    assert_eq!(
        (last.kind, last.outcome),
        (AttemptKind::Ledger, AttemptOutcome::Accepted)
    );
}

#[tokio::test]
async fn a_failing_model_falls_back_to_the_ledger_before_the_hard_trim() {
    let input = conversation(10, 400);
    let c = compactor(2000, Some(Scripted::always(http(401)))).with_ledger(LedgerPolicy::default());
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &result);
    assert!(!result.fallback, "{result:?}");
    assert!(result.summary.contains("The summarizer could not produce a summary"));
    assert!(result.summary.contains("f0.rs (read)"));
    // Without the ledger the same failure is the hard trim.
    let plain = compactor(2000, Some(Scripted::always(http(401))));
    assert!(plain.compact(&input, CompactOptions::default()).await.unwrap().fallback);
}

#[tokio::test]
async fn a_cancelled_pass_still_ends_in_the_hard_trim() {
    let input = conversation(10, 400);
    let c = compactor(2000, Some(Scripted::always(reply("x")))).with_ledger(LedgerPolicy::default());
    let options = CompactOptions::default();
    options.cancel.cancel();
    let result = c.compact(&input, options).await.unwrap();
    assert!(result.fallback);
}

#[tokio::test]
async fn the_ledger_summarizer_needs_no_model() {
    let input = conversation(10, 400);
    let c = engine_support::compactor(2000, None).with_summarizer(Arc::new(LedgerSummarizer));
    let result = c.compact(&input, CompactOptions::default()).await.unwrap();
    check(&input, &result);
    assert!(!result.fallback);
    assert!(result.summary.contains(LEDGER_HEADING));
    assert_eq!(result.attempts.len(), 1);
    assert_eq!(result.attempts[0].kind, AttemptKind::Ledger);
    assert!(result.tokens_after < result.tokens_before);
    // Deterministic: the same input gives the same bytes.
    let again = c.compact(&input, CompactOptions::default()).await.unwrap();
    assert_eq!(again.summary, result.summary);
}

/// Server-side tools are in the ledger as client tools are: an Anthropic turn whose code
/// execution ran a failing test and viewed a file, and a Responses turn whose MCP call
/// failed (the provider's `error`, an open error in its own words). Summarized with no
/// model, the commands, the files and the open errors are still there (before, the
/// ledger read only client tool calls and tool messages).
#[tokio::test]
async fn server_side_tools_are_in_the_ledger() {
    use llm_compactor::count::HeuristicCounter;
    use llm_compactor::format::responses::ResponsesRequest;
    use llm_compactor::format::{Document, Format};
    use llm_compactor::{Compactor, CompactorConfig, Message};
    use serde_json::json;

    let padding = |i: usize| {
        vec![
            json!({"role": "user", "content": format!("step {i}: keep going {}", "x".repeat(600))}),
            json!({"role": "assistant", "content": format!("done with step {i} {}", "y".repeat(600))}),
        ]
    };
    let mut anthropic = vec![
        json!({"role": "user", "content": "Run the tests in the sandbox."}),
        json!({"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srv_1", "name": "bash_code_execution", "input": {"command": "pytest -q tests/test_tax.py"}},
            {"type": "bash_code_execution_tool_result", "tool_use_id": "srv_1", "content": {
                "type": "bash_code_execution_result", "stdout": "FAILED tests/test_tax.py::test_vat_rounding - AssertionError\n1 failed in 0.12s",
                "stderr": "", "return_code": 1, "content": []}},
            {"type": "server_tool_use", "id": "srv_2", "name": "text_editor_code_execution", "input": {"command": "view", "path": "/tmp/taxkit/rates.py"}},
            {"type": "text_editor_code_execution_tool_result", "tool_use_id": "srv_2", "content": {
                "type": "text_editor_code_execution_view_result", "file_type": "text", "content": "VAT = 0.2\n"}},
            {"type": "text", "text": "One test fails."}
        ]}),
    ];
    for i in 0..12 {
        anthropic.extend(padding(i));
    }
    let anthropic = Document::from_value(json!({"messages": anthropic}), Some(Format::Anthropic), "run.json").unwrap();

    let mut input = vec![
        json!({"role": "user", "content": "Why does the backup fail?"}),
        json!({"type": "mcp_call", "id": "mcp_1", "server_label": "ops", "name": "tail_log",
               "arguments": "{\"path\":\"/var/log/backup.log\"}", "output": null, "error": "ERROR: disk quota exceeded on /srv/backup"}),
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The disk is full.", "annotations": []}]}),
    ];
    for i in 0..12 {
        input.extend(padding(i));
    }
    let responses = ResponsesRequest::from_value(json!({"model": "gpt-5", "input": input}), "request").unwrap();

    let summarize = |messages: Vec<Message>| async move {
        let c = Compactor::new(
            CompactorConfig::builder(4_000).build().unwrap(),
            Arc::new(HeuristicCounter),
        )
        .with_summarizer(Arc::new(LedgerSummarizer));
        let result = c.compact(&messages, CompactOptions::default()).await.unwrap();
        assert!(result.dropped > 2, "the early turns are summarized: {result:?}");
        result.summary
    };
    let summary = summarize(anthropic.messages().to_vec()).await;
    for says in [
        "- `pytest -q tests/test_tax.py` ✗ 1",
        "- FAILED tests/test_tax.py::test_vat_rounding - AssertionError (from `pytest -q tests/test_tax.py`)",
        "- /tmp/taxkit/rates.py (read)",
    ] {
        assert!(summary.contains(says), "{says:?} not in:\n{summary}");
    }
    let summary = summarize(responses.messages().to_vec()).await;
    for says in [
        "- /var/log/backup.log (used)",
        "### Open errors and failing tests\n- ERROR: disk quota exceeded on /srv/backup",
    ] {
        assert!(summary.contains(says), "{says:?} not in:\n{summary}");
    }
}
