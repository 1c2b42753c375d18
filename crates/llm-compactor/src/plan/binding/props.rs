//! The binding model against a reference signer: a scripted provider that signs each
//! thinking block with a digest of the canonical JSON of everything before it (and of
//! the block's own text), and checks a block by signing it again. Random conversations
//! with thinking, random edits (stubs, summaries, trims, blocks left out or moved, text
//! edits, appends): [`invalidated`] calls a block invalid exactly when the reference
//! does.

use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::*;
use crate::message::{Content, Message, Part, ToolCall, canonical_json};

/// A message as the provider reads it: its native JSON without the id.
fn wire(message: &Message) -> Value {
    let mut value = serde_json::to_value(message).expect("a message serializes");
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    value
}

/// The reference signature of the block at (`i`, `p`) with text `text`.
fn sign(messages: &[Message], i: usize, p: usize, text: &str) -> String {
    let mut prefix: Vec<Value> = messages[..i].iter().map(wire).collect();
    let own: Vec<Value> = match &messages[i].content {
        Content::Parts(parts) => parts[..p].iter().map(Part::to_value).collect(),
        _ => Vec::new(),
    };
    prefix.push(json!({"role": messages[i].role.as_str(), "parts": own}));
    let mut hasher = Sha256::new();
    hasher.update(canonical_json(&Value::Array(prefix)).as_bytes());
    hasher.update([0]);
    hasher.update(text.as_bytes());
    hex::encode(hasher.finalize())
}

/// The signature a block carries, and the text it signs.
fn carried(part: &Part) -> Option<(String, String)> {
    match part {
        Part::Thinking { thinking, extras } => Some((extras.get("signature")?.as_str()?.to_owned(), thinking.clone())),
        Part::Other(value) if part.kind() == "redacted_thinking" => {
            Some((value.get("data")?.as_str()?.to_owned(), "redacted".to_owned()))
        }
        _ => None,
    }
}

/// Signs every block of `messages` in order, as the provider produced them.
fn signed(mut messages: Vec<Message>) -> Vec<Message> {
    for i in 0..messages.len() {
        let count = match &messages[i].content {
            Content::Parts(parts) => parts.len(),
            _ => 0,
        };
        for p in 0..count {
            let Content::Parts(parts) = &messages[i].content else {
                unreachable!()
            };
            let Some((_, text)) = carried(&parts[p]) else { continue };
            let signature = sign(&messages, i, p, &text);
            let Content::Parts(parts) = &mut messages[i].content else {
                unreachable!()
            };
            match &mut parts[p] {
                Part::Thinking { extras, .. } => {
                    extras.insert("signature".into(), Value::String(signature));
                }
                Part::Other(value) => value["data"] = Value::String(signature),
                _ => {}
            }
        }
    }
    messages
}

/// The blocks of `messages` the reference provider refuses.
fn reference_invalid(messages: &[Message]) -> Vec<BlockRef> {
    let mut out = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let Content::Parts(parts) = &message.content else {
            continue;
        };
        for (p, part) in parts.iter().enumerate() {
            if let Some((signature, text)) = carried(part)
                && sign(messages, i, p, &text) != signature
            {
                out.push(BlockRef::new(i, p));
            }
        }
    }
    out
}

/// One round: how many thinking blocks, whether one is redacted, whether a user
/// message follows the tool result.
type Round = (u8, bool, bool);

fn conversation(rounds: &[Round]) -> Vec<Message> {
    let mut messages = vec![Message::system("You are careful."), Message::user("fix the bug")];
    for (r, &(thinking, redacted, user)) in rounds.iter().enumerate() {
        let mut parts = Vec::new();
        for t in 0..thinking {
            parts.push(Part::Thinking {
                thinking: format!("thought {r}.{t}"),
                extras: serde_json::Map::from_iter([("signature".to_owned(), json!(""))]),
            });
        }
        if redacted {
            parts.push(Part::Other(json!({"type": "redacted_thinking", "data": ""})));
        }
        parts.push(Part::text(format!("step {r}")));
        parts.push(Part::ToolUse { id: format!("t{r}") });
        let mut turn = Message::assistant("").with_tool_calls(vec![ToolCall::new(format!("t{r}"), "bash", "{}")]);
        turn.content = Content::Parts(parts);
        messages.push(turn);
        messages.push(Message::tool(format!("t{r}"), format!("output {r}")));
        if user {
            messages.push(Message::user(format!("note {r}")));
        }
    }
    signed(messages)
}

/// One edit of the history: (kind, a, b), positions taken modulo the length.
type Edit = (u8, usize, usize);

fn apply(messages: &mut Vec<Message>, (kind, a, b): Edit) {
    let n = messages.len();
    let (i, j) = (a % n, b % n);
    match kind % 7 {
        // An elision stub on a tool result.
        0 => {
            if let Some(k) = (i..n).chain(0..i).find(|&k| messages[k].is_tool_result()) {
                messages[k].content = Content::Text(crate::plan::stub_text(99, Some("bash")));
            }
        }
        // A summary replaces a range.
        1 => {
            let (lo, hi) = (i.min(j).max(1), i.max(j));
            messages.splice(lo..hi.max(lo), [Message::user("[summary]")]);
        }
        // A message left out.
        2 => {
            if n > 1 {
                messages.remove(i.max(1));
            }
        }
        // A part left out, or two parts swapped, in an assistant turn.
        3 | 4 => {
            if let Some(k) = (i..n)
                .chain(0..i)
                .find(|&k| matches!(&messages[k].content, Content::Parts(p) if p.len() > 1))
            {
                let Content::Parts(parts) = &mut messages[k].content else {
                    unreachable!()
                };
                let (x, y) = (j % parts.len(), (j + 1) % parts.len());
                if kind % 7 == 3 {
                    parts.remove(x);
                } else {
                    parts.swap(x, y);
                }
            }
        }
        // A text edited.
        5 => {
            if let Content::Text(text) = &mut messages[i].content {
                text.push('!');
            } else if let Content::Parts(parts) = &mut messages[i].content
                && let Some(Part::Text { text, .. }) = parts.iter_mut().find(|p| matches!(p, Part::Text { .. }))
            {
                text.push('!');
            }
        }
        // An append.
        _ => messages.push(Message::user("more")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn invalid_exactly_when_the_reference_provider_refuses(
        rounds in prop::collection::vec((1u8..=2, any::<bool>(), any::<bool>()), 1..7),
        edits in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 0..4),
    ) {
        let before = conversation(&rounds);
        prop_assert!(reference_invalid(&before).is_empty());
        let mut after = before.clone();
        for edit in edits {
            apply(&mut after, edit);
        }
        let ctx = BindingContext::new(BindingRules::anthropic());
        let model: Vec<BlockRef> = invalidated(&before, &after, &ctx).iter().map(|i| i.block).collect();
        prop_assert_eq!(&model, &reference_invalid(&after));
        // The repair leaves nothing the reference refuses, but the tool loop's block
        // (which it keeps and reports).
        let repair = plan_binding_repair(&after, &invalidated(&before, &after, &ctx), &ctx, &RepairPolicy::default());
        // Only thinking goes: every tool call and every result stays.
        let calls = |m: &[Message]| m.iter().flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone())).collect::<Vec<_>>();
        let results = |m: &[Message]| m.iter().filter(|m| m.is_tool_result()).count();
        prop_assert_eq!(calls(&repair.messages), calls(&after));
        prop_assert_eq!(results(&repair.messages), results(&after));
        let left = reference_invalid(&repair.messages);
        prop_assert!(left.len() <= 1, "{left:?}");
        prop_assert_eq!(left.is_empty(), repair.report.needs_turn_boundary.is_none());
    }
}
