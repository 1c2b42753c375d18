//! Exact counters for OpenAI's `o200k_base` and `cl100k_base` encodings.
//!
//! The vocabulary, the pre-tokenization patterns and the reference encoder are
//! `bpe-openai`'s (GitHub's linear-time BPE, whose encodings are tested identical to
//! tiktoken's). A count goes piece by piece: the counts of short pieces are remembered per
//! thread (`bpe_pieces.rs`), and a new piece, of any length, is merged over rank tables
//! that `build.rs` writes from `bpe-openai`'s vocabulary and the binary embeds
//! (`rank_table.rs`; `heap_merge.rs` for pieces over 256 bytes): nothing to deserialize,
//! so a process's first count costs ~2–5 ms instead of the ~50–130 ms and ~65 MB of
//! building `bpe-openai`'s encoder. The encoder itself is not linked: counting never calls
//! it, so its 47 MB of embedded dictionaries stay out of the binaries (issue 32: the
//! Python wheel). [`Encoding::tokenizer`] still gives it to whoever asks (tests, benches),
//! and a binary that calls it links them again. Every path is compared with `tiktoken-rs`
//! (`tests/count_bpe.rs`).
//! The framing of messages and requests is [`super::framing`]'s rule.

use serde_json::Value;

use super::encoding::Encoding;
use crate::count::TokenCounter;
use crate::count::framing::{self, REPLY_PRIMING};
use crate::message::Message;

/// Exact token counts in one OpenAI encoding, with the chat format's framing.
///
/// ```
/// use llm_compactor::count::{BpeCounter, TokenCounter};
/// use llm_compactor::Message;
/// let counter = BpeCounter::o200k();
/// assert_eq!(counter.count_text("hello world"), 2);
/// // 3 framing + "user" (1) + "hello world" (2)
/// assert_eq!(counter.count_message(&Message::user("hello world")), 6);
/// // ... plus 3 tokens priming the reply, once per request
/// assert_eq!(counter.count_request(&[Message::user("hello world")], &[], ""), 9);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BpeCounter {
    encoding: Encoding,
}

impl BpeCounter {
    /// A counter for `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        BpeCounter { encoding }
    }

    /// `o200k_base`.
    pub fn o200k() -> Self {
        BpeCounter::new(Encoding::O200kBase)
    }

    /// `cl100k_base`.
    pub fn cl100k() -> Self {
        BpeCounter::new(Encoding::Cl100kBase)
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl TokenCounter for BpeCounter {
    fn name(&self) -> &str {
        self.encoding.counter_name()
    }

    fn count_text(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        super::bpe_pieces::count_text(self.encoding, text)
    }

    fn count_message(&self, message: &Message) -> usize {
        framing::message_tokens(message, &|text| self.count_text(text))
    }

    fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
        let tools_tokens = if tools.is_empty() {
            0
        } else {
            self.count_text(&serde_json::to_string(tools).unwrap_or_default())
        };
        tools_tokens + self.count_text(context) + REPLY_PRIMING
    }
}
