//! [`Secret`]: an API key that cannot leak through `Debug`, `Display` or an error.
//!
//! Keys end up in bug reports when a config struct is `{:?}`-printed or an error message
//! quotes a server that echoed the header back. The newtype makes the safe thing the only
//! thing: the key is reachable only through [`Secret::expose`], which the transport calls
//! when it writes the header, and [`Secret::redact`] scrubs it from any text that came back.

use std::fmt;

/// A secret string (an API key). Its `Debug` prints `Secret(***)`; it has no `Display`.
///
/// ```
/// use llm_compactor::backend::http::Secret;
/// let key = Secret::new("sk-live-123");
/// assert_eq!(format!("{key:?}"), "Secret(***)");
/// assert_eq!(key.redact("bad key sk-live-123"), "bad key ***");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret replaced by `***` (an empty secret
    /// redacts nothing).
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.0, "***")
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}
