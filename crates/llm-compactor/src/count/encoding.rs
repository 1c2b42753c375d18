//! [`Encoding`]: which of OpenAI's BPE encodings a count is in.
//!
//! The word every layer of the exact counter shares (the counter, `bpe.rs`; the piece
//! cache, `bpe_pieces.rs`; the pre-tokenizers, `pretokenizer.rs` and `ascii_pieces.rs`;
//! the rank tables, `rank_table.rs`), in its own file so that the layers below the
//! counter depend on the word, not on the counter above them.

use serde::{Deserialize, Serialize};

/// An OpenAI BPE encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// `o200k_base` (GPT-4o, GPT-4.1, o-series, GPT-5).
    O200kBase,
    /// `cl100k_base` (GPT-4, GPT-3.5-turbo, text-embedding-3).
    Cl100kBase,
}

impl Encoding {
    /// The short counter name: `o200k` or `cl100k`.
    pub fn counter_name(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k",
            Encoding::Cl100kBase => "cl100k",
        }
    }

    /// The `bpe-openai` tokenizer (built on first use, then shared by the process: ~50 ms
    /// and ~65 MB for o200k). [`BpeCounter`](super::BpeCounter) never calls it, and a
    /// binary that does embeds its dictionaries (32 MB for o200k, 15 MB for cl100k): for
    /// tests and comparisons.
    pub fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}
