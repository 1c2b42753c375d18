//! Which signed thinking blocks a conversation carries on a prefix they were not produced
//! under, pass after pass.
//!
//! A pass that summarizes or stubs before a kept turn moves that turn's thinking onto a
//! new prefix: a model with preserved thinking refuses it (or drops it under
//! `drop_block`). Such a block stays invalid for as long as it is sent, whatever later
//! passes do: a later pass that edits nothing before it does not make it valid again.
//! So the set is carried from pass to pass and only shrinks when the blocks are gone.
//! Blocks are named by their signature (a redacted block by its data): positions move,
//! signatures do not.

use crate::message::{Content, Message, Part};

use super::invalid::invalidated;
use super::rules::{BindingContext, BindingRules};
use super::server_clearing::clear_on_server;
use super::signed::{BlockRef, SignedKind, signed_blocks};

/// The thinking blocks of `after` (a pass's output) that were valid in `before` (the
/// conversation the pass read, as it was sent) and are not any more, with those of
/// `still` (blocks an earlier pass left stale) that `after` still holds; by name
/// ([`thinking_names`]), sorted. Where the provider clears old results in place of our
/// stubs (`clearing`: the client's messages and the size aging never stubs under, see
/// [`clear_on_server`]), both sides are read as they go out, with those stubs restored.
///
/// ```
/// use llm_compactor::message::{Content, Message, Part};
/// use llm_compactor::plan::binding::stale_thinking;
/// let mut turn = Message::assistant("");
/// turn.content = Content::Parts(vec![
///     Part::from_value(serde_json::json!({"type": "thinking", "thinking": "t", "signature": "s1"})).unwrap(),
///     Part::text("ok"),
/// ]);
/// let before = vec![Message::user("a long story"), Message::user("go"), turn.clone()];
/// let summarized = vec![Message::user("[summary]"), Message::user("go"), turn];
/// assert_eq!(stale_thinking(&before, &summarized, &[], None), ["s1"]);
/// assert!(stale_thinking(&before, &before, &[], None).is_empty());
/// // Once stale, stale while it is sent.
/// assert_eq!(stale_thinking(&summarized, &summarized, &["s1".to_owned()], None), ["s1"]);
/// ```
pub fn stale_thinking(
    before: &[Message],
    after: &[Message],
    still: &[String],
    clearing: Option<(&[Message], usize)>,
) -> Vec<String> {
    let context = BindingContext::new(BindingRules::anthropic());
    let sent = |messages: &[Message]| clearing.and_then(|(client, small)| clear_on_server(messages, client, small));
    let (before_sent, after_sent) = (sent(before), sent(after));
    let after_sent = after_sent.as_ref().map_or(after, |c| c.messages.as_slice());
    let before_sent = before_sent.as_ref().map_or(before, |c| c.messages.as_slice());
    let mut names: Vec<String> = invalidated(before_sent, after_sent, &context)
        .iter()
        .filter(|invalid| invalid.kind.is_thinking())
        .filter_map(|invalid| name(after_sent, invalid.block))
        .collect();
    let held = thinking_names(after);
    names.extend(still.iter().filter(|s| held.contains(s)).cloned());
    names.sort();
    names.dedup();
    names
}

/// The names (signatures; a redacted block's data) of every signed thinking block of
/// `messages`.
pub fn thinking_names(messages: &[Message]) -> Vec<String> {
    signed_blocks(messages)
        .iter()
        .filter(|block| matches!(block.kind, SignedKind::Thinking | SignedKind::RedactedThinking))
        .filter_map(|block| name(messages, block.at))
        .collect()
}

fn name(messages: &[Message], at: BlockRef) -> Option<String> {
    let Content::Parts(parts) = &messages.get(at.message)?.content else {
        return None;
    };
    let value = match parts.get(at.part)? {
        Part::Thinking { extras, .. } => extras.get("signature"),
        Part::Other(value) => value.get("data"),
        _ => None,
    };
    // A block without a signature is named by where it stands (no provider checks it).
    Some(match value {
        Some(serde_json::Value::String(text)) => text.clone(),
        _ => format!("{}.{}", at.message, at.part),
    })
}
