//! Every pass recorded in a session transcript carries its cost receipt: an elision epoch
//! on its elision line, a summarizing pass on its compaction line. The receipt changes
//! nothing that replay rebuilds, re-encoding a loaded line gives back its exact bytes, and
//! a transcript written before receipts were recorded still loads to the same
//! conversation.

use crate::session_support;

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::CostReceipt;
use llm_compactor::session::{Record, Session, Transcript, encode_line};
use llm_compactor::simulate::StandIn;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig};
use serde_json::Value;
use session_support::{bytes_of, file_bytes, fixed_options};

const BUDGET: usize = 10_000;

fn round(i: usize, chars: usize) -> [Message; 2] {
    let id = format!("call_{i}");
    [
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            id.clone(),
            "read",
            format!("{{\"path\":\"f{i}\"}}"),
        )]),
        Message::tool(id, format!("line {i}\n").repeat(chars / 7 + 1)),
    ]
}

fn compactor() -> Compactor {
    let config = CompactorConfig::builder(BUDGET)
        .age_observations(true)
        .age_min_chars(500)
        .keep_recent(2)
        .build()
        .unwrap();
    let counter = Arc::new(HeuristicCounter);
    Compactor::new(config, counter.clone()).with_summarizer(Arc::new(StandIn::new(counter)))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// The live conversation after recording `result`: its messages, the summary carrying
/// the compaction line's id.
fn live_after(result: &CompactionResult, compaction_id: Option<&str>) -> Vec<Message> {
    let mut live = result.messages.clone();
    if let Some(id) = compaction_id {
        let at = live
            .iter()
            .position(|m| m.id.is_none())
            .expect("the summary has no id yet");
        live[at].id = Some(id.to_owned());
    }
    live
}

/// A session with an elision epoch and then a summarizing pass recorded; the live
/// conversation and the two receipts.
fn recorded(path: &std::path::Path) -> (Vec<Message>, CostReceipt, CostReceipt) {
    let mut session = Session::create(path, fixed_options()).unwrap();
    session.append_message(Message::system("You are an agent.")).unwrap();
    session.append_message(Message::user("Fix the bug.")).unwrap();
    for i in 0..12 {
        for m in round(i, 9_000) {
            session.append_message(m).unwrap();
        }
    }
    let c = compactor();
    let rt = rt();

    // An elision epoch: aging alone reaches a target of the whole budget.
    let epoch = rt
        .block_on(c.compact(session.messages(), CompactOptions::new().with_target(Some(BUDGET))))
        .unwrap();
    assert!(epoch.is_elision_only(), "the first pass only stubs");
    let epoch_receipt = epoch.receipt.clone().expect("every pass has a receipt");
    assert!(epoch_receipt.breaks_cache());
    let pass = session.record_result(&epoch).unwrap();
    assert!(pass.elision_id.is_some() && pass.compaction_id.is_none());

    // Many more rounds with results too small to stub, then a pass that summarizes.
    for i in 12..140 {
        for m in round(i, 400) {
            session.append_message(m).unwrap();
        }
    }
    let summary = rt
        .block_on(c.compact(session.messages(), CompactOptions::default()))
        .unwrap();
    assert!(summary.cut_index >= 0, "the second pass summarizes");
    let summary_receipt = summary.receipt.clone().expect("every pass has a receipt");
    assert!(summary_receipt.summarizer_input_tokens > 0 && summary_receipt.summarizer_output_tokens > 0);
    let pass = session.record_result(&summary).unwrap();
    let live = live_after(&summary, pass.compaction_id.as_deref());
    assert_eq!(bytes_of(session.messages()), bytes_of(&live));
    (live, epoch_receipt, summary_receipt)
}

#[test]
fn every_recorded_pass_carries_its_receipt_and_replay_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (live, epoch_receipt, summary_receipt) = recorded(&path);

    let transcript = Transcript::read(&path).unwrap();
    assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
    let receipts: Vec<(&str, Option<&CostReceipt>)> = transcript
        .entries()
        .iter()
        .filter_map(|e| match &e.record {
            Record::Elision(el) => Some(("elision", el.receipt.as_ref())),
            Record::Compaction(c) => Some(("compaction", c.receipt.as_ref())),
            _ => None,
        })
        .collect();
    // The epoch's line, then the summarizing pass's elision line (no receipt: the pass's
    // receipt rides on its last line) and its compaction line.
    assert_eq!(receipts.len(), 3, "{receipts:?}");
    assert_eq!(receipts[0], ("elision", Some(&epoch_receipt)));
    assert_eq!(receipts[1], ("elision", None));
    assert_eq!(receipts[2], ("compaction", Some(&summary_receipt)));

    // Every line re-encodes to its exact bytes (floats included) and has sorted keys.
    let text = String::from_utf8(file_bytes(&path)).unwrap();
    for (entry, line) in transcript.entries().iter().zip(text.split_inclusive('\n')) {
        assert_eq!(encode_line(&entry.id, &entry.ts, &entry.record).unwrap(), line);
    }
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let keys: Vec<&String> = last["payload"]["receipt"].as_object().unwrap().keys().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(
        last["payload"]["receipt"]["tokens_rewritten"],
        summary_receipt.tokens_rewritten
    );
    // The compaction line names its summarizer and each of its requests (the report's
    // pass table reads them).
    assert_eq!(last["payload"]["summarizer"], "stand-in");
    let attempts = last["payload"]["attempts"].as_array().expect("attempts on the line");
    assert!(!attempts.is_empty());
    assert_eq!(attempts.last().unwrap()["outcome"], "accepted", "{attempts:?}");

    // Reopening replays to the same conversation.
    let (reopened, _) = Session::open(&path, fixed_options()).unwrap();
    assert_eq!(bytes_of(reopened.messages()), bytes_of(&live));
}

#[test]
fn a_transcript_written_before_receipts_still_loads_to_the_same_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let (live, _, _) = recorded(&path);

    // The same transcript as an older version wrote it: no `receipt`, `summarizer` or
    // `attempts` in any payload.
    let old = dir.path().join("old.jsonl");
    let mut stripped = String::new();
    let mut removed = 0;
    for line in String::from_utf8(file_bytes(&path)).unwrap().lines() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        if let Some(payload) = value["payload"].as_object_mut() {
            // Nor the summarizer and its attempts, recorded later still.
            payload.remove("summarizer");
            payload.remove("attempts");
            if payload.remove("receipt").is_some() {
                removed += 1;
            }
        }
        stripped.push_str(&serde_json::to_string(&value).unwrap());
        stripped.push('\n');
    }
    assert_eq!(removed, 2);
    std::fs::write(&old, stripped).unwrap();

    let transcript = Transcript::read(&old).unwrap();
    assert_eq!(bytes_of(transcript.messages()), bytes_of(&live));
    assert!(transcript.entries().iter().all(|e| match &e.record {
        Record::Elision(el) => el.receipt.is_none(),
        Record::Compaction(c) => c.receipt.is_none(),
        _ => true,
    }));
    let (reopened, _) = Session::open(&old, fixed_options()).unwrap();
    assert_eq!(bytes_of(reopened.messages()), bytes_of(&live));
}
