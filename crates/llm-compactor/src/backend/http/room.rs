//! Default input room per model family.
//!
//! [`crate::summarize::Summarizer::input_room`] tells the compactor how big one request
//! may be; a middle that does not fit is summarized in chunks. Guessing too high means a
//! context-length error on the first big compaction, guessing too low only means more
//! chunks, so an unknown model gets a small, safe room. Every value leaves a reserve for
//! the summary itself. Override with [`super::HttpBackendBuilder::input_room`].
//!
//! | model name starts with (after any `vendor/` prefix) | window | input room |
//! |---|---|---|
//! | `gpt-5` | 400k (272k input) | 272 000 |
//! | `gpt-4.1` | ~1M | 1 000 000 |
//! | `o1`, `o3`, `o4` | 200k | 184 000 |
//! | `gpt-4o`, `gpt-4-turbo`, `chatgpt-4o` | 128k | 112 000 |
//! | `gpt-3.5-turbo` | 16k | 12 000 |
//! | `gpt-4` (others) | 8k | 6 000 |
//! | `claude` | 200k | 184 000 |
//! | anything else | assumed 8k | 6 000 |

/// The input room used for a model we do not know.
pub const UNKNOWN_MODEL_INPUT_ROOM: usize = 6_000;

const TABLE: &[(&str, usize)] = &[
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_000_000),
    ("o1", 184_000),
    ("o3", 184_000),
    ("o4", 184_000),
    ("gpt-4o", 112_000),
    ("chatgpt-4o", 112_000),
    ("gpt-4-turbo", 112_000),
    ("gpt-3.5-turbo", 12_000),
    ("gpt-4", 6_000),
    ("claude", 184_000),
];

/// The documented default input room for `model` (see the module table).
///
/// ```
/// use llm_compactor::backend::http::default_input_room;
/// assert_eq!(default_input_room("gpt-4o-mini"), 112_000);
/// assert_eq!(default_input_room("anthropic/claude-sonnet-4-5"), 184_000);
/// assert_eq!(default_input_room("qwen2.5-coder:7b"), 6_000);
/// ```
pub fn default_input_room(model: &str) -> usize {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    TABLE
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map_or(UNKNOWN_MODEL_INPUT_ROOM, |(_, room)| *room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_family_wins() {
        assert_eq!(default_input_room("gpt-4"), 6_000);
        assert_eq!(default_input_room("gpt-4-0613"), 6_000);
        assert_eq!(default_input_room("gpt-4.1-mini"), 1_000_000);
        assert_eq!(default_input_room("gpt-4o-2024-08-06"), 112_000);
        assert_eq!(default_input_room("gpt-5-nano"), 272_000);
        assert_eq!(default_input_room("o3-mini"), 184_000);
        assert_eq!(default_input_room("Claude-Haiku-4-5"), 184_000);
        assert_eq!(default_input_room(""), UNKNOWN_MODEL_INPUT_ROOM);
    }
}
