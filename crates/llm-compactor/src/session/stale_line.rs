//! The transcript's record of signed thinking a pass left on a new prefix.
//!
//! A pass that summarizes or stubs before kept turns moves their thinking onto a prefix
//! it was not produced under; a model with preserved thinking then refuses those blocks,
//! or drops them when the request asks (`drop_block`). Which blocks, after which pass, and
//! what was done about it belongs in the transcript beside the pass: a reader of the
//! session sees why the model re-thought, and the count is there for an audit without the
//! provider's logs. The line is a custom type (replay skips it; older readers keep it).

use serde_json::{Value, json};

/// The line type: the thinking blocks a pass left on a new prefix.
pub const TYPE_STALE_THINKING: &str = "stale-thinking";

/// The payload of a [`TYPE_STALE_THINKING`] line: how many blocks, the head of each
/// block's signature (enough to find it; the full signatures are in the messages), and
/// the remedy (`"drop_block"`: the request asks the provider to drop them; `"caller"`:
/// the caller who sends the request is told, `Prepared::stale_thinking`).
///
/// ```
/// use llm_compactor::session::stale_thinking_line;
/// let line = stale_thinking_line(&["EqQBCkgIARABGAIiQK".to_owned()], "drop_block");
/// assert_eq!(line["blocks"], 1);
/// assert_eq!(line["signatures"][0], "EqQBCkgIARABGAIi");
/// ```
pub fn stale_thinking_line(stale: &[String], remedy: &str) -> Value {
    let heads: Vec<String> = stale.iter().map(|s| s.chars().take(16).collect()).collect();
    json!({"blocks": stale.len(), "signatures": heads, "remedy": remedy})
}
