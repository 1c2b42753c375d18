//! Shared helpers of the session tests: deterministic options and synthetic compaction
//! results built by hand to the engine's result contract.

use std::path::Path;
use std::sync::Arc;

use llm_compactor::Usage;
use llm_compactor::compactor::{CompactionResult, Elision};
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::{Content, Message};
use llm_compactor::session::{FixedClock, SequentialIds, SessionOptions};

/// Options with a fixed clock and sequential ids.
pub fn fixed_options() -> SessionOptions {
    SessionOptions::new()
        .clock(Arc::new(FixedClock::epoch()))
        .ids(Arc::new(SequentialIds::new()))
}

/// A compaction result for `input`, exactly as the contract says the engine builds one:
/// elisions applied to the input, then (for `cut_index >= 0`) the sticky messages up to the
/// cut, the summary message, and the rest.
pub fn synthetic_result(
    input: &[Message],
    cut_index: i64,
    summary: &str,
    elisions: &[(usize, String)],
) -> CompactionResult {
    let counter = HeuristicCounter;
    let mut aged = input.to_vec();
    for (index, stub) in elisions {
        aged[*index].content = Content::Text(stub.clone());
    }
    let mut dropped = 0;
    let messages = if cut_index >= 0 {
        let cut = cut_index as usize;
        let mut out: Vec<Message> = Vec::new();
        // Sticky messages and the answers of a sticky turn stay (issue 10 item 20).
        let pins = llm_compactor::plan::pinned(&aged[..=cut], &llm_compactor::plan::Pairs::build(&aged[..=cut]));
        for (message, pin) in aged[..=cut].iter().zip(pins) {
            if pin {
                out.push(message.clone());
            } else {
                dropped += 1;
            }
        }
        out.push(Message::user(summary));
        out.extend(aged[cut + 1..].iter().cloned());
        out
    } else {
        aged
    };
    let tokens_before = counter.count_messages(input);
    let mut result = CompactionResult::unchanged(messages, tokens_before);
    result.tokens_after = counter.count_messages(&result.messages);
    if cut_index >= 0 {
        result.summary = summary.to_owned();
    }
    result.dropped = dropped;
    result.cut_index = cut_index;
    result.elisions = elisions
        .iter()
        .map(|(index, stub)| Elision::new(*index, stub.clone()))
        .collect();
    result.usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Usage::default()
    };
    result
}

/// The serialized JSON of a conversation: what "same bytes" compares.
pub fn bytes_of(messages: &[Message]) -> String {
    serde_json::to_string(messages).expect("messages serialize")
}

/// The file's bytes.
pub fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read transcript")
}

/// Records `input` and the pass in a fresh session: the live messages equal the result
/// (ids aside), and replaying the transcript rebuilds them byte for byte.
pub fn assert_pass_replays(input: &[Message], result: &CompactionResult) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session = llm_compactor::session::Session::create(&path, fixed_options()).unwrap();
    for m in input {
        session.append_message(m.clone()).unwrap();
    }
    session.record_result(result).expect("the pass is recordable");
    let live: Vec<Message> = session.messages().to_vec();
    let strip = |ms: &[Message]| -> Vec<Message> {
        ms.iter()
            .map(|m| {
                let mut m = m.clone();
                m.id = None;
                m
            })
            .collect()
    };
    assert_eq!(bytes_of(&strip(&live)), bytes_of(&strip(&result.messages)));
    drop(session);
    let transcript = llm_compactor::session::Transcript::read(&path).unwrap();
    assert_eq!(
        bytes_of(transcript.messages()),
        bytes_of(&live),
        "replay is byte-identical"
    );
}
