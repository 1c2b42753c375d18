//! Which old tool results aging may stub, and how much that would reclaim.
//!
//! Aging is a bet that the model will not go back to the raw bytes of an old result.
//! The rules keep the bet safe and cheap:
//! - only tool results in the middle (before the recent window, never sticky, never
//!   already a stub);
//! - either the result is fat (more than `min_chars`) AND a whole epoch of content
//!   (`reclaim_min` chars) has come after it (the trailing grace),
//! - or it is an older copy of a call that was answered more than once in the whole
//!   conversation: the loop breaker. The newest answer of such a call is protected
//!   forever, and every older copy is eligible whatever its size or distance.
//!
//! One refinement of ours: a result is never stubbed when the stub would not be shorter
//! than the content (a tiny duplicate), so an elision always reclaims something and an
//! elision-only pass is a proven shrink.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::cut::Layout;
use super::identity::call_identity;
use super::pairs::Pairs;
use super::stub::{is_stub, stub_text};
use crate::message::Message;

/// The two numbers aging is governed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgingRules {
    /// A result must be longer than this (chars) to be stubbed for its size.
    pub min_chars: usize,
    /// The epoch size (chars): the trailing grace and the reclaimable-pool floor.
    pub reclaim_min: usize,
}

/// Why a result is eligible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EligibleReason {
    /// Fat, and an epoch of content has come after it.
    Aged,
    /// An older copy of a call answered again later (the loop breaker).
    Duplicate,
}

/// One tool result aging may stub.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Eligible {
    /// Its index in the conversation.
    pub index: usize,
    /// Its content size in chars.
    pub chars: usize,
    /// The tool's name, from the asking call.
    pub tool: Option<String>,
    /// Why it is eligible.
    pub reason: EligibleReason,
    /// The stub that would replace it.
    pub stub: String,
}

/// Every eligible tool result of `messages` under `layout`, in index order.
pub fn eligible(messages: &[Message], pairs: &Pairs, layout: &Layout, rules: AgingRules) -> Vec<Eligible> {
    let Some(cut) = layout.cut else { return Vec::new() };
    // Chars of all content after each index.
    let mut after = vec![0usize; messages.len() + 1];
    for i in (0..messages.len()).rev() {
        after[i] = after[i + 1] + messages[i].content.chars();
    }
    // The newest answer of every identity, and how many answers it has.
    let identities: Vec<Option<String>> = (0..messages.len())
        .map(|i| pairs.call(messages, i).map(|c| call_identity(&c.name, &c.arguments)))
        .collect();
    let mut newest: HashMap<&str, (usize, usize)> = HashMap::new();
    for (i, identity) in identities.iter().enumerate() {
        if let Some(identity) = identity {
            let entry = newest.entry(identity.as_str()).or_insert((i, 0));
            entry.0 = i;
            entry.1 += 1;
        }
    }
    let mut out = Vec::new();
    for &i in &layout.middle {
        let message = &messages[i];
        if i > cut || !message.is_tool_result() || message.is_sticky() || is_stub(&message.content) {
            continue;
        }
        let duplicate = identities[i]
            .as_deref()
            .and_then(|id| newest.get(id))
            .is_some_and(|&(last, count)| count > 1 && last != i);
        let chars = message.content.chars();
        let aged = chars > rules.min_chars && after[i + 1] >= rules.reclaim_min;
        let reason = if duplicate {
            EligibleReason::Duplicate
        } else if aged {
            EligibleReason::Aged
        } else {
            continue;
        };
        let tool = pairs.call(messages, i).map(|c| c.name.clone());
        let stub = stub_text(chars, tool.as_deref());
        if stub.chars().count() >= chars {
            continue;
        }
        out.push(Eligible {
            index: i,
            chars,
            tool,
            reason,
            stub,
        });
    }
    out
}

/// The summed content chars of the eligible results: what one elision epoch reclaims
/// (before the stubs' own few dozen chars).
pub fn reclaimable_pool(eligible: &[Eligible]) -> usize {
    eligible.iter().map(|e| e.chars).sum()
}
