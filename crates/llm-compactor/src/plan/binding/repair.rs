//! [`plan_binding_repair`]: the cheapest documented remedy for the blocks an edit
//! invalidated, as a plan.
//!
//! What each invalid block becomes, cheapest first:
//!
//! - **Anthropic thinking** (a 400 when sent): removed, exactly the invalid blocks and
//!   nothing else ("remove the thinking of the kept turns"); the model re-thinks. A
//!   turn left with nothing (it held only thinking) is removed whole; the API merges
//!   the user turns around it. One block cannot go: with thinking on, when the
//!   conversation ends in an in-progress tool loop, the last assistant turn must start
//!   with a thinking block, and no valid one can be made. That block stays in place
//!   and the report says [`BindingReport::needs_turn_boundary`]: the caller makes the
//!   edit at a turn boundary instead (a prepared pass waits), lets the provider write
//!   the summary (its compaction keeps kept-turn thinking valid), or sends the request
//!   with `drop_block` (where the client or the configuration allows it; the messages
//!   returned are then sendable as they are, the provider dropping the block and listing
//!   it). Blocks the provider drops itself (`drop_block` on, or a model switch) are
//!   removed all the same, except that one.
//! - **OpenAI reasoning the API drops** (its prefix changed): kept whole by default
//!   (sending it costs its upload; the API drops it and the model re-reasons), removed
//!   when [`RepairPolicy::strip_dropped`] says so.
//! - **OpenAI sealed items the API refuses** (edited, another key, organization or
//!   model): removed from their turn, never edited. A compaction item stands for the
//!   history before it: removing it loses that history, so the plan refuses it
//!   ([`BindingReport::refused`]) unless [`RepairPolicy::allow_dropping_compaction`].
//!
//! The report lists every block by its index in the input, with why, for the transcript
//! and the metrics (the cost policy counts dropped thinking: the model does it again).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::edit::without_parts;
use super::invalid::{Invalid, InvalidReason};
use super::rules::{BindingContext, Outcome};
use super::signed::{BlockRef, SignedKind, part_kind, parts_of};
use crate::format::anthropic::ANTHROPIC_HINT_KEY;
use crate::message::{Message, Role};

/// What the caller allows the repair to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RepairPolicy {
    /// The request carries `drop_block` (the client sent it, or the configuration lets
    /// us add it): an invalid block that must stay for the request to be well-formed is
    /// left for the provider to drop.
    pub drop_block: bool,
    /// Remove blocks the provider would drop itself (OpenAI reasoning after a prefix
    /// change) instead of sending them.
    pub strip_dropped: bool,
    /// An invalid sealed compaction item may be removed (losing the history it stands
    /// for); otherwise the plan refuses it.
    pub allow_dropping_compaction: bool,
}

impl RepairPolicy {
    /// The same policy with `drop_block` set.
    pub const fn drop_block(mut self, on: bool) -> Self {
        self.drop_block = on;
        self
    }

    /// The same policy with `strip_dropped` set.
    pub const fn strip_dropped(mut self, on: bool) -> Self {
        self.strip_dropped = on;
        self
    }

    /// The same policy with `allow_dropping_compaction` set.
    pub const fn allow_dropping_compaction(mut self, on: bool) -> Self {
        self.allow_dropping_compaction = on;
        self
    }
}

/// One block the repair dealt with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BlockNote {
    /// Where it was in the input.
    pub block: BlockRef,
    /// What it is.
    pub kind: SignedKind,
    /// Why it was invalid.
    pub reason: InvalidReason,
    /// Its size in chars ([`crate::message::Part::chars`]): thinking the model re-does.
    pub chars: usize,
}

/// The one state no removal fixes: the conversation ends in an in-progress tool loop
/// whose last assistant turn starts with an invalid thinking block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TurnBoundary {
    /// The index (in the input) of that assistant turn.
    pub message: usize,
}

/// What the repair did, for the transcript and the metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BindingReport {
    /// Blocks removed.
    pub dropped: Vec<BlockNote>,
    /// Invalid blocks left in place for the provider to drop (OpenAI reasoning after a
    /// prefix change; the tool loop's thinking under `drop_block`).
    pub left_for_provider: Vec<BlockNote>,
    /// Sealed compaction items the plan would not remove: the plan cannot be sent.
    pub refused: Vec<BlockNote>,
    /// Assistant turns (input indices) removed because nothing was left of them.
    pub removed_turns: Vec<usize>,
    /// Set when the request is sendable only with `drop_block`: see [`TurnBoundary`].
    pub needs_turn_boundary: Option<TurnBoundary>,
}

impl BindingReport {
    /// The chars of thinking removed (the model re-does it).
    pub fn thinking_chars_dropped(&self) -> usize {
        self.dropped
            .iter()
            .filter(|n| n.kind.is_thinking())
            .map(|n| n.chars)
            .sum()
    }

    /// True when nothing was invalid.
    pub fn is_empty(&self) -> bool {
        self.dropped.is_empty()
            && self.left_for_provider.is_empty()
            && self.refused.is_empty()
            && self.needs_turn_boundary.is_none()
    }
}

/// The repaired conversation and what was done.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct BindingRepair {
    /// The conversation to send.
    pub messages: Vec<Message>,
    /// What was dropped, left and refused, and why.
    pub report: BindingReport,
}

impl BindingRepair {
    /// True when the provider accepts `messages` as they are: nothing refused, and no
    /// turn boundary needed (or `drop_block` on the request, which the policy said).
    pub fn sendable(&self) -> bool {
        self.report.refused.is_empty() && self.report.needs_turn_boundary.is_none()
    }
}

/// Repairs `after` given its invalid blocks (from [`super::invalidated`] or
/// [`super::recover_from_error`]): see the module docs for what each becomes.
///
/// ```
/// use llm_compactor::message::{Content, Message, Part};
/// use llm_compactor::plan::{
///     BindingContext, BindingRules, BlockRef, Invalid, InvalidReason, Outcome, PrefixChange,
///     RepairPolicy, SignedKind, plan_binding_repair,
/// };
/// use serde_json::json;
///
/// let mut turn = Message::assistant("");
/// turn.content = Content::Parts(vec![
///     Part::from_value(json!({"type": "thinking", "thinking": "because", "signature": "s"})).unwrap(),
///     Part::text("Done."),
/// ]);
/// let after = vec![Message::user("summary of earlier turns"), turn, Message::user("next")];
/// let reason = InvalidReason::PrefixChanged { at: 0, change: PrefixChange::Replaced { removed: 4 } };
/// let invalid = [Invalid::new(BlockRef::new(1, 0), SignedKind::Thinking, reason, Outcome::Rejected)];
/// let ctx = BindingContext::new(BindingRules::anthropic());
/// let repair = plan_binding_repair(&after, &invalid, &ctx, &RepairPolicy::default());
/// assert!(repair.sendable());
/// assert_eq!(repair.messages[1].content, Content::Parts(vec![Part::text("Done.")]));
/// assert_eq!(repair.report.thinking_chars_dropped(), "because".len());
/// ```
pub fn plan_binding_repair(
    after: &[Message],
    invalid: &[Invalid],
    ctx: &BindingContext,
    policy: &RepairPolicy,
) -> BindingRepair {
    let mut report = BindingReport::default();
    let loop_turn = (ctx.thinking_enabled && ctx.rules.tool_loop_needs_thinking)
        .then(|| in_progress_tool_loop(after))
        .flatten();
    // The block the loop's last assistant turn starts its thinking with.
    let loop_block = loop_turn.and_then(|a| {
        let first = parts_of(&after[a])
            .iter()
            .position(|p| part_kind(p).is_some_and(SignedKind::is_thinking))?;
        Some(BlockRef::new(a, first))
    });
    let mut remove: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for block in invalid {
        let Some(note) = note(after, block) else { continue };
        let keeps_loop_open = loop_block == Some(block.block);
        if block.kind == SignedKind::Compaction && !policy.allow_dropping_compaction {
            report.refused.push(note);
        } else if keeps_loop_open && block.outcome == Outcome::Rejected && !policy.drop_block {
            report.left_for_provider.push(note);
            report.needs_turn_boundary = Some(TurnBoundary {
                message: block.block.message,
            });
        } else if keeps_loop_open
            || (block.kind == SignedKind::Reasoning && block.outcome == Outcome::Dropped && !policy.strip_dropped)
        {
            report.left_for_provider.push(note);
        } else {
            remove.entry(block.block.message).or_default().push(block.block.part);
            report.dropped.push(note);
        }
    }
    let mut messages = Vec::with_capacity(after.len());
    for (index, message) in after.iter().enumerate() {
        match remove.get(&index) {
            None => messages.push(message.clone()),
            Some(parts) => match without_parts(message, parts) {
                Some(message) => messages.push(message),
                None => report.removed_turns.push(index),
            },
        }
    }
    BindingRepair { messages, report }
}

/// The report line of one invalid block (`None` for a reference to nothing).
fn note(after: &[Message], block: &Invalid) -> Option<BlockNote> {
    let part = parts_of(after.get(block.block.message)?).get(block.block.part)?;
    Some(BlockNote {
        block: block.block,
        kind: block.kind,
        reason: block.reason,
        chars: part.chars(),
    })
}

/// The last assistant turn, when the conversation ends in its tool loop: it asked for
/// tools and nothing but their results (and the rest of the user turn that carries
/// them) follows it.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
/// use llm_compactor::plan::in_progress_tool_loop;
/// let ask = Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "ls", "{}")]);
/// let loop_ = vec![Message::user("go"), ask.clone(), Message::tool("c1", "a.txt")];
/// assert_eq!(in_progress_tool_loop(&loop_), Some(1));
/// let done = vec![Message::user("go"), ask, Message::tool("c1", "a.txt"), Message::user("thanks")];
/// assert_eq!(in_progress_tool_loop(&done), None);
/// ```
pub fn in_progress_tool_loop(messages: &[Message]) -> Option<usize> {
    let a = messages.iter().rposition(|m| m.role == Role::Assistant)?;
    if messages[a].tool_calls.is_empty() || a + 1 == messages.len() {
        return None;
    }
    let turn_of = |m: &Message| m.extras.get(ANTHROPIC_HINT_KEY).and_then(|h| h.get("turn")).cloned();
    let rest = &messages[a + 1..];
    let results_turn = rest.iter().find(|m| m.role == Role::Tool).and_then(turn_of);
    let all_results = rest.iter().all(|m| {
        m.role == Role::Tool || (m.role == Role::User && results_turn.is_some() && turn_of(m) == results_turn)
    });
    (all_results && rest.iter().any(|m| m.role == Role::Tool)).then_some(a)
}
