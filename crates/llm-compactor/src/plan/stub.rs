//! The elision stub: a deterministic one-line replacement for a fat old tool result.
//!
//! It is a pure function of the content's length and the tool's name, so two runs of
//! the same conversation produce the same bytes, a session can replay it, and the stub
//! itself is recognisable (a stub is never stubbed again).

use crate::message::Content;

const PREFIX: &str = "[elided by the harness: ";
const SUFFIX: &str = " result; re-run the call if you need it again]";

/// The stub for a result of `chars` characters from `tool` (the name in the asking call).
///
/// ```
/// use llm_compactor::plan::stub_text;
/// assert_eq!(
///     stub_text(41062, Some("fs_read")),
///     "[elided by the harness: 41062-char fs_read result; re-run the call if you need it again]"
/// );
/// assert_eq!(
///     stub_text(41062, None),
///     "[elided by the harness: 41062-char result; re-run the call if you need it again]"
/// );
/// ```
pub fn stub_text(chars: usize, tool: Option<&str>) -> String {
    match tool {
        Some(name) if !name.is_empty() => format!("{PREFIX}{chars}-char {name}{SUFFIX}"),
        _ => format!("{PREFIX}{chars}-char{SUFFIX}"),
    }
}

/// The length in chars of [`stub_text`]`(chars, tool)`, without writing it.
pub(crate) fn stub_chars(chars: usize, tool: Option<&str>) -> usize {
    let digits = chars.checked_ilog10().map_or(1, |log| log as usize + 1);
    let name = match tool {
        Some(name) if !name.is_empty() => 1 + name.chars().count(),
        _ => 0,
    };
    PREFIX.len() + digits + "-char".len() + name + SUFFIX.len()
}

/// True when `content` is already a stub (of any size and tool).
///
/// ```
/// use llm_compactor::message::Content;
/// use llm_compactor::plan::{is_stub, stub_text};
/// assert!(is_stub(&Content::Text(stub_text(5000, Some("bash")))));
/// assert!(!is_stub(&Content::Text("[elided by the harness: but not really".into())));
/// ```
pub fn is_stub(content: &Content) -> bool {
    let Content::Text(text) = content else { return false };
    if is_expandable_stub(text) || super::is_door_preview(text) {
        return true;
    }
    let Some(middle) = text.strip_prefix(PREFIX).and_then(|rest| rest.strip_suffix(SUFFIX)) else {
        return false;
    };
    let Some((digits, _)) = middle.split_once("-char") else {
        return false;
    };
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// True for a stub of [`crate::plan::expandable_stub_text`] (expansion on).
fn is_expandable_stub(text: &str) -> bool {
    let Some(middle) = text
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(" to read it]"))
    else {
        return false;
    };
    let Some((digits, rest)) = middle.split_once("-char") else {
        return false;
    };
    !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && rest.contains("; call compactor_expand with \"#")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expandable_stub_is_a_stub() {
        let stub = crate::plan::expandable_stub_text(5000, Some("bash"), "#0123456789");
        assert!(is_stub(&Content::Text(stub)));
        assert!(is_stub(&Content::Text(crate::plan::expandable_stub_text(
            5000,
            None,
            "#0123456789"
        ))));
    }

    #[test]
    fn stub_chars_is_the_length_of_the_stub() {
        for chars in [0, 1, 9, 10, 99, 100, 41_062, usize::MAX] {
            for tool in [None, Some(""), Some("bash"), Some("lire_fichier_é")] {
                assert_eq!(
                    stub_chars(chars, tool),
                    stub_text(chars, tool).chars().count(),
                    "{chars} {tool:?}"
                );
            }
        }
    }
}
