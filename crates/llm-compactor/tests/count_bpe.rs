//! The exact counters against `tiktoken-rs`, the reference implementation of OpenAI's
//! encodings: `count_text` must equal tiktoken's ordinary encoding length on every text,
//! and message counts must equal the framing rule evaluated with tiktoken.

use crate::common;
use crate::count_support;

use llm_compactor::Message;
use llm_compactor::count::framing::{self, REPLY_PRIMING, TOKENS_PER_MESSAGE, TOKENS_PER_NAME};
use llm_compactor::count::{BpeCounter, Encoding, TokenCounter};
use llm_compactor::message::{Content, Part, ToolCall};
use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

fn reference(encoding: Encoding) -> &'static CoreBPE {
    match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

fn tiktoken_count(encoding: Encoding, text: &str) -> usize {
    reference(encoding).encode_ordinary(text).len()
}

const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

fn varied_texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "",
        " ",
        "hello world",
        "Hello, World! I'm here; you'll see. THEY'RE, we'VE, it'S",
        "naïve café résumé Ångström façade",
        "日本語のテキストと中文文本，还有한국어 텍스트.",
        "emoji: 👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽 🤖✨",
        "combining: e\u{0301} a\u{0308} n\u{0303}, RTL: مرحبا بالعالم שלום",
        "numbers 1234567890 3.14159 -42 1e10 0xDEADBEEF 1,000,000",
        "<|endoftext|> <|im_start|>system<|im_end|> <|fim_prefix|>",
        "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n    println!(\"{x:?}\");\n}\n",
        "def f(a, b=None):\n\tif a  and not b:\n\t\treturn {'k': [1, 2]}\n\treturn None\n",
        "diff --git a/x.py b/x.py\n@@ -1,3 +1,4 @@\n-import os\n+import os, sys\n \n",
        "tabs\t\t\tand\r\nwindows\r\n\r\nline endings\n\n\n",
        "trailing spaces   \n   leading spaces",
        "\u{0}\u{1}\u{7f} control \u{feff}BOM \u{200b}zero-width",
        "https://example.com/path?query=1&b=%20x#frag user@example.org",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    texts.push(" ".repeat(10_000));
    texts.push("\n".repeat(5_000));
    texts.push(" \n\t ".repeat(2_000));
    texts.push(format!("start{}end", " ".repeat(777)));
    texts.push("x ".repeat(3_000) + &" ".repeat(100));
    texts.push("的".repeat(4_000));
    texts.push("🙂".repeat(1_500));
    texts.push("0123456789".repeat(500));
    texts.push(include_str!("../src/count/memo.rs").to_owned());
    texts
}

#[test]
fn count_text_equals_tiktoken_on_varied_texts() {
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding);
        for text in varied_texts() {
            assert_eq!(
                counter.count_text(&text),
                tiktoken_count(encoding, &text),
                "{encoding:?} on {:?}",
                text.chars().take(60).collect::<String>()
            );
        }
    }
}

#[test]
fn count_text_matches_the_tokenizers_own_encoding() {
    let counter = BpeCounter::o200k();
    for text in varied_texts() {
        assert_eq!(
            counter.count_text(&text),
            Encoding::O200kBase.tokenizer().encode(&text).len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn count_text_equals_tiktoken_on_arbitrary_strings(text in "\\PC{0,200}", ws in "[ \t\n\r]{0,40}") {
        let text = format!("{text}{ws}{text}");
        for encoding in ENCODINGS {
            prop_assert_eq!(BpeCounter::new(encoding).count_text(&text), tiktoken_count(encoding, &text));
        }
    }

    /// Long pre-tokenized pieces: words, identifiers, base64-like runs and punctuation
    /// runs from a few bytes to past the length where the merge over the embedded rank
    /// tables hands a piece to the encoder (256 bytes), so both sides of that line and
    /// the line itself are compared with tiktoken.
    #[test]
    fn long_pieces_count_as_tiktoken_counts_them(
        word in "[a-zA-Z]{1,300}",
        base64 in "[A-Za-z0-9+/]{0,400}",
        run in "(=|-|_|\\*|#|\\.){0,300}",
        accented in "[a-zé日ü]{0,120}",
    ) {
        let text = format!("{word} {base64}\n{run}{word}{accented} {word}");
        for encoding in ENCODINGS {
            prop_assert_eq!(BpeCounter::new(encoding).count_text(&text), tiktoken_count(encoding, &text));
        }
    }
}

/// The framing rule written out by hand, with tiktoken doing the tokenizing.
fn reference_message(encoding: Encoding, message: &Message) -> usize {
    let count = |t: &str| tiktoken_count(encoding, t);
    let mut tokens = 3 + count(message.role.as_str());
    tokens += match &message.content {
        Content::Absent | Content::Null => 0,
        Content::Text(text) => count(text),
        Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                Part::Text { text, .. } => count(text),
                Part::Thinking { thinking, .. } => count(thinking),
                Part::ToolUse { .. } => 0,
                Part::Other(v) => count(&v.to_string()),
            })
            .sum(),
    };
    if let Some(name) = &message.name {
        tokens += count(name) + 1;
    }
    if !message.tool_calls.is_empty() {
        let q = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
        let calls: Vec<String> = message
            .tool_calls
            .iter()
            .map(|c| {
                format!(
                    "{{\"id\":{},\"name\":{},\"arguments\":{}}}",
                    q(&c.id),
                    q(&c.name),
                    q(&c.arguments)
                )
            })
            .collect();
        tokens += count(&format!("[{}]", calls.join(",")));
    }
    tokens
}

#[test]
fn framing_rule_by_hand() {
    let counter = BpeCounter::o200k();
    assert_eq!((TOKENS_PER_MESSAGE, TOKENS_PER_NAME, REPLY_PRIMING), (3, 1, 3));
    // "user" and "hello world" are 1 and 2 tokens in o200k.
    assert_eq!(counter.count_text("user"), 1);
    assert_eq!(counter.count_message(&Message::user("hello world")), 3 + 1 + 2);
    let mut named = Message::user("hello world");
    named.name = Some("alice".into());
    assert_eq!(
        counter.count_message(&named),
        3 + 1 + 2 + counter.count_text("alice") + 1
    );
    // Absent and null content cost the framing and the role only.
    let mut empty = Message::assistant("");
    empty.content = Content::Null;
    assert_eq!(counter.count_message(&empty), 3 + counter.count_text("assistant"));
    // Tool calls are their compact JSON.
    let call = ToolCall::new("call_1", "bash", r#"{"command": "ls -la"}"#);
    let asks = empty.clone().with_tool_calls(vec![call]);
    let json = framing::tool_calls_json(&asks).unwrap();
    assert_eq!(
        json,
        r#"[{"id":"call_1","name":"bash","arguments":"{\"command\": \"ls -la\"}"}]"#
    );
    assert_eq!(
        counter.count_message(&asks),
        counter.count_message(&empty) + counter.count_text(&json)
    );
    // tool_call_id is not counted.
    let result = Message::tool("call_1", "ok");
    assert_eq!(
        counter.count_message(&result),
        3 + counter.count_text("tool") + counter.count_text("ok")
    );
    // Parts: text and thinking by their text, the tool_use marker as nothing.
    let mut parts = Message::assistant("");
    parts.content = Content::Parts(vec![
        Part::text("first"),
        Part::Thinking {
            thinking: "hmm".into(),
            extras: Default::default(),
        },
        Part::ToolUse { id: "t".into() },
    ]);
    let expected = 3 + counter.count_text("assistant") + counter.count_text("first") + counter.count_text("hmm");
    assert_eq!(counter.count_message(&parts), expected);
}

#[test]
fn requests_add_tools_context_and_reply_priming_once() {
    let counter = BpeCounter::o200k();
    let conversation = [Message::system("be brief"), Message::user("hi")];
    let tools = vec![serde_json::json!({"type": "function", "function": {"name": "bash"}})];
    let tools_json = serde_json::to_string(&tools).unwrap();
    assert_eq!(
        counter.count_request(&conversation, &[], ""),
        counter.count_messages(&conversation) + 3
    );
    assert_eq!(
        counter.count_request(&conversation, &tools, "cwd: /repo"),
        counter.count_messages(&conversation) + counter.count_text(&tools_json) + counter.count_text("cwd: /repo") + 3
    );
    assert_eq!(
        counter.count_messages(&conversation),
        conversation.iter().map(|m| counter.count_message(m)).sum::<usize>()
    );
}

#[test]
fn real_trajectories_count_identically_to_tiktoken() {
    let files = common::mini_swe_agent_files();
    if files.is_empty() {
        return;
    }
    let mut checked = 0;
    for path in &files {
        let messages = count_support::mini_swe_agent_messages(path);
        assert!(!messages.is_empty(), "{} has messages", path.display());
        for message in count_support::sample(&messages, 8) {
            for encoding in ENCODINGS {
                let counter = BpeCounter::new(encoding);
                assert_eq!(
                    counter.count_message(&message),
                    reference_message(encoding, &message),
                    "{encoding:?}, {}",
                    path.display()
                );
                assert_eq!(
                    counter.count_text(&message.text()),
                    tiktoken_count(encoding, &message.text())
                );
            }
            checked += 1;
        }
    }
    eprintln!("checked {checked} messages from {} files", files.len());
}
