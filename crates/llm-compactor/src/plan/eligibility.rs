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
//!   forever (never stubbed, not even for its size), and every older copy is eligible
//!   whatever its size or distance. A newer answer supersedes an older one only if it
//!   did not fail ([`super::is_failed_result`]): a failed re-read leaves the last good
//!   copy protected, since a stub telling the model to re-run a call that just failed
//!   would lose the only good copy.
//!
//! One refinement of ours: a result is never stubbed when the stub would not be shorter
//! than the content (a tiny duplicate), so an elision always reclaims something and an
//! elision-only pass is a proven shrink.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::cut::Layout;
use super::failed::is_failed_result;
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
    // Per identity, walking from the newest answer back: whether a newer answer that
    // did not fail exists (then this one is superseded), and which answer is protected
    // (the newest good one, or the newest when every answer failed).
    let identities: Vec<Option<String>> = (0..messages.len())
        .map(|i| pairs.call(messages, i).map(|c| call_identity(&c.name, &c.arguments)))
        .collect();
    let failed: Vec<bool> = messages.iter().map(is_failed_result).collect();
    let mut answers: HashMap<&str, usize> = HashMap::new();
    for identity in identities.iter().flatten() {
        *answers.entry(identity.as_str()).or_insert(0) += 1;
    }
    let mut newer_good: HashMap<&str, usize> = HashMap::new();
    let mut newest: HashSet<&str> = HashSet::new();
    let mut superseded = vec![false; messages.len()];
    let mut protected = vec![false; messages.len()];
    for i in (0..messages.len()).rev() {
        let Some(identity) = identities[i].as_deref() else {
            continue;
        };
        if answers.get(identity).is_none_or(|&count| count < 2) {
            continue;
        }
        let is_newest = newest.insert(identity);
        match newer_good.get(identity) {
            Some(_) => superseded[i] = true,
            None => {
                // The newest good copy (or the newest copy, failed or not) is protected.
                protected[i] = !failed[i] || is_newest;
                if !failed[i] {
                    newer_good.insert(identity, i);
                }
            }
        }
    }
    let mut out = Vec::new();
    for &i in &layout.middle {
        // A layout of another conversation is ignored where it does not fit this one.
        let Some(message) = messages.get(i) else { continue };
        if i > cut || !message.is_tool_result() || message.is_sticky() || is_stub(&message.content) {
            continue;
        }
        // The protected answer of a repeated call is kept, whatever its size or age:
        // the model re-ran the call because it needed those bytes. An older copy is
        // dead weight only when a newer answer that did not fail replaces it.
        if protected[i] {
            continue;
        }
        let duplicate = superseded[i];
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
