//! [`invalidated`]: which signed blocks an edit of the history breaks.
//!
//! The premise is the caller's: `before` is the conversation as the provider last saw
//! it, so every signed block in it was produced under its prefix there and is valid
//! there. The check is then the provider's own, applied to `after`:
//!
//! - a block is valid while everything before it (the earlier messages, and the
//!   earlier parts of its own message) is byte-identical to `before` and the block
//!   itself is unchanged: the common prefix of the two conversations decides, so an
//!   edit at message `k` breaks every block after it and none before it. A thinking
//!   block left out or moved is such an edit too (it changes the message it sat in);
//!   it is reported as what it is;
//! - a summary the provider wrote (a `compaction` block or item) does not count: the
//!   blocks after it stay valid while the messages from the summary up to them are the
//!   ones that followed the summarized part in `before`, unchanged and in order, and
//!   the first of them is not a mid-conversation system message;
//! - `tools`, a system prompt outside the messages, the account and the model are
//!   facts of the request ([`BindingContext`]), not of the messages;
//! - an OpenAI sealed item must be sent as the provider wrote it; its reasoning is then
//!   bound to its prefix like Anthropic's thinking, but a mismatch makes the API drop it
//!   ([`Outcome::Dropped`]) rather than refuse the request; a compaction item is bound
//!   to nothing but its bytes.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::rules::{BindingContext, Outcome, Provider};
use super::signed::{
    BlockRef, SignedBlock, SignedKind, is_provider_compaction, message_blocks, part_kind, parts_of, same_on_wire,
    signed_blocks, turn_item,
};
use crate::message::{Message, Part, Role};

/// How the history changed at the first message where `after` leaves `before`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum PrefixChange {
    /// The message there was rewritten (an elision stub, an edited result).
    Edited,
    /// A new message stands where `removed` old ones were (a summary).
    Replaced {
        /// How many messages of `before` it replaced.
        removed: usize,
    },
    /// Messages of `before` were left out (a trim).
    Removed {
        /// How many.
        count: usize,
    },
    /// A new message was put in (or appended past the end of `before`).
    Inserted,
}

/// Why a block is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum InvalidReason {
    /// The history before the block changed, first at message `at` of `after`.
    PrefixChanged {
        /// The first message of `after` that differs from `before`.
        at: usize,
        /// How.
        change: PrefixChange,
    },
    /// A thinking block that sat between others was left out, in message `at` of
    /// `after` (or just before it).
    ThinkingLeftOut {
        /// Where.
        at: usize,
    },
    /// Thinking blocks of message `at` of `after` are in another order.
    ThinkingMoved {
        /// Where.
        at: usize,
    },
    /// The request's `tools` changed.
    ToolsChanged,
    /// The system prompt outside the messages changed.
    SystemChanged,
    /// The request goes out under another account, key or organization.
    AccountChanged,
    /// The request goes to another model.
    ModelChanged,
    /// A sealed item is not the one the provider wrote.
    SealedEdited,
    /// The provider's error refused this block, or a block its prefix includes.
    RejectedByProvider {
        /// The block the error named, when it names one.
        named: Option<BlockRef>,
    },
}

/// One signed block of `after` that the provider will not accept as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Invalid {
    /// Where it is in `after`.
    pub block: BlockRef,
    /// What it is.
    pub kind: SignedKind,
    /// Why it is invalid.
    pub reason: InvalidReason,
    /// What the provider does when it is sent anyway.
    pub outcome: Outcome,
}

impl Invalid {
    /// An invalid block.
    pub const fn new(block: BlockRef, kind: SignedKind, reason: InvalidReason, outcome: Outcome) -> Self {
        Invalid {
            block,
            kind,
            reason,
            outcome,
        }
    }
}

/// The signed blocks of `after` that are invalid, given that every block of `before`
/// is valid there (see the module docs for the rules), in conversation order.
///
/// ```
/// use llm_compactor::message::{Content, Message, Part, ToolCall};
/// use llm_compactor::plan::{BindingContext, BindingRules, BlockRef, invalidated};
/// use serde_json::json;
///
/// let thinking = |sig: &str| {
///     let mut turn = Message::assistant("").with_tool_calls(vec![ToolCall::new(sig, "ls", "{}")]);
///     turn.content = Content::Parts(vec![
///         Part::from_value(json!({"type": "thinking", "thinking": "t", "signature": sig})).unwrap(),
///         Part::ToolUse { id: sig.into() },
///     ]);
///     turn
/// };
/// let before = vec![
///     Message::user("go"),
///     thinking("a"), Message::tool("a", "a long listing"),
///     thinking("b"), Message::tool("b", "another"),
/// ];
/// let mut after = before.clone();
/// after[2].content = Content::Text("[elided]".into());
/// let ctx = BindingContext::new(BindingRules::anthropic());
/// let invalid = invalidated(&before, &after, &ctx);
/// assert_eq!(invalid.len(), 1);
/// assert_eq!(invalid[0].block, BlockRef::new(3, 0)); // the block after the stub, not the one before
/// assert!(invalidated(&before, &before, &ctx).is_empty());
/// ```
pub fn invalidated(before: &[Message], after: &[Message], ctx: &BindingContext) -> Vec<Invalid> {
    let rules = &ctx.rules;
    if rules.binds_nothing() {
        return Vec::new();
    }
    let blocks = signed_blocks(after);
    if let Some((reason, outcome)) = context_reason(ctx) {
        // Tools and the system prompt are part of every prefix; the account and the
        // model bind OpenAI's sealed items (compaction ones too) as well.
        let sealed_too = rules.provider == Provider::OpenAiResponses
            && matches!(reason, InvalidReason::AccountChanged | InvalidReason::ModelChanged);
        return blocks
            .iter()
            .filter(|b| b.kind.is_thinking() || sealed_too)
            .map(|b| Invalid::new(b.at, b.kind, reason, outcome))
            .collect();
    }
    let (k, q) = first_difference(before, after);
    let reason = classify(before, after, k);
    // Where `before`'s blocks are, by their bytes: needed for sealed items and for
    // blocks after a provider's summary only (not on the common path of a proxy).
    let needs_index = rules.provider == Provider::OpenAiResponses
        || (rules.provider_compaction_keeps_later && after[k.min(after.len())..].iter().any(is_provider_compaction));
    let index = if needs_index {
        BlockIndex::build(before)
    } else {
        BlockIndex { at: HashMap::new() }
    };
    let mut invalid = Vec::new();
    for block in &blocks {
        if (block.at.message, block.at.part) < (k, q) {
            continue;
        }
        if rules.provider == Provider::OpenAiResponses && !index.sealed_intact(after, block) {
            invalid.push(Invalid::new(
                block.at,
                block.kind,
                InvalidReason::SealedEdited,
                Outcome::Rejected,
            ));
            continue;
        }
        if block.kind == SignedKind::Compaction || !rules.prefix_bound {
            continue;
        }
        if rules.provider_compaction_keeps_later && kept_after_provider_summary(before, after, block, &index) {
            continue;
        }
        invalid.push(Invalid::new(block.at, block.kind, reason, rules.on_prefix_mismatch));
    }
    invalid
}

/// A fact of the request that invalidates every bound block, with what the provider
/// does about it.
fn context_reason(ctx: &BindingContext) -> Option<(InvalidReason, Outcome)> {
    let rules = &ctx.rules;
    let openai = rules.provider == Provider::OpenAiResponses;
    if ctx.account_changed && rules.account_bound {
        return Some((InvalidReason::AccountChanged, Outcome::Rejected));
    }
    if ctx.model_changed && (openai || rules.prefix_bound) {
        // OpenAI: the encrypted content no longer decrypts (a 400); Anthropic: a block
        // the new model cannot read is dropped without an error.
        let outcome = if openai { Outcome::Rejected } else { Outcome::Dropped };
        return Some((InvalidReason::ModelChanged, outcome));
    }
    if rules.prefix_bound && ctx.tools_changed {
        return Some((InvalidReason::ToolsChanged, rules.on_prefix_mismatch));
    }
    if rules.prefix_bound && ctx.system_changed {
        return Some((InvalidReason::SystemChanged, rules.on_prefix_mismatch));
    }
    None
}

/// The first (message, part) where `after` differs from `before`: every block before it
/// has its prefix, and itself, unchanged.
fn first_difference(before: &[Message], after: &[Message]) -> (usize, usize) {
    let k = before
        .iter()
        .zip(after)
        .position(|(b, a)| !same_on_wire(a, b))
        .unwrap_or(before.len().min(after.len()));
    let (Some(a), Some(b)) = (after.get(k), before.get(k)) else {
        return (k, 0);
    };
    if a.role != b.role || a.tool_call_id != b.tool_call_id || a.name != b.name || !extras_equal(a, b) {
        return (k, 0);
    }
    let (pa, pb) = (parts_of(a), parts_of(b));
    let mut q = pa
        .iter()
        .zip(pb)
        .position(|(x, y)| x != y)
        .unwrap_or(pa.len().min(pb.len()));
    if a.tool_calls != b.tool_calls {
        // A call is written where its placeholder stands (or after the parts).
        let call = |m: &Message, id: &str| m.tool_calls.iter().find(|c| c.id == id).cloned();
        let changed = pa.iter().position(|part| match part {
            Part::ToolUse { id } => call(a, id) != call(b, id),
            _ => false,
        });
        q = q.min(changed.unwrap_or(pa.len()));
    }
    (k, q)
}

/// The messages' wire extras are equal (see [`same_on_wire`]).
fn extras_equal(a: &Message, b: &Message) -> bool {
    let mut x = a.clone();
    x.content = b.content.clone();
    x.tool_calls = b.tool_calls.clone();
    same_on_wire(&x, b)
}

/// What changed at message `k`.
fn classify(before: &[Message], after: &[Message], k: usize) -> InvalidReason {
    let (Some(a), Some(b)) = (after.get(k), before.get(k)) else {
        return InvalidReason::PrefixChanged {
            at: k,
            change: if k >= before.len() {
                PrefixChange::Inserted
            } else {
                PrefixChange::Removed {
                    count: before.len() - k,
                }
            },
        };
    };
    if a.role == b.role && !message_blocks(k, b).is_empty() {
        let (pa, pb) = (parts_of(a), parts_of(b));
        if left_out_thinking(pa, pb) {
            return InvalidReason::ThinkingLeftOut { at: k };
        }
        if pa.len() == pb.len() && pa.iter().all(|p| pb.contains(p)) {
            return InvalidReason::ThinkingMoved { at: k };
        }
    }
    let change = if let Some(j) = (k + 1..before.len()).find(|&j| same_on_wire(a, &before[j])) {
        if before[k..j].iter().all(only_thinking) {
            return InvalidReason::ThinkingLeftOut { at: k };
        }
        PrefixChange::Removed { count: j - k }
    } else if (k + 1..after.len()).any(|i| same_on_wire(&after[i], b)) {
        PrefixChange::Inserted
    } else {
        match after
            .get(k + 1)
            .and_then(|next| (k + 1..before.len()).find(|&j| same_on_wire(next, &before[j])))
        {
            Some(j) if j > k + 1 => PrefixChange::Replaced { removed: j - k },
            _ => PrefixChange::Edited,
        }
    };
    InvalidReason::PrefixChanged { at: k, change }
}

/// `after` is `before` with one or more signed thinking parts taken out.
fn left_out_thinking(after: &[Part], before: &[Part]) -> bool {
    if after.len() >= before.len() {
        return false;
    }
    let mut rest = after.iter().peekable();
    for part in before {
        if rest.peek() == Some(&part) {
            rest.next();
        } else if !part_kind(part).is_some_and(SignedKind::is_thinking) {
            return false;
        }
    }
    rest.next().is_none()
}

/// An assistant turn that holds nothing but signed thinking.
fn only_thinking(message: &Message) -> bool {
    let parts = parts_of(message);
    message.tool_calls.is_empty()
        && !parts.is_empty()
        && parts.iter().all(|p| part_kind(p).is_some_and(SignedKind::is_thinking))
}

/// Where each signed block of `before` is, by its bytes.
struct BlockIndex {
    at: HashMap<String, BlockRef>,
}

impl BlockIndex {
    fn build(before: &[Message]) -> Self {
        let at = signed_blocks(before)
            .into_iter()
            .filter_map(|b| Some((block_key(before, &b)?, b.at)))
            .collect();
        BlockIndex { at }
    }

    fn find(&self, messages: &[Message], block: &SignedBlock) -> Option<BlockRef> {
        self.at.get(&block_key(messages, block)?).copied()
    }

    /// An OpenAI sealed item of `after` is one the provider wrote: it is in `before`,
    /// or it is a compaction item `before` has not seen (a summary just written by the
    /// provider's compaction; the compactor never writes one itself).
    fn sealed_intact(&self, after: &[Message], block: &SignedBlock) -> bool {
        block.item.is_none() || block.kind == SignedKind::Compaction || self.find(after, block).is_some()
    }
}

/// A block's bytes: the part for Anthropic, the original item for OpenAI.
fn block_key(messages: &[Message], block: &SignedBlock) -> Option<String> {
    let message = messages.get(block.at.message)?;
    match block.item {
        Some(item) => Some(turn_item(message, item)?.to_string()),
        None => Some(parts_of(message).get(block.at.part)?.to_value().to_string()),
    }
}

/// The provider-summary rule: a block after a compaction block or item stays valid
/// while the messages from the summary up to it are the ones that directly preceded it
/// in `before`, unchanged, and the system prompts before the summary are unchanged.
fn kept_after_provider_summary(before: &[Message], after: &[Message], block: &SignedBlock, index: &BlockIndex) -> bool {
    let i = block.at.message;
    let Some(c) = (0..i).rev().find(|&c| is_provider_compaction(&after[c])) else {
        return false;
    };
    let Some(origin) = index.find(after, block) else {
        return false;
    };
    let (j, p) = (origin.message, block.at.part);
    let kept = i - c - 1;
    if kept > j || origin.part != p {
        return false;
    }
    let start = j - kept;
    let run_unchanged = (0..kept).all(|d| same_on_wire(&after[c + 1 + d], &before[start + d]));
    let own_prefix = parts_of(&after[i]).get(..=p) == parts_of(&before[j]).get(..=p) && after[i].role == before[j].role;
    // The first kept message is not a mid-conversation system message, and its role
    // differs from the last summarized one's (else the API merges the two).
    let wire_role = |m: &Message| {
        if m.role == Role::Tool {
            Role::User
        } else {
            m.role.clone()
        }
    };
    let first_kept_ok = after
        .get(c + 1)
        .is_none_or(|m| !m.role.is_system_prompt() && (start == 0 || wire_role(m) != wire_role(&before[start - 1])));
    run_unchanged && own_prefix && first_kept_ok && system_prompts_unchanged(before, after, c)
}

/// The leading system prompts of `after` (before index `c`) are those of `before`.
fn system_prompts_unchanged(before: &[Message], after: &[Message], c: usize) -> bool {
    let lead = |m: &[Message], end: usize| m.iter().take(end).take_while(|m| m.sysprompt).count();
    let n = lead(after, c);
    n == lead(before, before.len()) && (0..n).all(|s| same_on_wire(&after[s], &before[s]))
}
