//! Images, audio and files are counted at what a provider bills for them, not by their
//! base64: a computer-use agent that sends a screenshot a turn is not compacted because
//! its screenshots look like megabytes of text, and old screenshots are still what aging
//! stubs first when the window does fill.

use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::{HeuristicCounter, TokenCounter, counter_by_name};
use llm_compactor::format::{Document, Format};
use llm_compactor::message::media::MEDIA_PART_TOKENS;
use llm_compactor::message::{Content, Part};
use llm_compactor::{CompactOptions, Compactor, CompactorConfig};
use serde_json::{Value, json};

/// A screenshot as a PNG would travel: ~200 KB of base64.
fn screenshot(turn: usize) -> String {
    format!("iVBORw0KGgoAAAANSUhEUgAAB{turn:04}").repeat(6_000)
}

/// An Anthropic computer-use run: each turn clicks and gets a screenshot back.
fn computer_use_run(turns: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "Open the settings page and turn on dark mode."})];
    for turn in 0..turns {
        let id = format!("toolu_{turn:03}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {turn}: clicking the next control.")},
            {"type": "tool_use", "id": id, "name": "computer", "input": {"action": "left_click", "coordinate": [turn, 300]}}
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": [
                {"type": "text", "text": "clicked"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": screenshot(turn)}}
            ]}
        ]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": messages})
}

fn read(turns: usize) -> Document {
    Document::from_value(computer_use_run(turns), Some(Format::Anthropic), "run.json").expect("an Anthropic request")
}

/// Each screenshot counts as the flat media figure and a few tokens of its JSON, with
/// the heuristic and with o200k; the text around it as before.
#[test]
fn a_screenshot_counts_as_an_image_not_as_its_base64() {
    let document = read(1);
    let result = &document.messages()[2];
    let Content::Parts(parts) = &result.content else {
        panic!("a tool result with parts: {result:?}")
    };
    assert!(matches!(&parts[1], Part::Other(_)), "{parts:?}");
    for counter in [
        Arc::new(HeuristicCounter) as Arc<dyn TokenCounter>,
        counter_by_name("o200k").expect("o200k"),
    ] {
        let tokens = counter.count_message(result);
        assert!(
            (MEDIA_PART_TOKENS..MEDIA_PART_TOKENS + 60).contains(&tokens),
            "{}: {tokens}",
            counter.name()
        );
    }
    // Chars measure the same way (the aging thresholds read them).
    assert!(
        result.content.chars() < 4 * (MEDIA_PART_TOKENS + 60),
        "{}",
        result.content.chars()
    );
    // The grounding gate's source holds the result's words, not its pixels.
    let source = llm_compactor::plan::ledger::source_text(document.messages());
    assert!(
        source.contains("clicked") && source.len() < 1_000,
        "{} bytes",
        source.len()
    );
    // The summarizer is told a screenshot was there, without its data.
    let rendered = llm_compactor::summarize::render_message(result, 100_000);
    assert_eq!(
        rendered,
        "[tool]\nclicked\n-> part image: {\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"\"}}\n"
    );
}

/// Forty screenshots are ~64k tokens as billed: inside a 200k window there is nothing to
/// summarize (before, their ~8 MB of base64 counted as ~2M tokens, over the trigger).
/// Without aging no pass is due; with it, one may be, to stub old screenshots when the
/// cost gate says that pays.
#[test]
fn a_run_of_screenshots_inside_the_window_is_not_summarized() {
    let document = read(40);
    let total = HeuristicCounter.count_messages(document.messages());
    assert!(
        (40 * MEDIA_PART_TOKENS..48 * MEDIA_PART_TOKENS).contains(&total),
        "{total}"
    );
    for aging in [false, true] {
        let config = CompactorConfig::builder(200_000)
            .age_observations(aging)
            .build()
            .unwrap();
        let compactor = Compactor::new(config, Arc::new(HeuristicCounter)).with_summarizer(Arc::new(LedgerSummarizer));
        let plan = compactor.plan(document.messages(), &CompactOptions::default());
        assert!(plan.tokens < plan.trigger, "{} of {}", plan.tokens, plan.trigger);
        if !aging {
            assert!(!compactor.needs_compaction(document.messages()));
        }
    }
}

/// When screenshots do fill the window, aging stubs the old ones (each reclaims about
/// the flat figure), the newest stay, and the request written back is a valid one.
#[tokio::test]
async fn old_screenshots_are_aged_when_the_window_fills() {
    let document = read(60);
    let compactor = Compactor::new(
        CompactorConfig::builder(64_000).build().unwrap(),
        Arc::new(HeuristicCounter),
    )
    .with_summarizer(Arc::new(LedgerSummarizer));
    assert!(compactor.needs_compaction(document.messages()));
    let result = compactor
        .compact(document.messages(), CompactOptions::default())
        .await
        .expect("a pass");
    assert!(result.tokens_after <= 64_000 && !result.exhausted, "{result:?}");
    assert!(result.tokens_after < result.tokens_before);
    let images = |messages: &[llm_compactor::Message]| {
        messages
            .iter()
            .filter(|m| matches!(&m.content, Content::Parts(p) if p.iter().any(|p| p.kind() == "image")))
            .count()
    };
    let kept = images(&result.messages);
    assert!(kept > 0 && kept < 60, "{kept} screenshots kept");
    // The newest screenshot is among those kept, whole.
    let last = document.messages().last().unwrap();
    assert_eq!(result.messages.last(), Some(last));
    let out = document.with_messages(result.messages.clone()).to_value();
    assert!(out["messages"].as_array().is_some_and(|m| !m.is_empty()));
}

/// The same holds in the other wire formats: an OpenAI chat `image_url` with a data URL,
/// a Responses `input_image`, and an image by URL (billed as an image, not as its URL).
#[test]
fn images_in_openai_chat_and_responses_count_the_same() {
    let data_url = format!("data:image/jpeg;base64,{}", screenshot(7));
    let chat = json!([{"role": "user", "content": [
        {"type": "text", "text": "what is on screen?"},
        {"type": "image_url", "image_url": {"url": data_url, "detail": "high"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/screen.png"}}
    ]}]);
    let chat = Document::from_value(chat, Some(Format::OpenAi), "chat.json").expect("a chat");
    let responses = json!({"model": "gpt-5", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "what is on screen?"},
        {"type": "input_image", "image_url": data_url},
        {"type": "input_image", "image_url": "https://example.com/screen.png"}
    ]}]});
    let responses =
        llm_compactor::format::responses::ResponsesRequest::from_value(responses, "request").expect("reads");
    for counter in [
        Arc::new(HeuristicCounter) as Arc<dyn TokenCounter>,
        counter_by_name("o200k").expect("o200k"),
    ] {
        for messages in [chat.messages(), responses.messages()] {
            let tokens = counter.count_messages(messages);
            assert!(
                (2 * MEDIA_PART_TOKENS..2 * MEDIA_PART_TOKENS + 80).contains(&tokens),
                "{}: {tokens}",
                counter.name()
            );
        }
    }
}
