//! Reading a server's usage numbers leniently.
//!
//! Usage is bookkeeping, the summary is the product: a server (or proxy) that reports
//! odd numbers (negative, `1e30`, `12.5`, a string) must not turn a good summary into a
//! parse failure and a retry. Such usage is treated as unknown (zero, with a warning),
//! and so is any count above [`MAX_PLAUSIBLE_TOKENS`], which no request has and which
//! would make sums overflow.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::usage::Usage;

/// The largest token count believed.
pub const MAX_PLAUSIBLE_TOKENS: u64 = 1_000_000_000_000;

/// `deserialize_with` for an optional usage object: anything that does not read as `T`
/// is `None` (unknown), never an error.
pub(super) fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(value.and_then(|value| match serde_json::from_value::<T>(value) {
        Ok(usage) => Some(usage),
        Err(error) => {
            tracing::warn!(%error, "the server's usage numbers are not counts; usage treated as unknown");
            None
        }
    }))
}

/// `usage`, or unknown (zero) when a count is implausibly large.
pub(super) fn plausible(usage: Usage) -> Usage {
    let counts = [
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    ];
    if counts.iter().any(|&n| n > MAX_PLAUSIBLE_TOKENS) {
        tracing::warn!(?usage, "implausible usage numbers; usage treated as unknown");
        return Usage::default();
    }
    usage
}
