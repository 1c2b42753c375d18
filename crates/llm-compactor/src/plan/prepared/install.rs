//! [`plan_install`]: the conversation a prepared result becomes once installed over a
//! longer conversation, validated as every pass is, and topped up when the messages
//! since its snapshot push it over the goal.

use serde::{Deserialize, Serialize};

use super::check::{Check, Verdict};
use super::{Replacement, Snapshot, amend_summary};
use crate::count::TokenCounter;
use crate::message::{Content, Message};
use crate::plan::elision::Elision;
use crate::plan::{Pairs, SUMMARY_HEADER, apply_elisions, is_stub, layout_with, stub_text, validate};

/// The numbers an install is held to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRules {
    /// Tokens the installed conversation should not exceed (the compactor's target):
    /// above it, fat tool results among the new messages are elided.
    pub goal: usize,
    /// Tokens it must not exceed (the trigger): above it even after the top-up, the
    /// prepared result is not enough and an inline pass is needed.
    pub ceiling: usize,
    /// Messages at the end that are never touched (the compactor's `keep_recent`).
    pub keep_recent: usize,
    /// A new tool result must be longer than this many chars to be elided.
    pub min_chars: usize,
}

/// The installed conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Installed {
    /// The conversation from now on: the replacement, then every message since the
    /// snapshot (top-up stubs applied).
    pub messages: Vec<Message>,
    /// The summary message's whole content, amended when the verdict was an amendment
    /// (empty for an elision-only result).
    pub summary: String,
    /// The top-up: tool results among the new messages replaced by stubs, by index into
    /// the *current* conversation.
    pub top_up: Vec<Elision>,
    /// Tokens of `messages`.
    pub tokens: usize,
    /// True when `tokens` is still above the goal (but at most the ceiling).
    pub over_goal: bool,
}

/// What to do at the trigger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "plan", rename_all = "kebab-case")]
pub enum InstallPlan {
    /// Install this.
    Install(Box<Installed>),
    /// The verdict was a discard: nothing to install.
    Discarded,
    /// Installed, the conversation would still be over the ceiling: run a pass inline.
    NeedsInline {
        /// Tokens the install would leave.
        tokens: usize,
        /// The ceiling.
        ceiling: usize,
    },
    /// The installed conversation broke an invariant (unreachable for a result of
    /// `compact` over an exact prefix; never installed).
    Invalid {
        /// The violation, in words.
        violation: String,
    },
}

/// The install of `replacement` (over `snapshot`) into `current`, after `check` of the
/// same three said it may be installed.
///
/// The installed conversation is the replacement (its summary amended by the verdict's
/// changes) followed by `current[snapshot.len..]`. It is validated against `current`
/// with the replacement's and the top-up's stubs applied: no orphan, no unanswered call,
/// the sticky messages in order, everything after the cut byte-identical. When it is
/// over `rules.goal`, the new messages' tool results over `rules.min_chars` that are not
/// in the recent window are stubbed, oldest first, until it fits; over `rules.ceiling`
/// after that, [`InstallPlan::NeedsInline`].
pub fn plan_install(
    replacement: &Replacement<'_>,
    snapshot: &Snapshot,
    current: &[Message],
    check: &Check,
    counter: &dyn TokenCounter,
    rules: &InstallRules,
) -> InstallPlan {
    let changes = match &check.verdict {
        Verdict::Discard { .. } => return InstallPlan::Discarded,
        Verdict::Install => &[][..],
        Verdict::Amend { changes } => changes.as_slice(),
    };
    let summary = amend_summary(replacement.summary, changes);
    let mut messages: Vec<Message> = replacement.messages.to_vec();
    if summary != replacement.summary
        && let Some(message) = messages.iter_mut().find(|m| is_summary_message(m, replacement.summary))
    {
        message.content = Content::Text(summary.clone());
    }
    let offset = messages.len();
    messages.extend(current[snapshot.len..].iter().cloned());
    let mut tokens = counter.count_messages(&messages);
    let mut top_up = Vec::new();
    if tokens > rules.goal {
        let pairs = Pairs::build(current);
        let recent_start = layout_with(current, &pairs, rules.keep_recent).recent_start;
        for index in snapshot.len..recent_start.max(snapshot.len) {
            if tokens <= rules.goal {
                break;
            }
            let message = &current[index];
            let chars = message.text().chars().count();
            if !message.is_tool_result() || chars <= rules.min_chars || is_stub(&message.content) {
                continue;
            }
            let tool = pairs.call(current, index).map(|c| c.name.as_str());
            let stub = stub_text(chars, tool);
            let slot = &mut messages[offset + index - snapshot.len];
            let before = counter.count_message(slot);
            slot.content = Content::Text(stub.clone());
            tokens = tokens.saturating_sub(before.saturating_sub(counter.count_message(slot)));
            top_up.push(Elision { index, stub });
        }
        if !top_up.is_empty() {
            tokens = counter.count_messages(&messages);
        }
    }
    if let Err(violation) = validate_install(replacement, current, &top_up, &messages) {
        return InstallPlan::Invalid { violation };
    }
    if tokens > rules.ceiling {
        return InstallPlan::NeedsInline {
            tokens,
            ceiling: rules.ceiling,
        };
    }
    InstallPlan::Install(Box::new(Installed {
        messages,
        summary: if replacement.cut.is_some() {
            summary
        } else {
            String::new()
        },
        top_up,
        tokens,
        over_goal: tokens > rules.goal,
    }))
}

/// The replacement's summary message: the one whose content is the summary.
fn is_summary_message(message: &Message, summary: &str) -> bool {
    !summary.is_empty() && matches!(&message.content, Content::Text(t) if t == summary && t.starts_with(SUMMARY_HEADER))
}

/// The validation every pass gets, of the installed conversation against the current
/// one with every stub applied (the recent window then starts right after the cut).
fn validate_install(
    replacement: &Replacement<'_>,
    current: &[Message],
    top_up: &[Elision],
    installed: &[Message],
) -> Result<(), String> {
    let mut stubs: Vec<Elision> = replacement.elisions.to_vec();
    stubs.extend(top_up.iter().cloned());
    let input = apply_elisions(current, &stubs);
    let recent_start = replacement.cut.map_or(0, |c| c + 1);
    match replacement.cut {
        Some(_) => validate(&input, installed, recent_start).map_err(|v| v.to_string()),
        // Elision-only: the same messages, stubs applied.
        None if input.len() == installed.len() && input.iter().zip(installed).all(|(a, b)| a.eq_ignoring_id(b)) => {
            Ok(())
        }
        None => Err("an elision-only result does not rebuild as the conversation with its stubs".into()),
    }
}
