//! The pre-tokenizers of o200k and cl100k, built without their encoders.
//!
//! Why: `bpe-openai` keeps each encoding's pre-tokenization regex inside its `Tokenizer`,
//! which can only be had with the encoder that costs ~130 ms to deserialize. Its
//! `Tokenizer::new_lookahead` accepts any `BytePairEncoding`, so each pre-tokenizer here is
//! a `Tokenizer` over a 256-token byte vocabulary (built in microseconds) and the same
//! patterns `bpe-openai` 0.3 uses for the encoding (tiktoken's, with the negative
//! look-ahead `\s+(?!\S)` rewritten as a look-ahead pattern); only its `split` is used.
//! Building the regex costs ~4 ms, paid only by a text that is not all ASCII
//! (`ascii_pieces.rs` splits the rest without it). If `bpe-openai` ever changed its
//! patterns, the counts would no longer match its `Tokenizer::count`, which
//! `tests/count_bpe.rs` compares on real and arbitrary text.

use std::sync::LazyLock;

use bpe_openai::Tokenizer;
use bpe_openai::byte_pair_encoding::BytePairEncoding;

use super::ascii_pieces::Pieces;
use super::encoding::Encoding;

/// The patterns of `bpe-openai` 0.3.2's `cl100k_base`.
const CL100K_PATTERN: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$";

/// The patterns of `bpe-openai` 0.3.2's `o200k_base`.
const O200K_PATTERN: &str = concat!(
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|\\p{N}{1,3}",
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
    "|\\s*[\\r\\n]+",
    "|\\s+$",
);

/// Whitespace followed by one more whitespace character, which is dropped from the
/// piece: the positive stand-in for `\s+(?!\S)`.
const LOOKAHEAD_PATTERN: &str = "\\s+\\s";
/// Any other whitespace run.
const WHITESPACE_PATTERN: &str = "\\s+";

fn build(pattern: &str) -> Tokenizer {
    let bytes = BytePairEncoding::from_dictionary((0..=255u8).map(|byte| vec![byte]), None);
    Tokenizer::new_lookahead(
        bytes,
        &[(pattern, false), (LOOKAHEAD_PATTERN, true), (WHITESPACE_PATTERN, false)],
        false,
    )
    .expect("bpe-openai's own patterns compile")
}

static O200K: LazyLock<Tokenizer> = LazyLock::new(|| build(O200K_PATTERN));
static CL100K: LazyLock<Tokenizer> = LazyLock::new(|| build(CL100K_PATTERN));

/// The regex pre-tokenizer of `encoding` (use its `split` only: its vocabulary is bytes).
pub(crate) fn regex(encoding: Encoding) -> &'static Tokenizer {
    match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    }
}

/// The pre-tokenized pieces of `text` in `encoding`: the regex's pieces, found by a byte
/// scan where the text is ASCII (`ascii_pieces.rs`).
pub(crate) fn pieces(encoding: Encoding, text: &str) -> Pieces<'_> {
    Pieces::new(encoding, regex, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pieces_are_bpe_openais() {
        let text = "Hello, WORLD's 12345 tests!!\n\n   indented\tand\r\n  trailing   \u{1F980}caf\u{e9} x/y/z  ";
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let ours: Vec<&str> = pieces(encoding, text).collect();
            let theirs: Vec<&str> = encoding.tokenizer().split(text).collect();
            assert_eq!(ours, theirs);
        }
    }
}
