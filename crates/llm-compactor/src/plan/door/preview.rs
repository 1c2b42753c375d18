//! The preview of a tool result over its cap: its head, a marker naming what was cut and
//! the handle that reads it back, and its tail (where a command's error and exit status
//! usually are).

use super::DoorRules;
use crate::message::{Content, Message, Part};
use crate::plan::handle_of;

const MARKER: &str = "[capped by the harness: ";
const MARKER_END: &str = " to read it whole]";

/// The longest text taken for a preview by [`is_door_preview`]: a preview is short by
/// construction, and a long result that happens to contain a marker line is not one.
const MAX_PREVIEW_CHARS: usize = 8_192;

/// The preview of `text` (`chars` long, of the tool `tool`, read back by `handle`)
/// keeping `preview_chars` of it: three quarters from the head, the rest from the tail.
///
/// ```
/// use llm_compactor::plan::{is_door_preview, preview_text};
/// let text: String = (0..5_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
/// let preview = preview_text(&text, Some("bash"), "#0123456789", 400, 0);
/// assert!(preview.starts_with(&text[..300]));
/// assert!(preview.ends_with(&text[4_900..]));
/// assert!(preview.contains("5000-char bash result #0123456789; 4600 chars cut here"));
/// assert!(is_door_preview(&preview));
/// ```
pub fn preview_text(text: &str, tool: Option<&str>, handle: &str, preview_chars: usize, media: usize) -> String {
    let chars = text.chars().count();
    let head_chars = preview_chars - preview_chars / 4;
    let tail_chars = (preview_chars / 4).min(chars.saturating_sub(head_chars));
    let head_end = text.char_indices().nth(head_chars).map_or(text.len(), |(i, _)| i);
    let tail_start = if tail_chars == 0 {
        text.len()
    } else {
        text.char_indices()
            .rev()
            .nth(tail_chars - 1)
            .map_or(head_end, |(i, _)| i.max(head_end))
    };
    let cut = chars.saturating_sub(head_chars + tail_chars);
    let what = match tool {
        Some(name) if !name.is_empty() => format!("{chars}-char {name} result"),
        _ => format!("{chars}-char result"),
    };
    let media = match media {
        0 => String::new(),
        1 => " (and 1 media part)".to_owned(),
        n => format!(" (and {n} media parts)"),
    };
    format!(
        "{}\n{MARKER}{what}{media} {handle}; {cut} chars cut here; call compactor_expand with \"{handle}\"{MARKER_END}\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}

/// True when `text` is a preview [`preview_text`] wrote: short, with one marker line that
/// names a handle. Such a text is never capped or stubbed again.
pub fn is_door_preview(text: &str) -> bool {
    if text.len() > MAX_PREVIEW_CHARS * 4 || text.chars().count() > MAX_PREVIEW_CHARS {
        return false;
    }
    text.lines().any(|line| {
        line.strip_prefix(MARKER)
            .and_then(|rest| rest.strip_suffix(MARKER_END))
            .is_some_and(|middle| {
                middle.contains(" chars cut here; call compactor_expand with \"#")
                    && !crate::plan::handles_in(middle).is_empty()
            })
    })
}

/// The preview that replaces the result at `index` when it is over its cap, else `None`.
pub(super) fn capped(index: usize, message: &Message, tool: Option<&str>, rules: &DoorRules) -> Option<String> {
    let cap = rules.cap_chars(tool);
    let (text, media) = match &message.content {
        Content::Text(text) => (text.clone(), 0),
        Content::Parts(parts) => (
            message.content.text(),
            parts.iter().filter(|p| matches!(p, Part::Other(_))).count(),
        ),
        Content::Absent | Content::Null => return None,
    };
    // Bytes bound chars from above: most results are decided without counting.
    if text.len() <= cap {
        return None;
    }
    let chars = text.chars().count();
    // A preview the door wrote (however small the cap) is left as it is: the rule is a
    // fixed point. Only one no longer than a preview can be is taken for one, so a long
    // result that carries a marker line of its own is still capped.
    let longest_preview =
        rules.preview_chars + MARKER.len() + MARKER_END.len() + tool.map_or(0, |name| name.chars().count()) + 160;
    if chars <= cap || (chars <= longest_preview && is_door_preview(&text)) {
        return None;
    }
    let handle = handle_of(index, message);
    Some(preview_text(&text, tool, &handle, rules.preview_chars, media))
}
