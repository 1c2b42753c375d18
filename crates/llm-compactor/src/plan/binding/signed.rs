//! Signed state: which parts of which messages a provider has bound, and what "the same
//! message" means for the check.
//!
//! - Anthropic: a `thinking` part carrying a `signature`, a `redacted_thinking` part
//!   (its `data` is the sealed thinking), and a `compaction` block the API wrote.
//! - OpenAI Responses: in an assistant turn read by the Responses codec, a `reasoning`
//!   item with `encrypted_content` and a `compaction` item. The turn's original items
//!   live in its extras; each such item is one [`Part::Other`] view in the turn's
//!   content, so a block is named by that view's part index like any other part. An
//!   item counts only while its turn still writes its items back verbatim (a changed
//!   turn is written without them by the codec: they are not sent at all).
//!
//! A message is compared as the provider sees it: role, content, calls, the answered id,
//! the name and the wire extras. The Anthropic importer's hint (which wire turn a piece
//! came from) is not on the wire and is left out; a Responses turn's items are.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::format::anthropic::{ANTHROPIC_HINT_KEY, COMPACTION_BLOCK};
use crate::format::responses::{COMPACTION_ITEM, RESPONSES_HINT_KEY, item_kind, message_items};
use crate::message::{Content, Message, Part, Role};

/// Where a block is: the message's index and the part's index in its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BlockRef {
    /// The message's index in the conversation.
    pub message: usize,
    /// The part's index in the message's [`Content::Parts`].
    pub part: usize,
}

impl BlockRef {
    /// A block reference.
    pub const fn new(message: usize, part: usize) -> Self {
        BlockRef { message, part }
    }
}

/// What kind of signed state a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SignedKind {
    /// An Anthropic `thinking` block with its `signature`.
    Thinking,
    /// An Anthropic `redacted_thinking` block.
    RedactedThinking,
    /// An OpenAI `reasoning` item with `encrypted_content`.
    Reasoning,
    /// A summary the provider wrote: an Anthropic `compaction` block or an OpenAI
    /// `compaction` item.
    Compaction,
}

impl SignedKind {
    /// Thinking the model re-does when the block is dropped (not a compaction, which
    /// stands for history).
    pub const fn is_thinking(self) -> bool {
        !matches!(self, SignedKind::Compaction)
    }
}

/// One signed block of a conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SignedBlock {
    /// Where it is.
    pub at: BlockRef,
    /// What it is.
    pub kind: SignedKind,
    /// For an OpenAI item: its index among its turn's original items.
    pub item: Option<usize>,
}

/// Every signed block of `messages`, in conversation order.
///
/// ```
/// use llm_compactor::message::{Content, Message, Part};
/// use llm_compactor::plan::{BlockRef, SignedKind, signed_blocks};
/// use serde_json::json;
///
/// let mut turn = Message::assistant("");
/// turn.content = Content::Parts(vec![
///     Part::from_value(json!({"type": "thinking", "thinking": "hm", "signature": "s1"})).unwrap(),
///     Part::from_value(json!({"type": "thinking", "thinking": "unsigned"})).unwrap(),
///     Part::text("Done."),
/// ]);
/// let blocks = signed_blocks(&[Message::user("go"), turn]);
/// assert_eq!(blocks.len(), 1);
/// assert_eq!((blocks[0].at, blocks[0].kind), (BlockRef::new(1, 0), SignedKind::Thinking));
/// ```
pub fn signed_blocks(messages: &[Message]) -> Vec<SignedBlock> {
    let mut blocks = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        blocks.extend(message_blocks(index, message));
    }
    blocks
}

/// The signed blocks of one message (at `index`).
pub(super) fn message_blocks(index: usize, message: &Message) -> Vec<SignedBlock> {
    if message.role != Role::Assistant {
        return Vec::new();
    }
    let Content::Parts(parts) = &message.content else {
        return Vec::new();
    };
    if let Some(items) = responses_items(message) {
        return items
            .into_iter()
            .map(|(part, item, kind)| SignedBlock {
                at: BlockRef::new(index, part),
                kind,
                item: Some(item),
            })
            .collect();
    }
    parts
        .iter()
        .enumerate()
        .filter_map(|(p, part)| {
            part_kind(part).map(|kind| SignedBlock {
                at: BlockRef::new(index, p),
                kind,
                item: None,
            })
        })
        .collect()
}

/// The signed kind of an Anthropic content part.
pub(super) fn part_kind(part: &Part) -> Option<SignedKind> {
    match part {
        Part::Thinking { extras, .. } if extras.get("signature").is_some_and(Value::is_string) => {
            Some(SignedKind::Thinking)
        }
        Part::Other(_) if part.kind() == "redacted_thinking" => Some(SignedKind::RedactedThinking),
        Part::Other(_) if part.kind() == COMPACTION_BLOCK => Some(SignedKind::Compaction),
        _ => None,
    }
}

/// A Responses turn's sealed items, as (part index of its view, item index, kind), when
/// the turn writes its items back verbatim; `None` for a message that is not a
/// Responses turn.
pub(super) fn responses_items(message: &Message) -> Option<Vec<(usize, usize, SignedKind)>> {
    let Some(Value::Array(_)) = message.extras.get(RESPONSES_HINT_KEY) else {
        return None;
    };
    let Some(items) = message_items(message) else {
        // Changed since it was read: the codec writes it without its items.
        return Some(Vec::new());
    };
    let Content::Parts(parts) = &message.content else {
        return Some(Vec::new());
    };
    let views: Vec<usize> = (0..parts.len())
        .filter(|&p| matches!(parts[p], Part::Other(_)))
        .collect();
    let mut out = Vec::new();
    let mut view = 0;
    for (i, item) in items.iter().enumerate() {
        let Some(object) = item.as_object() else { continue };
        let Some(kind) = item_kind(object) else { continue };
        if !crate::format::responses::is_context_kind(kind) {
            continue;
        }
        let part = views.get(view).copied();
        view += 1;
        let sealed = match kind {
            "reasoning"
                if object
                    .get("encrypted_content")
                    .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty())) =>
            {
                Some(SignedKind::Reasoning)
            }
            COMPACTION_ITEM => Some(SignedKind::Compaction),
            _ => None,
        };
        if let (Some(kind), Some(part)) = (sealed, part) {
            out.push((part, i, kind));
        }
    }
    Some(out)
}

/// The original item `item` of a Responses turn.
pub(super) fn turn_item(message: &Message, item: usize) -> Option<&Value> {
    message.extras.get(RESPONSES_HINT_KEY)?.as_array()?.get(item)
}

/// True when the provider sees the two messages as the same bytes (the Anthropic
/// importer's hint, which is not written to the wire, is left out).
///
/// ```
/// use llm_compactor::message::Message;
/// use llm_compactor::plan::same_on_wire;
/// assert!(same_on_wire(&Message::user("hi").with_id("a"), &Message::user("hi")));
/// assert!(!same_on_wire(&Message::user("hi"), &Message::user("hi!")));
/// ```
pub fn same_on_wire(a: &Message, b: &Message) -> bool {
    a.role == b.role
        && (a.content == b.content || a.content.to_value() == b.content.to_value())
        && a.tool_calls == b.tool_calls
        && a.tool_call_id == b.tool_call_id
        && a.name == b.name
        && extras_on_wire_equal(a, b)
}

fn extras_on_wire_equal(a: &Message, b: &Message) -> bool {
    if a.extras == b.extras {
        return true;
    }
    let wire = |m: &Message| {
        m.extras
            .iter()
            .filter(|(key, _)| key.as_str() != ANTHROPIC_HINT_KEY)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<serde_json::Map<String, Value>>()
    };
    wire(a) == wire(b)
}

/// The parts of a message's content (none for text content).
pub(super) fn parts_of(message: &Message) -> &[Part] {
    match &message.content {
        Content::Parts(parts) => parts,
        _ => &[],
    }
}

/// True for a message that holds a summary the provider wrote (a compaction block or
/// item): what follows it is checked against the history after the summarized part.
pub(super) fn is_provider_compaction(message: &Message) -> bool {
    message_blocks(0, message)
        .iter()
        .any(|b| b.kind == SignedKind::Compaction)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::responses::ResponsesRequest;

    #[test]
    fn anthropic_blocks_are_found_by_kind() {
        let mut turn = Message::assistant("");
        turn.content = Content::Parts(vec![
            Part::from_value(json!({"type": "redacted_thinking", "data": "abc"})).unwrap(),
            Part::from_value(json!({"type": "thinking", "thinking": "", "signature": "s"})).unwrap(),
            Part::ToolUse { id: "t1".into() },
            Part::from_value(json!({"type": "compaction", "content": "summary"})).unwrap(),
        ]);
        let kinds: Vec<_> = signed_blocks(&[turn]).iter().map(|b| (b.at.part, b.kind)).collect();
        assert_eq!(
            kinds,
            [
                (0, SignedKind::RedactedThinking),
                (1, SignedKind::Thinking),
                (3, SignedKind::Compaction)
            ]
        );
    }

    #[test]
    fn responses_sealed_items_are_named_by_their_view_part() {
        let body = json!({"model": "gpt-5", "input": [
            {"role": "user", "content": "go"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA1"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "q"}},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAA2"}
        ]});
        let request = ResponsesRequest::from_value(body, "r").unwrap();
        let blocks = signed_blocks(request.messages());
        let found: Vec<_> = blocks.iter().map(|b| (b.at, b.kind, b.item)).collect();
        assert_eq!(
            found,
            [
                (BlockRef::new(1, 0), SignedKind::Reasoning, Some(0)),
                (BlockRef::new(1, 4), SignedKind::Compaction, Some(4))
            ]
        );
        assert!(is_provider_compaction(&request.messages()[1]));
        // A changed turn is written without its items: nothing sealed is sent.
        let mut changed = request.messages()[1].clone();
        changed.content = Content::Text("other".into());
        assert!(signed_blocks(&[changed]).is_empty());
    }
}
