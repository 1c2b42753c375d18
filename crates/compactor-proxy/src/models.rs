//! The context windows of current OpenAI and Anthropic models, for `--budget-by-model`.
//!
//! An agent names its model in every request, and the model decides the window the
//! request must fit. With `--budget-by-model` the proxy takes each request's budget from
//! this table instead of one `--budget` for everything, so one proxy serves an agent that
//! switches models (or several agents on different models) correctly.
//!
//! Matching is by the longest prefix, so dated snapshots (`gpt-4o-2024-08-06`,
//! `claude-sonnet-4-20250514`) and aliases (`claude-3-5-haiku-latest`) find their family;
//! a routing prefix (`openai/gpt-4o`, as routers spell it) is ignored (only the part after
//! the last `/` is matched). Numbers are the *input* windows the providers publish (for
//! GPT-5 the 400,000-token window less its 128,000 output tokens, since the budget is
//! what the prompt may use). Sources: the OpenAI model pages (platform.openai.com/docs/models)
//! and Anthropic's models overview (docs.anthropic.com, "Models overview"), 2025.
//! Anthropic's 1M-token beta window for Sonnet 4 needs a request header and is not
//! assumed. A model not listed takes the `--budget` fallback.

/// `(prefix, input window in tokens)`: the longest matching prefix wins.
pub const CONTEXT_WINDOWS: &[(&str, usize)] = &[
    // OpenAI
    ("gpt-5-chat", 128_000),
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4.5", 128_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-0125", 128_000),
    ("gpt-4-1106", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1-preview", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini", 200_000),
    // Anthropic
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3-7-sonnet", 200_000),
    ("claude-3-5-sonnet", 200_000),
    ("claude-3-5-haiku", 200_000),
    ("claude-3-opus", 200_000),
    ("claude-3-sonnet", 200_000),
    ("claude-3-haiku", 200_000),
    ("claude-2.1", 200_000),
    ("claude-2.0", 100_000),
    ("claude-instant", 100_000),
];

/// The input window of `model` from [`CONTEXT_WINDOWS`] (longest prefix; a routing
/// prefix before the last `/` ignored), or `None` for a model the table does not know.
///
/// ```
/// use compactor_proxy::context_window;
/// assert_eq!(context_window("gpt-4o-2024-08-06"), Some(128_000));
/// assert_eq!(context_window("gpt-4.1-mini"), Some(1_047_576));
/// assert_eq!(context_window("gpt-4"), Some(8_192));
/// assert_eq!(context_window("openai/gpt-5-mini"), Some(272_000));
/// assert_eq!(context_window("claude-sonnet-4-5-20250929"), Some(200_000));
/// assert_eq!(context_window("my-local-llama"), None);
/// ```
pub fn context_window(model: &str) -> Option<usize> {
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    CONTEXT_WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, window)| *window)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins_whatever_the_table_order() {
        assert_eq!(context_window("gpt-4-32k-0613"), Some(32_768));
        assert_eq!(context_window("gpt-4-turbo-2024-04-09"), Some(128_000));
        assert_eq!(context_window("gpt-4-0613"), Some(8_192));
        assert_eq!(context_window("gpt-5-chat-latest"), Some(128_000));
        assert_eq!(context_window("o1-mini-2024-09-12"), Some(128_000));
        assert_eq!(context_window("o1-2024-12-17"), Some(200_000));
        assert_eq!(context_window("claude-3-5-haiku-latest"), Some(200_000));
        assert_eq!(context_window("claude-2.0"), Some(100_000));
    }

    #[test]
    fn unknown_and_empty_names_have_no_window() {
        assert_eq!(context_window(""), None);
        assert_eq!(context_window("llama-3-70b"), None);
        assert_eq!(context_window("gpt"), None);
    }

    #[test]
    fn every_prefix_is_unique_and_every_window_positive() {
        for (i, (a, window)) in CONTEXT_WINDOWS.iter().enumerate() {
            assert!(*window > 0, "{a}");
            assert!(CONTEXT_WINDOWS[i + 1..].iter().all(|(b, _)| a != b), "{a} twice");
        }
    }
}
