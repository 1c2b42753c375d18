//! Handles: the short names a summary and a stub give the messages a pass replaced or
//! elided, so that the original can be fetched back byte for byte (`compactor_expand`,
//! `compactor session expand`).
//!
//! A handle is `#` and ten lowercase hex digits: the start of the SHA-256 of a
//! domain-separated string that names the message *independently of the session it
//! lives in*:
//!
//! - a message with an id (every message of a session transcript and of the proxy's
//!   store has one, written once and never changed) is named by its id:
//!   `SHA-256("llm-compactor handle v1\0id\0" + id)`. The same message has the same
//!   handle after a restart, on another proxy instance, and in an exported transcript;
//! - a message without an id (the one-shot `compact` of a plain conversation file) is
//!   named by its position and its digest: `SHA-256("llm-compactor handle v1\0at\0" +
//!   index + "\0" + message digest)`. It resolves against the same input file; a file
//!   whose message at that position changed no longer resolves it (the handle would
//!   name something else, so it names nothing).
//!
//! Collisions: 40 bits make two messages of one session share a handle with a
//! probability of about n²/2⁴¹ (10⁻⁴ at 10,000 messages). A handle is resolved only
//! among the messages of its own session, so a collision can never reach another
//! session; within the session, resolving returns *every* message that carries it, in
//! order, each with its id, so nothing is hidden and the reader sees the ambiguity.
//!
//! Pure: no I/O, no clock.

use sha2::{Digest, Sha256};

use crate::message::{Message, Role, message_digest};

/// Hex digits of a handle (after the `#`).
pub const HANDLE_DIGITS: usize = 10;

/// The domain that separates a handle's hash from every other SHA-256 in the project.
const DOMAIN: &str = "llm-compactor handle v1\0";

fn short(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(HANDLE_DIGITS + 1);
    out.push('#');
    for byte in digest.iter().take(HANDLE_DIGITS / 2) {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The handle of the message whose id is `id`.
///
/// ```
/// use llm_compactor::plan::handle_for_id;
/// let h = handle_for_id("msg-0042");
/// assert_eq!(h.len(), 11);
/// assert!(h.starts_with('#'));
/// assert_eq!(h, handle_for_id("msg-0042"));
/// assert_ne!(h, handle_for_id("msg-0043"));
/// ```
pub fn handle_for_id(id: &str) -> String {
    short(format!("{DOMAIN}id\0{id}").as_bytes())
}

/// The handle of an id-less `message` at `index` of its conversation.
pub fn handle_for_position(index: usize, message: &Message) -> String {
    short(format!("{DOMAIN}at\0{index}\0{}", message_digest(message)).as_bytes())
}

/// The handle of `message` at `index`: by its id when it has one, else by position and
/// digest.
pub fn handle_of(index: usize, message: &Message) -> String {
    match &message.id {
        Some(id) if !id.is_empty() => handle_for_id(id),
        _ => handle_for_position(index, message),
    }
}

/// True for a well-formed handle (`#` and ten lowercase hex digits).
pub fn is_handle(text: &str) -> bool {
    text.len() == HANDLE_DIGITS + 1
        && text.starts_with('#')
        && text[1..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Every handle named in `text`, in order, deduplicated: a `#` followed by exactly ten
/// lowercase hex digits and no further name character.
///
/// ```
/// use llm_compactor::plan::handles_in;
/// let text = "- src/a.py (edit) [#0123456789] and #abcdefabcd, not #0123 nor #0123456789ab";
/// assert_eq!(handles_in(text), vec!["#0123456789", "#abcdefabcd"]);
/// ```
pub fn handles_in(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(pos) = text[i..].find('#') {
        let start = i + pos;
        let end = start + 1 + HANDLE_DIGITS;
        i = start + 1;
        if end > bytes.len() || !text.is_char_boundary(end) {
            continue;
        }
        let candidate = &text[start..end];
        let followed = bytes.get(end).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
        if is_handle(candidate) && !followed && !out.iter().any(|h| h == candidate) {
            out.push(candidate.to_owned());
        }
    }
    out
}

/// How a stub tells the model where the original is (only with expansion on; the stub
/// of [`super::stub_text`] is otherwise unchanged, a compatibility promise).
///
/// ```
/// use llm_compactor::plan::{expandable_stub_text, stub_text};
/// let stub = expandable_stub_text(41062, Some("fs_read"), "#0123456789");
/// assert!(stub.starts_with("[elided by the harness: 41062-char fs_read result"));
/// assert!(stub.contains("#0123456789"));
/// assert!(stub.contains("compactor_expand"));
/// assert_ne!(stub, stub_text(41062, Some("fs_read")));
/// ```
pub fn expandable_stub_text(chars: usize, tool: Option<&str>, handle: &str) -> String {
    match tool {
        Some(name) if !name.is_empty() => format!(
            "[elided by the harness: {chars}-char {name} result {handle}; call compactor_expand with \"{handle}\" to read it]"
        ),
        _ => format!(
            "[elided by the harness: {chars}-char result {handle}; call compactor_expand with \"{handle}\" to read it]"
        ),
    }
}

/// The messages one handle expands to, from the message at `index`: the message
/// itself and, for an agent's turn that called tools, the results that answer it (by
/// `tool_call_id`; for a text-format agent like mini-swe-agent, the observation right
/// after it). A command's line names its call, and what the agent wants back is its
/// output.
pub fn expansion_unit(messages: &[Message], index: usize) -> Vec<usize> {
    let Some(message) = messages.get(index) else {
        return Vec::new();
    };
    let mut out = vec![index];
    if message.role != Role::Assistant {
        return out;
    }
    if message.tool_calls.is_empty() {
        if let Some(next) = messages.get(index + 1)
            && next.role == Role::User
            && is_observation(&next.text())
        {
            out.push(index + 1);
        }
        return out;
    }
    for (i, later) in messages.iter().enumerate().skip(index + 1) {
        let answers = later
            .tool_call_id
            .as_ref()
            .is_some_and(|id| message.tool_calls.iter().any(|c| &c.id == id));
        if answers {
            out.push(i);
        } else if later.role == Role::Assistant {
            break;
        }
    }
    out
}

fn is_observation(text: &str) -> bool {
    let t = text.trim_start();
    ["<returncode>", "<output>", "Observation:", "OBSERVATION:"]
        .iter()
        .any(|p| t.starts_with(p))
}

/// The positions in `messages` (the session's original messages, in order) that
/// `handle` expands to: every message carrying it (more than one only on a collision)
/// with its [`expansion_unit`], in order, each once. Empty when no message of
/// `messages` carries it: a guessed handle, or one of another session, names nothing.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::{handle_of, resolve_handle};
/// let messages = vec![
///     Message::user("fix it").with_id("u1"),
///     Message::assistant("").with_id("a1").with_tool_calls(vec![ToolCall::new("c1", "bash", r#"{"command":"ls"}"#)]),
///     Message::tool("c1", "a.py").with_id("t1"),
/// ];
/// assert_eq!(resolve_handle(&messages, &handle_of(1, &messages[1])), vec![1, 2]);
/// assert_eq!(resolve_handle(&messages, &handle_of(2, &messages[2])), vec![2]);
/// assert!(resolve_handle(&messages, "#0000000000").is_empty());
/// ```
pub fn resolve_handle(messages: &[Message], handle: &str) -> Vec<usize> {
    if !is_handle(handle) {
        return Vec::new();
    }
    let mut out: Vec<usize> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if handle_of(i, message) == handle {
            out.extend(expansion_unit(messages, i));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every handle range (`#first..#last`) named in `text`, in order: what a summary names
/// to say "every message from this one to that one".
///
/// ```
/// use llm_compactor::plan::handle_ranges_in;
/// let text = "Originals: #0123456789..#abcdefabcd (expand any)";
/// assert_eq!(handle_ranges_in(text), vec![("#0123456789".to_owned(), "#abcdefabcd".to_owned())]);
/// ```
pub fn handle_ranges_in(text: &str) -> Vec<(String, String)> {
    let width = HANDLE_DIGITS + 1;
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("..#") {
        let dots = from + pos;
        from = dots + 1;
        if dots < width || !text.is_char_boundary(dots - width) || dots + 2 + width > text.len() {
            continue;
        }
        let (first, last) = (&text[dots - width..dots], &text[dots + 2..dots + 2 + width]);
        if is_handle(first) && is_handle(last) && text.is_char_boundary(dots + 2 + width) {
            out.push((first.to_owned(), last.to_owned()));
        }
    }
    out
}

/// The positions in `messages` from the first message carrying `first` to the last
/// carrying `last`, inclusive (with the results answering the last); empty when either
/// names nothing or they are out of order.
pub fn resolve_range(messages: &[Message], first: &str, last: &str) -> Vec<usize> {
    let start = messages.iter().enumerate().position(|(i, m)| handle_of(i, m) == first);
    let end = messages.iter().enumerate().rposition(|(i, m)| handle_of(i, m) == last);
    match (start, end) {
        (Some(start), Some(end)) if start <= end => {
            let mut out: Vec<usize> = (start..=end).collect();
            out.extend(expansion_unit(messages, end).into_iter().filter(|&i| i > end));
            out
        }
        _ => Vec::new(),
    }
}

/// The handle, or the `#first..#last` range, `request` names, resolved among
/// `messages` (see [`resolve_handle`] and [`resolve_range`]).
pub fn resolve_request(messages: &[Message], request: &str) -> Vec<usize> {
    match request.trim().split_once("..") {
        Some((first, last)) => resolve_range(messages, first.trim(), last.trim()),
        None => resolve_handle(messages, request.trim()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_positions_give_different_handles() {
        let m = Message::user("hi");
        let by_position = handle_of(3, &m);
        assert_eq!(by_position, handle_for_position(3, &m));
        assert_ne!(by_position, handle_of(4, &m));
        assert_ne!(by_position, handle_of(3, &Message::user("hi!")));
        let with_id = m.clone().with_id("a");
        assert_eq!(handle_of(3, &with_id), handle_for_id("a"));
        assert_eq!(handle_of(9, &with_id), handle_for_id("a"));
        assert!(is_handle(&by_position));
    }

    #[test]
    fn handles_in_text_ignore_longer_hex_and_non_char_boundaries() {
        assert!(handles_in("#0123456789abc").is_empty());
        assert!(handles_in("é#0123456789é").len() == 1);
        assert!(handles_in("#01234567é9").is_empty());
        assert!(handles_in("#ABCDEF0123").is_empty());
    }
}
