//! [`DoorRules`]: the caps of the door, with the peers' measured defaults.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Chars a token is taken as when a cap in tokens is compared with a result's chars (the
/// heuristic counter's ratio; the rule is pure and counts no tokens).
pub const DOOR_CHARS_PER_TOKEN: usize = 4;

/// The default cap on one tool result, in tokens: deepagents evicts results over 20,000
/// tokens to files (Claude Code caps Bash at 30,000 chars and Grep at 20,000 at
/// ingestion, inside a 200k window).
pub const DEFAULT_TOOL_CAP_TOKENS: usize = 20_000;

/// The default preview of a capped result, in chars (head and tail together): Claude
/// Code keeps a 2 KB preview. Kept under the aging size floor (2,048 chars with its
/// marker) so a preview is not stubbed again.
pub const DEFAULT_PREVIEW_CHARS: usize = 1_600;

/// The default number of media parts kept: more than 20 images in one request lowers
/// Anthropic's per-image limit from 8000×8000 to 2000×2000 px (the "many-image" rule,
/// which rejects the request, not the image: anthropics/claude-code#13480).
pub const DEFAULT_KEEP_MEDIA: usize = 20;

/// The default byte ceiling of a conversation's content: Anthropic's request limit is 32
/// MB on standard endpoints (lower on Bedrock and Vertex AI); 30,000,000 leaves 2 MB for
/// the system prompt, the tools and the JSON around the messages.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 30_000_000;

/// The door's caps (see [`super::door`]). `Default` is every default above.
///
/// ```
/// use llm_compactor::plan::DoorRules;
/// let rules = DoorRules::default().with_tool_cap("grep", 5_000);
/// assert_eq!(rules.cap_chars(Some("grep")), 20_000);
/// assert_eq!(rules.cap_chars(Some("bash")), 80_000);
/// assert_eq!(rules.cap_chars(None), 80_000);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct DoorRules {
    /// The cap on a tool result, in tokens (×[`DOOR_CHARS_PER_TOKEN`] chars), for every
    /// tool without its own. Default [`DEFAULT_TOOL_CAP_TOKENS`].
    pub tool_cap_tokens: usize,
    /// Caps in tokens by tool name (the name in the asking call), over the default.
    pub tool_caps: BTreeMap<String, usize>,
    /// Chars of a capped result kept, head (three quarters) and tail (the rest) together.
    /// Default [`DEFAULT_PREVIEW_CHARS`].
    pub preview_chars: usize,
    /// Media parts kept, newest first (the unanswered turn's always). Default
    /// [`DEFAULT_KEEP_MEDIA`].
    pub keep_media: usize,
    /// Bytes of content (text and media, JSON as sent) over which the oldest media go.
    /// Default [`DEFAULT_MAX_REQUEST_BYTES`].
    pub max_request_bytes: usize,
}

impl Default for DoorRules {
    fn default() -> Self {
        DoorRules {
            tool_cap_tokens: DEFAULT_TOOL_CAP_TOKENS,
            tool_caps: BTreeMap::new(),
            preview_chars: DEFAULT_PREVIEW_CHARS,
            keep_media: DEFAULT_KEEP_MEDIA,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }
}

impl DoorRules {
    /// With `tokens` as the cap of the tool named `name`.
    #[must_use]
    pub fn with_tool_cap(mut self, name: impl Into<String>, tokens: usize) -> Self {
        self.tool_caps.insert(name.into(), tokens);
        self
    }

    /// With `tokens` as the cap of every tool without its own.
    #[must_use]
    pub fn with_default_cap(mut self, tokens: usize) -> Self {
        self.tool_cap_tokens = tokens;
        self
    }

    /// With `n` media parts kept.
    #[must_use]
    pub fn with_keep_media(mut self, n: usize) -> Self {
        self.keep_media = n;
        self
    }

    /// With `bytes` as the content's byte ceiling.
    #[must_use]
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// With `chars` of preview.
    #[must_use]
    pub fn with_preview_chars(mut self, chars: usize) -> Self {
        self.preview_chars = chars;
        self
    }

    /// The cap in chars of a result of the tool named `tool`.
    pub fn cap_chars(&self, tool: Option<&str>) -> usize {
        tool.and_then(|name| self.tool_caps.get(name))
            .copied()
            .unwrap_or(self.tool_cap_tokens)
            .saturating_mul(DOOR_CHARS_PER_TOKEN)
    }

    /// What is wrong with these rules, if anything: a zero cap would cap every result
    /// (an empty one too), a preview at least as long as the smallest cap would not
    /// shrink what it caps, and a zero byte ceiling would take every media part.
    pub fn problem(&self) -> Option<String> {
        let smallest = self
            .tool_caps
            .values()
            .copied()
            .chain([self.tool_cap_tokens])
            .min()
            .unwrap_or(self.tool_cap_tokens);
        if smallest == 0 {
            return Some("a door tool cap must be at least 1 token".into());
        }
        if self.preview_chars >= smallest.saturating_mul(DOOR_CHARS_PER_TOKEN) {
            return Some(format!(
                "the door's preview ({} chars) must be shorter than its smallest tool cap ({} chars)",
                self.preview_chars,
                smallest.saturating_mul(DOOR_CHARS_PER_TOKEN)
            ));
        }
        if self.max_request_bytes == 0 {
            return Some("door max_request_bytes must be at least 1".into());
        }
        None
    }
}
