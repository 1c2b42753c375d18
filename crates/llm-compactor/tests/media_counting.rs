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

/// Standard base64 of `bytes`, padded.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PDF of `pages` pages as a PDF writer without object streams lays it out: a
/// catalog, the page tree, and per page a page object and its content stream (some
/// 1.5 KB of text each).
fn pdf(pages: usize) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n".to_vec();
    let kids: Vec<String> = (0..pages).map(|p| format!("{} 0 R", 3 + 2 * p)).collect();
    out.extend(
        format!(
            "2 0 obj\n<< /Type /Pages /Kids [{}] /Count {pages} >>\nendobj\n",
            kids.join(" ")
        )
        .bytes(),
    );
    for p in 0..pages {
        let (page, content) = (3 + 2 * p, 4 + 2 * p);
        out.extend(
            format!("{page} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content} 0 R >>\nendobj\n")
                .bytes(),
        );
        let text =
            format!("BT /F1 11 Tf 72 720 Td (Section {p}: the quarterly figures, line by line.) Tj ET\n").repeat(20);
        out.extend(
            format!(
                "{content} 0 obj\n<< /Length {} >>\nstream\n{text}endstream\nendobj\n",
                text.len()
            )
            .bytes(),
        );
    }
    out.extend(b"trailer\n<< /Root 1 0 R >>\n%%EOF\n");
    out
}

/// A PDF is billed per page (its text and a picture of each page), so a long one read
/// into the conversation (Claude Code's `Read` returns a PDF as a `document` block) is
/// counted by its pages: 60 pages are ~144k tokens, over a 128k window, where the flat
/// image figure (1,600) left the compactor thinking there was room, and the request
/// would have overflowed. The same PDF as an OpenAI chat `file` part counts the same.
#[test]
fn a_long_pdf_counts_by_its_pages_not_as_one_image() {
    let data = base64(&pdf(60));
    let anthropic = json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "messages": [
        {"role": "user", "content": "Summarize the report in docs/q3.pdf."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "docs/q3.pdf"}}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}
        ]}]}
    ]});
    let anthropic = Document::from_value(anthropic, Some(Format::Anthropic), "run.json").expect("an Anthropic request");
    let chat = json!([{"role": "user", "content": [
        {"type": "text", "text": "Summarize this report."},
        {"type": "file", "file": {"filename": "q3.pdf", "file_data": format!("data:application/pdf;base64,{data}")}}
    ]}]);
    let chat = Document::from_value(chat, Some(Format::OpenAi), "chat.json").expect("a chat");
    // 60 pages at 2,400 tokens, in units of the media figure rounded up: 90 units.
    let billed = 90 * MEDIA_PART_TOKENS;
    for counter in [
        Arc::new(HeuristicCounter) as Arc<dyn TokenCounter>,
        counter_by_name("o200k").expect("o200k"),
    ] {
        for messages in [anthropic.messages(), chat.messages()] {
            let tokens = counter.count_messages(messages);
            assert!((billed..billed + 150).contains(&tokens), "{}: {tokens}", counter.name());
        }
    }
    let compactor = Compactor::new(
        CompactorConfig::builder(128_000).build().unwrap(),
        Arc::new(HeuristicCounter),
    );
    assert!(compactor.needs_compaction(anthropic.messages()));
    // A one-page PDF is still about one page.
    let one = base64(&pdf(1));
    let part = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": one}});
    let tokens = llm_compactor::message::media::other_part_tokens(&part, &|t: &str| t.len().div_ceil(4));
    assert!(
        (2 * MEDIA_PART_TOKENS..2 * MEDIA_PART_TOKENS + 40).contains(&tokens),
        "{tokens}"
    );
}
