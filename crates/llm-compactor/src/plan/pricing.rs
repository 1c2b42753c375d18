//! Pricing presets: what a provider bills per token class, relative to one uncached input
//! token.
//!
//! Every cost the simulator reports is in *base-input-token units*: one uncached input
//! token costs 1.0. That keeps the comparison independent of any one model's list price
//! while keeping the ratios between token classes, which is what decides whether a
//! strategy that breaks the prompt cache is cheap or expensive.
//!
//! Sources (list prices as published by the providers in 2025):
//! - `anthropic`: Anthropic's prompt-caching price table (docs.claude.com, "Prompt
//!   caching", pricing section): a 5-minute cache write costs 1.25x the base input price, a
//!   cache read 0.1x; output tokens cost 5x input on every current Claude model (for
//!   example Sonnet 4.5: $3 input, $3.75 write, $0.30 read, $15 output per MTok).
//! - `openai-gpt5`: OpenAI's pricing page for GPT-5: $1.25 input, $0.125 cached input,
//!   $10 output per MTok: reads 0.1x, no write premium (caching is automatic), output 8x.
//! - `openai-4o`: OpenAI's pricing page for GPT-4o: $2.50 input, $1.25 cached input, $10
//!   output per MTok: reads 0.5x, no write premium, output 4x.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Relative prices of the token classes of one provider.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// The preset's name (`anthropic`, `openai-gpt5`, `openai-4o`).
    pub name: &'static str,
    /// An input token that is neither read from nor written to the cache.
    pub uncached: f64,
    /// An input token written to the prompt cache (the part of a request past the shared
    /// prefix, on a provider that caches explicitly).
    pub cache_write: f64,
    /// An input token read from the prompt cache (the shared prefix).
    pub cache_read: f64,
    /// An output token.
    pub output: f64,
}

impl Pricing {
    /// Anthropic: write 1.25x, read 0.1x, output 5x.
    pub const ANTHROPIC: Pricing = Pricing {
        name: "anthropic",
        uncached: 1.0,
        cache_write: 1.25,
        cache_read: 0.1,
        output: 5.0,
    };

    /// OpenAI GPT-5: read 0.1x, no write premium, output 8x.
    pub const OPENAI_GPT5: Pricing = Pricing {
        name: "openai-gpt5",
        uncached: 1.0,
        cache_write: 1.0,
        cache_read: 0.1,
        output: 8.0,
    };

    /// OpenAI GPT-4o: read 0.5x, no write premium, output 4x.
    pub const OPENAI_4O: Pricing = Pricing {
        name: "openai-4o",
        uncached: 1.0,
        cache_write: 1.0,
        cache_read: 0.5,
        output: 4.0,
    };

    /// Every preset, in the order the CLI lists them.
    pub const PRESETS: [Pricing; 3] = [Pricing::ANTHROPIC, Pricing::OPENAI_GPT5, Pricing::OPENAI_4O];

    /// The cost of a bill, in base-input-token units.
    ///
    /// ```
    /// use llm_compactor::simulate::{Pricing, Tokens};
    /// let bill = Tokens { cache_read: 1000, cache_write: 100, uncached: 0, output: 10 };
    /// assert!((Pricing::ANTHROPIC.cost(&bill) - (100.0 + 125.0 + 50.0)).abs() < 1e-9);
    /// ```
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        tokens.cache_read as f64 * self.cache_read
            + tokens.cache_write as f64 * self.cache_write
            + tokens.uncached as f64 * self.uncached
            + tokens.output as f64 * self.output
    }
}

impl Default for Pricing {
    fn default() -> Self {
        Pricing::ANTHROPIC
    }
}

impl fmt::Display for Pricing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A pricing name that is not a preset.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown pricing {0:?} (expected anthropic, openai-gpt5 or openai-4o)")]
pub struct UnknownPricing(pub String);

impl FromStr for Pricing {
    type Err = UnknownPricing;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Pricing::PRESETS
            .into_iter()
            .find(|p| p.name == s)
            .ok_or_else(|| UnknownPricing(s.to_owned()))
    }
}

/// Tokens billed, by class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write: u64,
    /// Input tokens billed without any caching (a summarizer call).
    pub uncached: u64,
    /// Output tokens.
    pub output: u64,
}

impl Tokens {
    /// Every input token of the bill, cached or not.
    pub fn input(&self) -> u64 {
        self.cache_read + self.cache_write + self.uncached
    }
}

impl std::ops::AddAssign for Tokens {
    fn add_assign(&mut self, other: Tokens) {
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.uncached += other.uncached;
        self.output += other.output;
    }
}
