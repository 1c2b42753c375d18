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

/// A deterministic generator (xorshift64) for the long-piece texts.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn text(&mut self, alphabet: &[char], chars: usize) -> String {
        (0..chars)
            .map(|_| alphabet[self.next() as usize % alphabet.len()])
            .collect()
    }
}

/// Texts whose pieces run past the stack merge's 256 bytes (the heap merge's side of the
/// line, where the encoder used to be called), `len` bytes or so each: runs of one
/// character (ASCII, accented, CJK, emoji, punctuation, whitespace), long identifiers,
/// base64, non-ASCII letter runs, and arbitrary bytes as text (each byte as the char of
/// its code point, and the bytes read as UTF-8 with replacement).
fn long_piece_texts(len: usize, random: &mut Xorshift) -> Vec<(&'static str, String)> {
    let lower: Vec<char> = ('a'..='z').collect();
    let letters: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
    let base64: Vec<char> = ('A'..='Z')
        .chain('a'..='z')
        .chain('0'..='9')
        .chain(['+', '/'])
        .collect();
    let non_ascii: Vec<char> = "éüößçñåøæœ日本語中文한국어абвгдежзαβγδεζ".chars().collect();
    let bytes: Vec<u8> = (0..len).map(|_| random.next() as u8).collect();
    vec![
        ("a run", "a".repeat(len)),
        ("an upper-case run", "Z".repeat(len)),
        ("a run after a space", format!(" {}", "q".repeat(len))),
        ("a run of é", "é".repeat(len / 2)),
        ("a run of 的", "的".repeat(len / 3)),
        ("a run of emoji", "🙂".repeat(len / 4)),
        ("a run of =", "=".repeat(len)),
        ("a run of -", format!(" {}\n", "-".repeat(len))),
        ("a run of spaces", format!("{}x", " ".repeat(len))),
        ("a run of mixed whitespace", " \t".repeat(len / 2) + "y"),
        ("a run of newlines", "\n".repeat(len)),
        ("a lower-case identifier", random.text(&lower, len)),
        ("a mixed-case identifier", random.text(&letters, len)),
        ("base64", random.text(&base64, len)),
        ("non-ASCII letters", random.text(&non_ascii, len / 2)),
        (
            "bytes as code points",
            bytes.iter().map(|&byte| char::from(byte)).collect(),
        ),
        ("bytes as UTF-8", String::from_utf8_lossy(&bytes).into_owned()),
    ]
}

/// Counts of long pieces, each side of the 256-byte line and far past it, equal
/// `bpe-openai`'s own encoder (linear: checked up to 100 KB) and tiktoken (quadratic in a
/// piece's length, unoptimized in tests: checked up to 8 KB).
#[test]
fn long_pieces_count_as_the_encoder_and_tiktoken_count_them() {
    let mut random = Xorshift(0x9E37_79B9_7F4A_7C15);
    for len in [255, 256, 257, 258, 300, 513, 1_024, 8_000, 100_000] {
        for (what, text) in long_piece_texts(len, &mut random) {
            for encoding in ENCODINGS {
                let ours = BpeCounter::new(encoding).count_text(&text);
                assert_eq!(
                    ours,
                    encoding.tokenizer().count(text.as_str()),
                    "{encoding:?}, {what} of {len}"
                );
                if len <= 8_000 {
                    assert_eq!(ours, tiktoken_count(encoding, &text), "{encoding:?}, {what} of {len}");
                }
            }
        }
    }
}

/// A megabyte in one piece merges in O(n log n) on the heap, without recursion: it
/// finishes (the quadratic scan would not) and counts as the encoder does.
#[test]
fn a_megabyte_piece_counts_as_the_encoder_counts_it() {
    let mut random = Xorshift(0x2545_F491_4F6C_DD1D);
    let lower: Vec<char> = ('a'..='z').collect();
    for text in ["a".repeat(1 << 20), random.text(&lower, 1 << 20)] {
        for encoding in ENCODINGS {
            assert_eq!(
                BpeCounter::new(encoding).count_text(&text),
                encoding.tokenizer().count(text.as_str()),
                "{encoding:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    /// Single pieces from just under to well past 256 bytes, of few symbols (so that
    /// merges tie on equal ranks) and of many, and arbitrary bytes as text.
    #[test]
    fn long_single_pieces_count_as_the_encoder_and_tiktoken_count_them(
        few in "[ab]{240,700}",
        word in "[a-z]{240,700}",
        mixed in "[a-zA-Zéß日本]{120,400}",
        spaces in "[ \t]{240,600}",
        punctuation in "[=*#.!-]{240,600}",
        bytes in proptest::collection::vec(any::<u8>(), 240..700),
    ) {
        let code_points: String = bytes.iter().map(|&byte| char::from(byte)).collect();
        let lossy = String::from_utf8_lossy(&bytes).into_owned();
        for text in [few, word, mixed, spaces + "z", punctuation, code_points, lossy] {
            for encoding in ENCODINGS {
                let ours = BpeCounter::new(encoding).count_text(&text);
                prop_assert_eq!(ours, encoding.tokenizer().count(text.as_str()));
                prop_assert_eq!(ours, tiktoken_count(encoding, &text));
            }
        }
    }
}

/// The first 32 bytes of `bpe-openai` 0.3.2's serialized o200k and cl100k encoders (a
/// MessagePack array header, then the first tokens' bytes), which it embeds with
/// `include_bytes!` (32 MB and 15 MB). `compactor-cli`'s tests look for the same bytes in
/// the `compactor` binary, which must not link them (issue 32: counting merges over the
/// library's own tables and never calls the encoder).
const DICTIONARY_HEADS: [&[u8]; 2] = [
    b"\x9a\xdd\x00\x15\x53\xa6!\"#$%&'()*+,-./0123456789:",
    b"\x9a\xdd\x00\x09\xd2\xf6!\"#$%&'()*+,-./0123456789:",
];

/// The positive control of `compactor-cli`'s check that its binary embeds no encoder:
/// this test binary calls `Encoding::tokenizer()`, so it must hold both dictionaries'
/// first bytes. If `bpe-openai` changed its format this fails, and both checks need the
/// new bytes.
#[test]
fn a_binary_that_calls_the_encoder_embeds_the_dictionaries_whose_heads_we_look_for() {
    assert!(Encoding::O200kBase.tokenizer().count("hi") > 0 && Encoding::Cl100kBase.tokenizer().count("hi") > 0);
    let binary = std::fs::read(std::env::current_exe().expect("the test binary's path")).expect("it reads");
    for head in DICTIONARY_HEADS {
        assert_eq!(head.len(), 32);
        assert!(memchr::memmem::find(&binary, head).is_some(), "{head:?}");
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
