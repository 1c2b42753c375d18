//! Aging the provider does for us: Anthropic's server-side tool-result clearing
//! (`clear_tool_uses_20250919`) in place of our aging stubs, so that signed thinking
//! stays valid.
//!
//! # Why
//!
//! An aging stub edits an old tool result in place. On a model with preserved thinking
//! every thinking block after that result is then bound to a prefix that is no longer
//! sent: the provider refuses it (or drops it under `drop_block`) and the model thinks
//! again. Measured through the proxy, aging epochs left 23% of the thinking blocks valid.
//! Anthropic's documentation names the way out: context edits applied on the server
//! (`clear_tool_uses`, compaction) are not edits of the history the blocks are bound to;
//! the client keeps sending its full, unedited history and the server clears the oldest
//! tool results, in order, before the model reads them, keeping the latest `keep` tool
//! uses. So where our pass stubbed the *oldest* results, the request can carry those
//! results as the client sent them plus an edit that clears exactly them: the model reads
//! what the stubs would have left (a placeholder instead of the bytes) and every thinking
//! block keeps its prefix.
//!
//! # The rule
//!
//! The server clears a run of the oldest tool uses, never a chosen set. The run cleared
//! is the longest one from the first tool use that ends at a result we stubbed and in
//! which every result we did not stub may be cleared as well: small (at most
//! `small_chars`, the size below which aging never stubs), not a failure (errors are what
//! a model most needs to see again), not sticky. Stubs after the run stay as they are
//! (real edits; the caller's `drop_block` handles the thinking after them). Results are
//! matched to the client's originals by call id, so a stub whose original the client no
//! longer sends stays a stub. A door preview (a result too large to send, replaced when it
//! came) is never restored: the model never read the original; it goes as the preview, and
//! the server may clear it with the run. The bytes carried back are bounded
//! ([`MAX_RESTORED_BYTES`]): what the model never reads whole still goes over the wire.
//!
//! Pure: the messages in, the messages to send and the edit's `keep` out; the wire form
//! of the edit is [`crate::format::context_management::with_clear_tool_uses`].

use std::collections::HashMap;

use crate::message::Message;
use crate::plan::door::is_door_preview;
use crate::plan::failed::is_failed_result;
use crate::plan::stub::is_stub;

/// The most bytes of the client's own results a request carries back for the server to
/// clear: the request must stay well under the providers' 32 MB limit, whatever the
/// stubs stood for (the run stops before the stub that would pass it).
pub const MAX_RESTORED_BYTES: usize = 8 * 1024 * 1024;

/// Tool-result clearing the provider can do in place of our stubs.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServerClearing {
    /// The conversation to send: the stubbed results of the cleared run restored to the
    /// client's own bytes (the server clears them again).
    pub messages: Vec<Message>,
    /// The edit's `keep`: the tool uses after the cleared run.
    pub keep: usize,
    /// Tool uses the server clears (the oldest ones).
    pub cleared: usize,
    /// Of those, stubs restored to the client's bytes.
    pub restored: usize,
    /// Of those, small results we had kept that the server clears too.
    pub also_cleared: usize,
}

/// The clearing that stands for the oldest stubs of `sent` (a pass's output as it would
/// go out), with the client's unedited results read from `originals`; `None` when no
/// stub opens a run the server can clear.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::binding::clear_on_server;
/// use llm_compactor::plan::stub_text;
/// let call = |id: &str| Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "bash", "{}")]);
/// let original = vec![
///     Message::user("go"),
///     call("a"), Message::tool("a", "x".repeat(5000)),
///     call("b"), Message::tool("b", "y".repeat(5000)),
/// ];
/// let mut sent = original.clone();
/// sent[2] = Message::tool("a", stub_text(5000, Some("bash")));
/// let clearing = clear_on_server(&sent, &original, 200).unwrap();
/// assert_eq!((clearing.cleared, clearing.keep, clearing.restored), (1, 1, 1));
/// assert_eq!(clearing.messages, original);
/// ```
pub fn clear_on_server(sent: &[Message], originals: &[Message], small_chars: usize) -> Option<ServerClearing> {
    let original_results: HashMap<&str, &Message> = originals
        .iter()
        .filter(|m| m.is_tool_result())
        .filter_map(|m| Some((m.tool_call_id.as_deref()?, m)))
        .collect();
    let sent_results: HashMap<&str, usize> = sent
        .iter()
        .enumerate()
        .filter(|(_, m)| m.is_tool_result())
        .filter_map(|(i, m)| Some((m.tool_call_id.as_deref()?, i)))
        .collect();
    let calls: Vec<&str> = sent
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    // Walk the tool uses oldest first; the run ends at the last stub reached before a
    // result the server may not clear.
    let (mut run, mut restored_bytes) = (0, 0);
    for (position, id) in calls.iter().enumerate() {
        let Some(&index) = sent_results.get(id) else { break };
        let result = &sent[index];
        let kept_whole = |result: &Message| result.is_sticky() || is_failed_result(result);
        if door_preview(result) {
            // What the model has read since the result came: never the client's bytes
            // again (they may be megabytes); the server may clear the preview itself,
            // unless it must stay (a failure, a sticky result).
            if kept_whole(result) {
                break;
            }
            continue;
        }
        if is_stub(&result.content) {
            match original_results.get(id) {
                Some(original) if !is_stub(&original.content) && !original.is_sticky() => {
                    restored_bytes += original.text().len();
                    if restored_bytes > MAX_RESTORED_BYTES {
                        break;
                    }
                    run = position + 1;
                }
                _ => break,
            }
        } else if kept_whole(result) || result.text().chars().count() > small_chars {
            break;
        }
    }
    if run == 0 {
        return None;
    }
    let mut messages = sent.to_vec();
    let (mut restored, mut also_cleared) = (0, 0);
    for id in &calls[..run] {
        let index = sent_results[id];
        if is_stub(&messages[index].content) && !door_preview(&messages[index]) {
            messages[index].content = original_results[id].content.clone();
            restored += 1;
        } else {
            also_cleared += 1;
        }
    }
    Some(ServerClearing {
        messages,
        keep: calls.len() - run,
        cleared: run,
        restored,
        also_cleared,
    })
}

/// A result the door replaced by its preview when it came (`plan::door`).
fn door_preview(result: &Message) -> bool {
    matches!(&result.content, crate::message::Content::Text(text) if is_door_preview(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::plan::stub_text;

    fn call(id: &str) -> Message {
        Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "bash", "{}")])
    }

    fn session(sizes: &[usize]) -> Vec<Message> {
        let mut messages = vec![Message::user("go")];
        for (n, size) in sizes.iter().enumerate() {
            let id = format!("c{n}");
            messages.push(call(&id));
            messages.push(Message::tool(&id, "r".repeat(*size)));
        }
        messages
    }

    fn stubbed(original: &[Message], results: &[usize]) -> Vec<Message> {
        let mut sent = original.to_vec();
        for &n in results {
            let index = 2 + 2 * n;
            let size = sent[index].text().len();
            sent[index].content = crate::message::Content::Text(stub_text(size, Some("bash")));
        }
        sent
    }

    #[test]
    fn the_oldest_stubs_become_a_clearing_and_the_newer_stubs_stay() {
        let original = session(&[4000, 4000, 100, 4000, 4000, 4000]);
        // Stubs 0, 1, 3 and 5; result 2 is small; result 4 was kept (large).
        let sent = stubbed(&original, &[0, 1, 3, 5]);
        let clearing = clear_on_server(&sent, &original, 200).unwrap();
        assert_eq!(clearing.cleared, 4, "0..=3: the small result 2 is cleared with them");
        assert_eq!(clearing.keep, 2);
        assert_eq!((clearing.restored, clearing.also_cleared), (3, 1));
        assert_eq!(clearing.messages[..9], original[..9]);
        assert_eq!(
            clearing.messages[11], sent[11],
            "stub 5, after a kept large result, stays"
        );
    }

    #[test]
    fn a_failure_or_a_large_kept_result_ends_the_run() {
        let original = session(&[100, 4000]);
        let sent = stubbed(&original, &[1]);
        let mut failed = original.clone();
        failed[2] = Message::tool("c0", "Error: no such file");
        failed[2].extras.insert("is_error".into(), true.into());
        let failed_sent = stubbed(&failed, &[1]);
        assert!(
            clear_on_server(&failed_sent, &failed, 200).is_none(),
            "an error is never cleared"
        );
        assert!(
            clear_on_server(&sent, &original, 50).is_none(),
            "100 chars are not small under 50"
        );
        assert_eq!(clear_on_server(&sent, &original, 200).unwrap().cleared, 2);
    }

    #[test]
    fn nothing_to_clear_without_a_stub_or_an_original() {
        let original = session(&[4000, 4000]);
        assert!(clear_on_server(&original, &original, 200).is_none());
        let sent = stubbed(&original, &[0]);
        // The client no longer sends the original (it was summarized away on its side).
        assert!(clear_on_server(&sent, &original[3..], 200).is_none());
    }

    #[test]
    fn a_door_preview_is_never_restored_but_may_be_cleared() {
        let original = session(&[400_000, 4000, 4000]);
        let mut sent = stubbed(&original, &[1]);
        let preview = crate::plan::preview_text(&original[2].text(), Some("bash"), "#0123456789", 1_600, 0);
        assert!(is_door_preview(&preview) && is_stub(&crate::message::Content::Text(preview.clone())));
        sent[2].content = crate::message::Content::Text(preview.clone());
        let clearing = clear_on_server(&sent, &original, 200).unwrap();
        assert_eq!(clearing.cleared, 2, "the preview and the stub after it");
        assert_eq!(clearing.messages[2].text(), preview, "the preview goes as it is");
        assert_eq!(clearing.messages[4], original[4], "the stub is restored");
        assert_eq!(clearing.restored, 1);
    }

    #[test]
    fn the_bytes_carried_back_are_bounded() {
        let big = MAX_RESTORED_BYTES / 2 + 1;
        let original = session(&[big, big, 4000]);
        let sent = stubbed(&original, &[0, 1]);
        let clearing = clear_on_server(&sent, &original, 200).unwrap();
        assert_eq!(
            (clearing.cleared, clearing.restored),
            (1, 1),
            "the second would pass the bound"
        );
        assert_eq!(clearing.messages[4], sent[4], "it stays a stub");
    }
}
