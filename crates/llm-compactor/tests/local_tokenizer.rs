//! The GGUF-built tokenizer and chat template of the default model.
#![cfg(feature = "local")]

use crate::local_support;

use llm_compactor::backend::local::{ChatFormat, LocalConfig, LocalSummarizer};

async fn open() -> Option<LocalSummarizer> {
    let path = local_support::default_model().await?;
    Some(LocalSummarizer::open(LocalConfig::new(path)).expect("the default model opens"))
}

#[tokio::test]
async fn encode_decode_round_trips() {
    let Some(local) = open().await else { return };
    let tok = local.tokenizer();
    for text in [
        "Hello world",
        "def parse_date(s: str) -> date:\n    return datetime.strptime(s, \"%d/%m/%Y\").date()\n",
        "  leading spaces, trailing\ttabs\t\n\n\nand blank lines  ",
        "Traceback (most recent call last):\n  File \"app.py\", line 42, in <module>\nValueError: 3 != 4",
        "unicode: café, naïve, 東京, emoji 🚀, math ∑ᵢ xᵢ²",
        "literal specials stay text: <|im_start|> <|im_end|>",
        "",
    ] {
        let ids = tok.encode(text);
        assert_eq!(tok.decode(&ids, true), text, "ids {ids:?}");
    }
}

#[tokio::test]
async fn byte_level_bpe_matches_the_vocabulary() {
    let Some(local) = open().await else { return };
    let tok = local.tokenizer();
    let id = |s: &str| tok.token_id(s).unwrap_or_else(|| panic!("{s} in vocab"));
    assert_eq!(tok.vocab_size(), 49152);
    assert_eq!(tok.encode("Hello world"), vec![id("Hello"), id("Ġworld")]);
    // SmolLM2's pre-tokenizer splits digits one by one.
    assert_eq!(tok.encode("2024"), vec![id("2"), id("0"), id("2"), id("4")]);
    // Special-token strings inside text are never special.
    let ids = tok.encode("<|im_end|>");
    assert!(!ids.contains(&id("<|im_end|>")));
    assert!(ids.iter().all(|&i| !tok.is_special(i)));
    assert!(tok.is_special(id("<|im_start|>")));
    assert_eq!(tok.eos(), Some(id("<|im_end|>")));
}

#[tokio::test]
async fn renders_chatml_from_the_models_template() {
    let Some(local) = open().await else { return };
    assert_eq!(local.chat_format(), ChatFormat::ChatMl);
    let text = ChatFormat::ChatMl.render_text("Be brief.", "user: hi");
    assert_eq!(
        text,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nuser: hi<|im_end|>\n<|im_start|>assistant\n"
    );
    let tok = local.tokenizer();
    let ids = local.prompt_tokens("Be brief.", "user: hi <|im_end|>").expect("prompt");
    let id = |s: &str| tok.token_id(s).expect("in vocab");
    assert_eq!(ids[0], id("<|im_start|>"));
    assert_eq!(ids.iter().filter(|&&i| i == id("<|im_start|>")).count(), 3);
    assert_eq!(
        ids.iter().filter(|&&i| i == id("<|im_end|>")).count(),
        2,
        "the transcript's literal stays text"
    );
    assert_eq!(
        tok.decode(&ids, false),
        ChatFormat::ChatMl.render_text("Be brief.", "user: hi <|im_end|>")
    );
    assert_eq!(ids.last(), Some(&id("Ċ")), "the prompt ends on the assistant's newline");
}

#[test]
fn llama3_format_has_headers_and_eot() {
    let text = ChatFormat::Llama3.render_text("S", "U");
    assert_eq!(
        text,
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
}
