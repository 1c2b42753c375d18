//! [`Usage`]: what a model call was billed.

use serde::{Deserialize, Serialize};

/// Tokens billed for one or more model calls.
///
/// `input_tokens` counts every prompt token, cached or not (OpenAI's `prompt_tokens`;
/// Anthropic's `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`),
/// which is the number a calibrated counter wants. The cache fields say how much of it
/// was read from or written to the provider's prompt cache.
///
/// ```
/// use llm_compactor::Usage;
/// let mut total = Usage::default();
/// total += Usage { input_tokens: 100, output_tokens: 20, ..Usage::default() };
/// total += Usage { input_tokens: 50, output_tokens: 5, cache_read_tokens: 40, ..Usage::default() };
/// assert_eq!((total.input_tokens, total.output_tokens, total.cache_read_tokens), (150, 25, 40));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Of `input_tokens`, how many were read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, how many were written to the prompt cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// True when nothing was billed.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;
    fn add(mut self, other: Usage) -> Usage {
        self += other;
        self
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), |a, b| a + b)
    }
}
