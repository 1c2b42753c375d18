//! Rendering the middle as the plain-text transcript the summarizer reads.
//!
//! Each message is a `[role]` line and its body; each tool call a `-> calls NAME(ARGS)`
//! line. Tool results and call arguments longer than the cap are cut with a marker that
//! says how many characters went, so the summarizer can tell the transcript was cut
//! rather than read one that stops mid-word. The cap applies only to this input, never
//! to the conversation itself: its job is to keep a compaction triggered by one enormous
//! result from failing for exactly the reason it was invoked.

use crate::message::Message;

/// `text` cut to `cap` chars, with a marker saying how many chars were cut; unchanged
/// when it fits.
///
/// ```
/// use llm_compactor::summarize::truncate_marked;
/// assert_eq!(truncate_marked("abcdef", 4), "abcd\n[... 2 more characters truncated]");
/// assert_eq!(truncate_marked("abc", 4), "abc");
/// ```
pub fn truncate_marked(text: &str, cap: usize) -> String {
    cut_marked(text, cap, "\n")
}

fn cut_marked(text: &str, cap: usize, separator: &str) -> String {
    match text.char_indices().nth(cap) {
        None => text.to_owned(),
        Some((byte, _)) => {
            let cut = text[byte..].chars().count();
            format!("{}{separator}[... {cut} more characters truncated]", &text[..byte])
        }
    }
}

/// One message as the summarizer sees it.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::summarize::render_message;
/// let ask = Message::assistant("Reading.").with_tool_calls(vec![ToolCall::new("1", "fs_read", r#"{"path":"a"}"#)]);
/// assert_eq!(render_message(&ask, 100), "[assistant]\nReading.\n-> calls fs_read({\"path\":\"a\"})\n");
/// assert_eq!(render_message(&Message::tool("1", "0123456789"), 4), "[tool]\n0123\n[... 6 more characters truncated]\n");
/// ```
pub fn render_message(message: &Message, cap: usize) -> String {
    let mut out = format!("[{}]\n", message.role.as_str());
    let text = message.text();
    let body = if message.is_tool_result() {
        truncate_marked(&text, cap)
    } else {
        text
    };
    if !body.is_empty() {
        out.push_str(&body);
        out.push('\n');
    }
    for call in &message.tool_calls {
        let arguments = cut_marked(&call.arguments, cap, " ");
        out.push_str(&format!("-> calls {}({arguments})\n", call.name));
    }
    out
}

/// Several messages, each rendered by [`render_message`], separated by blank lines.
pub fn render_transcript<'a>(messages: impl IntoIterator<Item = &'a Message>, cap: usize) -> String {
    let rendered: Vec<String> = messages.into_iter().map(|m| render_message(m, cap)).collect();
    rendered.join("\n")
}
