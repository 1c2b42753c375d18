//! A provider's own compaction (Anthropic's `compaction` content block, the Responses
//! API's `compaction` item) is opaque: imported as a verbatim part of its turn, the turn
//! sticky, written back byte for byte, and never summarized, elided or split by a pass.

use std::sync::Arc;

use llm_compactor::count::HeuristicCounter;
use llm_compactor::format::responses::ResponsesRequest;
use llm_compactor::format::{Document, Format};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message};
use serde_json::{Value, json};

fn long_history(first: Value) -> Vec<Value> {
    let mut messages = vec![json!({"role":"user","content":"start"}), first];
    for i in 0..30 {
        messages.push(json!({"role":"user","content":format!("question {i}: {}", "words ".repeat(80))}));
        messages.push(json!({"role":"assistant","content":format!("answer {i}: {}", "more ".repeat(80))}));
    }
    messages
}

async fn compact(messages: &[Message]) -> Vec<Message> {
    let config = CompactorConfig::builder(3_000).keep_recent(4).build().unwrap();
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter));
    compactor
        .compact(messages, CompactOptions::default())
        .await
        .unwrap()
        .messages
}

#[tokio::test]
async fn an_anthropic_compaction_block_survives_a_pass_verbatim() {
    let block =
        json!({"type":"compaction","content":"opaque summary by the provider","cache_control":{"type":"ephemeral"}});
    let turn = json!({"role":"assistant","content":[block.clone(),{"type":"text","text":"continuing"}]});
    let request = json!({"model":"claude","system":"s","messages": long_history(turn.clone())});
    let document = Document::from_value(request.clone(), Some(Format::Anthropic), "req").unwrap();
    assert_eq!(
        document.to_value(),
        request,
        "an unchanged request is written back as it came"
    );
    let sticky: Vec<&Message> = document.messages().iter().filter(|m| m.sticky).collect();
    assert_eq!(sticky.len(), 1);
    let out = compact(document.messages()).await;
    assert!(out.len() < document.messages().len(), "the pass ran");
    let written = document.with_messages(out).to_value();
    let turns = written["messages"].as_array().unwrap();
    assert!(
        turns.contains(&turn),
        "the compaction turn was changed or dropped: {written}"
    );
}

#[tokio::test]
async fn a_responses_compaction_item_is_kept_in_its_turn() {
    let item = json!({"type":"compaction","id":"cmp_1","encrypted_content":"gAAAA-opaque"});
    let mut input = vec![json!({"role":"user","content":"start"}), item.clone()];
    for i in 0..30 {
        input.push(json!({"role":"user","content":format!("question {i}: {}", "words ".repeat(80))}));
        input.push(json!({"type":"message","role":"assistant","content":[{"type":"output_text","text":format!("answer {i}: {}", "more ".repeat(80))}]}));
    }
    let request = json!({"model":"gpt-5","input": input});
    let parsed = ResponsesRequest::from_value(request.clone(), "req").unwrap();
    assert_eq!(parsed.to_value(), request);
    assert_eq!(parsed.messages().iter().filter(|m| m.sticky).count(), 1);
    let out = compact(parsed.messages()).await;
    assert!(out.len() < parsed.messages().len(), "the pass ran");
    let written = parsed.with_messages(out).to_value();
    assert!(
        written["input"].as_array().unwrap().contains(&item),
        "the compaction item was changed or dropped: {written}"
    );
}
