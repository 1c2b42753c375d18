//! `compactor count`, run as the real binary.

use crate::support;

use std::path::Path;

use llm_compactor::count::counter_by_name;
use llm_compactor::format::{Document, Format};
use support::{largest_mini_swe_agent_file, run};

fn expected(path: &Path, counter: &str) -> (usize, usize) {
    let document = Document::read_path(path, Some(Format::MiniSweAgent)).expect("the trajectory reads");
    let counter = counter_by_name(counter).expect("a known counter");
    (document.messages().len(), counter.count_messages(document.messages()))
}

#[test]
fn counts_a_trajectory_file_with_the_default_o200k_counter() {
    let Some(path) = largest_mini_swe_agent_file() else {
        return;
    };
    let (messages, tokens) = expected(&path, "o200k");
    let out = run(&["count", path.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{tokens} tokens ({messages} messages, o200k)\n")
    );
}

#[test]
fn counts_stdin_as_json_with_every_counter_and_format_option() {
    let Some(path) = largest_mini_swe_agent_file() else {
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    for counter in ["heuristic", "o200k", "cl100k"] {
        let (messages, tokens) = expected(&path, counter);
        for format in ["auto", "mini-swe-agent"] {
            let out = run(
                &["count", "-", "--json", "--counter", counter, "--format", format],
                Some(&bytes),
            );
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                format!("{{\"messages\": {messages}, \"tokens\": {tokens}, \"counter\": \"{counter}\"}}\n")
            );
            let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("--json prints JSON");
            assert_eq!(value["tokens"], tokens);
        }
    }
}

#[test]
fn a_missing_file_fails_with_exit_1() {
    let out = run(&["count", "/nonexistent/conversation.json"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/conversation.json"));
    assert!(out.stdout.is_empty());
}

#[test]
fn an_unknown_counter_is_a_usage_error() {
    let out = run(&["count", "-", "--counter", "p50k"], Some(b"[]"));
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("heuristic") && stderr.contains("o200k") && stderr.contains("cl100k"),
        "{stderr}"
    );
}

#[test]
fn help_lists_the_options() {
    let out = run(&["count", "--help"], None);
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for option in ["--counter", "--json", "--format", "mini-swe-agent"] {
        assert!(help.contains(option), "{help}");
    }
}

/// The first 32 bytes of `bpe-openai` 0.3.2's serialized o200k and cl100k encoders (a
/// MessagePack array header, then the first tokens' bytes; 32 MB and 15 MB embedded with
/// `include_bytes!` by any binary that calls them). The library's
/// `count_bpe::a_binary_that_calls_the_encoder_embeds_the_dictionaries_whose_heads_we_look_for`
/// checks that a binary calling the encoder holds exactly these bytes.
const DICTIONARY_HEADS: [&[u8]; 2] = [
    b"\x9a\xdd\x00\x15\x53\xa6!\"#$%&'()*+,-./0123456789:",
    b"\x9a\xdd\x00\x09\xd2\xf6!\"#$%&'()*+,-./0123456789:",
];

/// Issue 32: counting merges every piece over the library's own rank tables and never
/// calls `bpe-openai`'s encoder, so the linker leaves its 47 MB of dictionaries out. A
/// runtime call to `Encoding::tokenizer()` would bring them back (and the Python wheel
/// over its 15 MB); this is the check that would see it.
#[test]
fn the_binary_does_not_embed_bpe_openais_encoders() {
    let binary = std::fs::read(env!("CARGO_BIN_EXE_compactor")).expect("the binary reads");
    for head in DICTIONARY_HEADS {
        assert!(
            !binary.windows(head.len()).any(|window| window == head),
            "the compactor binary embeds a bpe-openai dictionary ({} MB)",
            binary.len() >> 20
        );
    }
}
