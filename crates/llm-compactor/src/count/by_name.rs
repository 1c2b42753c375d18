//! [`counter_by_name`]: counters by their short names, for the CLI and configuration.

use std::sync::Arc;

use crate::count::{HeuristicCounter, TokenCounter};

/// How many message counts the memo of a named BPE counter keeps (a few MB).
pub const MEMO_ENTRIES: usize = 1 << 16;

/// The names [`counter_by_name`] accepts.
pub const COUNTER_NAMES: &[&str] = &["heuristic", "o200k", "cl100k"];

/// A counter name that [`counter_by_name`] cannot serve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CounterByNameError {
    /// Not a counter we know.
    #[error("unknown counter `{name}` (valid: {})", COUNTER_NAMES.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
    },
    /// A BPE counter asked of a build without the `bpe` feature.
    #[error("counter `{name}` needs llm-compactor's `bpe` feature")]
    FeatureDisabled {
        /// The name asked for.
        name: String,
    },
}

/// The counter called `name`: `heuristic`, `o200k` (alias `o200k_base`) or `cl100k`
/// (alias `cl100k_base`).
///
/// The BPE counters come memoized ([`crate::count::MemoCounter`]), because every caller
/// of a named counter counts conversations that share most of their messages (a loop's
/// growing transcript, the compactor's candidates); the numbers are the plain
/// [`crate::count::BpeCounter`]'s. The memo keeps the [`MEMO_ENTRIES`] most recently
/// seen messages ([`crate::count::MemoCounter::with_capacity`]): one counter is shared by
/// whatever counts with it (a proxy's sessions, a pass and the rewrite it stands for).
///
/// ```
/// use llm_compactor::count::counter_by_name;
/// assert_eq!(counter_by_name("heuristic").unwrap().name(), "heuristic");
/// let err = counter_by_name("gpt2").unwrap_err();
/// assert_eq!(err.to_string(), "unknown counter `gpt2` (valid: heuristic, o200k, cl100k)");
/// ```
///
/// # Errors
/// An unknown name, or a BPE name without the `bpe` feature.
pub fn counter_by_name(name: &str) -> Result<Arc<dyn TokenCounter>, CounterByNameError> {
    match name {
        "heuristic" => Ok(Arc::new(HeuristicCounter)),
        "o200k" | "o200k_base" | "cl100k" | "cl100k_base" => bpe_counter(name),
        _ => Err(CounterByNameError::Unknown { name: name.to_owned() }),
    }
}

#[cfg(feature = "bpe")]
fn bpe_counter(name: &str) -> Result<Arc<dyn TokenCounter>, CounterByNameError> {
    use crate::count::{BpeCounter, MemoCounter};
    let counter = if name.starts_with("o200k") {
        BpeCounter::o200k()
    } else {
        BpeCounter::cl100k()
    };
    Ok(Arc::new(MemoCounter::with_capacity(counter, MEMO_ENTRIES)))
}

#[cfg(not(feature = "bpe"))]
fn bpe_counter(name: &str) -> Result<Arc<dyn TokenCounter>, CounterByNameError> {
    Err(CounterByNameError::FeatureDisabled { name: name.to_owned() })
}
