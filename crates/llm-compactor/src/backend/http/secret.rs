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

    /// `text` scrubbed and then cut for display: every occurrence of the secret is
    /// replaced by `***` *first*, then the text is whitespace-trimmed and cut to
    /// `max_chars` chars (with `…` when cut), and a prefix of the secret of
    /// [`MIN_PARTIAL_SECRET`] chars or more left at the end by the cut is scrubbed too.
    /// Cutting first would let a secret straddling the cut escape all but its last
    /// char.
    ///
    /// ```
    /// use llm_compactor::backend::http::Secret;
    /// let key = Secret::new("sk-live-0123456789abcdef");
    /// let text = format!("{}invalid key {} (check it)", "x".repeat(10), key.expose());
    /// // Scrubbed before the cut: a cut inside the key cannot leave its first chars.
    /// assert_eq!(key.redact_cut(&text, 24), format!("{}invalid key **…", "x".repeat(10)));
    /// assert_eq!(key.redact_cut(&text, 200), format!("{}invalid key *** (check it)", "x".repeat(10)));
    /// // A server that itself echoed only the start of the key: scrubbed at the cut too.
    /// let partial = format!("{}invalid key {}", "x".repeat(10), &key.expose()[..20]);
    /// assert_eq!(key.redact_cut(&partial, 38), format!("{}invalid key ***…", "x".repeat(10)));
    /// ```
    pub fn redact_cut(&self, text: &str, max_chars: usize) -> String {
        cut_scrubbed(&self.redact(text), &self.0, max_chars)
    }
}

/// The shortest prefix of a secret that [`Secret::redact_cut`] scrubs at the cut.
pub const MIN_PARTIAL_SECRET: usize = 8;

/// Trims `text` (already scrubbed of `secret`) and cuts it to `max_chars` chars, scrubbing
/// a prefix of `secret` of [`MIN_PARTIAL_SECRET`] chars or more that the cut left at the
/// end. An empty `secret` scrubs nothing.
pub(super) fn cut_scrubbed(text: &str, secret: &str, max_chars: usize) -> String {
    let text = text.trim();
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return text.to_owned();
    };
    let mut head = &text[..cut];
    let longest = secret
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(secret.len()))
        .filter(|&end| secret[..end].chars().count() >= MIN_PARTIAL_SECRET && head.ends_with(&secret[..end]))
        .max();
    let mut out = String::with_capacity(cut + 8);
    if let Some(end) = longest {
        head = &head[..head.len() - end];
        out.push_str(head);
        out.push_str("***");
    } else {
        out.push_str(head);
    }
    out.push('…');
    out
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}
