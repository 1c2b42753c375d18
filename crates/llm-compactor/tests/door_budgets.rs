//! Budgets at the door (issue 41, item 3), through the library's agent loop: a session
//! of 53 screenshots (codex#41338: 53 images, 33.6 MB) and a session with a 2 MB tool
//! output stay under their budget and under 32 MB a request, and every original the
//! door replaced expands back byte for byte from the session's transcript.

use std::collections::HashMap;
use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::HeuristicCounter;
use llm_compactor::message::{Content, Part};
use llm_compactor::plan::{DoorRules, content_bytes, handle_of, handles_in};
use llm_compactor::session::{ContextManager, RequestShape, Session, SessionOptions, Transcript, expand_in};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig, Message, ToolCall};
use tokio_util::sync::CancellationToken;

const MB32: usize = 32_000_000;

fn manager(budget: usize, door: bool) -> (tempfile::TempDir, ContextManager) {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::create(dir.path().join("s.jsonl"), SessionOptions::default()).unwrap();
    let mut config = CompactorConfig::builder(budget).expand(true);
    if door {
        config = config.door(DoorRules::default());
    }
    let compactor =
        Compactor::new(config.build().unwrap(), Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer));
    (
        dir,
        ContextManager::new(Arc::new(compactor), session).without_preparation(),
    )
}

/// A screenshot of `bytes` base64 chars, unique to `k`.
fn screenshot(k: usize, bytes: usize) -> Part {
    let data = format!("{k:08}{}", "iVBORw0KGgo".repeat(bytes / 11));
    Part::Other(serde_json::json!({
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data}
    }))
}

fn pasted(k: usize) -> Message {
    let mut m = Message::user("");
    m.content = Content::Parts(vec![
        Part::text(format!("Here is page {k}: anything wrong?")),
        screenshot(k, 640_000),
    ]);
    m
}

fn request_bytes(messages: &[Message]) -> usize {
    serde_json::to_vec(messages).unwrap().len()
}

fn images(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| match &m.content {
            Content::Parts(parts) => parts.iter().filter(|p| matches!(p, Part::Other(_))).count(),
            _ => 0,
        })
        .sum()
}

/// Every original the final conversation does not hold as it was is named by its
/// handle in the message that stands for it, and expands to it byte for byte.
fn every_replaced_original_expands(manager: &ContextManager) -> usize {
    let originals = Transcript::read(manager.session().path()).unwrap().originals();
    let live: HashMap<&str, &Message> = manager
        .messages()
        .iter()
        .filter_map(|m| Some((m.id.as_deref()?, m)))
        .collect();
    let mut replaced = 0;
    for (i, original) in originals.iter().enumerate() {
        let id = original.id.as_deref().unwrap();
        let Some(now) = live.get(id) else { continue };
        if now.content == original.content {
            continue;
        }
        replaced += 1;
        let handle = handle_of(i, original);
        assert!(
            handles_in(&now.text()).contains(&handle),
            "message {id} does not name {handle}"
        );
        let expansion = expand_in(&originals, &handle).expect("handle resolves");
        let back = expansion.messages.iter().find(|m| m.id.as_deref() == Some(id)).unwrap();
        assert_eq!(
            serde_json::to_vec(back).unwrap(),
            serde_json::to_vec(original).unwrap(),
            "{id}"
        );
    }
    replaced
}

#[tokio::test]
async fn fifty_three_screenshots_stay_under_the_budget_and_32_mb() {
    let budget = 128_000;
    let mut sizes_without = Vec::new();
    for door in [false, true] {
        let (_dir, mut manager) = manager(budget, door);
        let mut worst = (0, 0);
        for k in 0..53 {
            // Pasted by the user (aging only stubs tool results), answered by the model.
            manager.push(pasted(k)).unwrap();
            let out = manager
                .prepare(RequestShape::default(), CancellationToken::new())
                .await
                .unwrap();
            let bytes: usize = out.messages.iter().map(|m| content_bytes(&m.content)).sum();
            worst = (worst.0.max(bytes), worst.1.max(out.request_tokens));
            if k == 52 {
                // The last request, the heaviest, as JSON on the wire.
                worst.0 = worst.0.max(request_bytes(&out.messages));
            }
            // The unanswered turn's screenshot is always there.
            assert_eq!(out.messages.last().unwrap().content, pasted(k).content);
            manager
                .push(Message::assistant(format!("Page {k} looks fine.")))
                .unwrap();
        }
        if !door {
            sizes_without.push(worst.0);
            continue;
        }
        assert!(worst.0 <= MB32, "a request of {} bytes", worst.0);
        assert!(worst.1 <= budget, "a request of {} tokens", worst.1);
        assert!(
            images(manager.messages()) <= 20,
            "{} images kept",
            images(manager.messages())
        );
        // 33 screenshots at least went (aging may stub kept ones too): all read back.
        let replaced = every_replaced_original_expands(&manager);
        assert!(replaced >= 33, "{replaced}");
    }
    // Without the door the same session goes out at over 32 MB: the test can fail.
    assert!(sizes_without[0] > MB32, "{sizes_without:?}");
}

fn big_output() -> String {
    (0..52_000)
        .map(|i| format!("line {i:06} of a 2 MB build log ......\n"))
        .collect()
}

#[tokio::test]
async fn a_two_megabyte_tool_output_is_capped_at_the_door_the_same_way_every_round() {
    let budget = 32_000;
    let output = big_output();
    assert!(output.len() >= 2_000_000);
    let (_dir, mut manager) = manager(budget, true);
    manager
        .push(Message::user("Build it and tell me what failed."))
        .unwrap();
    manager
        .push(Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"command":"make"}"#)]))
        .unwrap();
    manager.push(Message::tool("c1", output.clone())).unwrap();
    let first = manager
        .prepare(RequestShape::default(), CancellationToken::new())
        .await
        .unwrap();
    assert!(first.request_tokens <= budget, "{}", first.request_tokens);
    let preview = first.messages.last().unwrap().text();
    assert!(preview.starts_with("line 000000"), "the head");
    assert!(
        preview.ends_with("line 051999 of a 2 MB build log ......\n"),
        "the tail"
    );
    assert_eq!(every_replaced_original_expands(&manager), 1);
    // The next rounds carry the very same bytes (the prompt cache's prefix holds).
    manager.push(Message::assistant("Line 51999 failed.")).unwrap();
    manager.push(Message::user("Why?")).unwrap();
    let second = manager
        .prepare(RequestShape::default(), CancellationToken::new())
        .await
        .unwrap();
    assert!(second.pass.is_none(), "no pass: the door had nothing left to do");
    assert_eq!(second.messages[..first.messages.len()], first.messages[..]);
}

/// The one-shot `compact` of an id-less conversation: the preview's handle is the
/// input's, by position, and expands against the same input.
#[tokio::test]
async fn a_one_shot_compact_caps_at_the_door_and_its_handle_reads_the_input() {
    let output = big_output();
    let messages = vec![
        Message::user("Build it."),
        Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "bash", "{}")]),
        Message::tool("c1", output.clone()),
    ];
    let config = CompactorConfig::builder(32_000)
        .door(DoorRules::default())
        .build()
        .unwrap();
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter));
    let result = compactor.compact(&messages, CompactOptions::default()).await.unwrap();
    assert!(result.tokens_after <= 32_000 && !result.exhausted);
    assert_eq!(result.elisions.len(), 1);
    let handle = handles_in(&result.elisions[0].stub)[0].clone();
    let back = expand_in(&messages, &handle).unwrap();
    assert_eq!(back.messages.last().unwrap().text(), output);
    // Off (the library's default): the pass is what it was.
    let off = Compactor::new(
        CompactorConfig::builder(32_000).build().unwrap(),
        Arc::new(HeuristicCounter),
    );
    let plain = off.compact(&messages, CompactOptions::default()).await.unwrap();
    assert!(
        plain
            .elisions
            .iter()
            .all(|e| !llm_compactor::plan::is_door_preview(&e.stub))
    );
}

/// The measurement behind the proxy's default (docs/budgets-and-instructions.md): at its
/// defaults the door replaces nothing in the real trajectories (every byte they send is
/// what it was), and the check a request pays for is printed.
#[test]
fn the_door_at_its_defaults_changes_nothing_in_the_real_trajectories() {
    use crate::common;
    use llm_compactor::format::{Document, Format};
    if common::data_dir().is_none() {
        eprintln!("LLM_COMPACTOR_DATA not set: skipped");
        return;
    }
    let mut conversations: Vec<Vec<Message>> = Vec::new();
    for path in common::mini_swe_agent_files() {
        let doc = Document::read_path(&path, Some(Format::MiniSweAgent)).expect("a readable trajectory");
        conversations.push(doc.messages().to_vec());
    }
    for traj in common::tau_bench_conversations() {
        let doc = Document::from_value(traj, Some(Format::OpenAi), "tau-bench").expect("a readable conversation");
        conversations.push(doc.messages().to_vec());
    }
    let rules = DoorRules::default();
    let (mut messages, mut largest) = (0, 0);
    let started = std::time::Instant::now();
    for conversation in &conversations {
        assert!(llm_compactor::plan::door(conversation, &rules).is_empty());
        messages += conversation.len();
        largest = conversation
            .iter()
            .filter(|m| m.is_tool_result())
            .map(|m| m.content.chars())
            .fold(largest, usize::max);
    }
    let elapsed = started.elapsed();
    eprintln!(
        "door: {} conversations, {messages} messages, 0 replaced; largest tool result {largest} chars; \
         {:.1} µs a conversation",
        conversations.len(),
        elapsed.as_secs_f64() * 1e6 / conversations.len() as f64
    );
}
