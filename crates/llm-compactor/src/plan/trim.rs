//! Hard-trim planning: the arithmetic fallback that cannot fail to make progress.
//!
//! When no summary can be had, the oldest non-sticky messages are dropped, unsummarized,
//! until the conversation fits. Candidates go from least to most destructive (drop
//! everything non-sticky up to and including candidate `c`), each extended forward over
//! the tool results that answer what it drops, so an assistant turn never loses its
//! results. The first candidate that fits the goal (and shrinks the conversation) wins;
//! otherwise the whole middle goes. The recent window is never touched, even when that
//! leaves the conversation above the goal: that is reported as `exhausted`, not hidden.

use super::assemble::{assemble, notice_content};
use super::cut::Layout;
use super::pairs::Pairs;
use super::pinned::pinned;
use super::validate::validate;
use crate::message::Message;

/// A planned hard trim.
#[derive(Clone, Debug, PartialEq)]
pub struct TrimPlan {
    /// The last input index dropped (the notice replaces `0..=cut_index`, sticky kept).
    pub cut_index: usize,
    /// How many messages were dropped.
    pub dropped: usize,
    /// The notice message's whole content.
    pub notice: String,
    /// The trimmed conversation.
    pub messages: Vec<Message>,
    /// Its token count.
    pub tokens: usize,
}

/// The trim of `messages` (laid out by `layout`) that first counts `<= goal` and
/// `< ceiling`, trying candidates from least to most destructive; the whole middle when
/// none does. `None` when there is no middle, or when no candidate passes the validator
/// (a conversation whose pairing no trim can respect).
///
/// `count` counts a whole candidate conversation. Candidates are searched by bisection,
/// which finds the first fitting one for any counter where dropping more never counts
/// more (every real counter); for another the answer still fits, it may just not be the
/// least destructive.
pub fn plan_trim(
    messages: &[Message],
    pairs: &Pairs,
    layout: &Layout,
    goal: usize,
    ceiling: usize,
    count: &mut dyn FnMut(&[Message]) -> usize,
) -> Option<TrimPlan> {
    let cut = layout.cut?;
    // A layout of another conversation (a cut past the end) plans nothing.
    if layout.middle.is_empty() || cut >= messages.len() || layout.middle.iter().any(|&i| i > cut) {
        return None;
    }
    let candidates = candidates(messages, pairs, layout, cut);
    let pins = pinned(messages, pairs);
    let build = |c: usize, count: &mut dyn FnMut(&[Message]) -> usize| {
        let dropped = (0..=c).filter(|&i| !pins[i]).count();
        let notice = notice_content(dropped);
        let (trimmed, dropped) = assemble(messages, c, &notice);
        let tokens = count(&trimmed);
        TrimPlan {
            cut_index: c,
            dropped,
            notice,
            messages: trimmed,
            tokens,
        }
    };
    // Bisection for the first candidate that fits.
    let (mut lo, mut hi) = (0usize, candidates.len());
    let mut found: Option<TrimPlan> = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let plan = build(candidates[mid], count);
        if plan.tokens <= goal && plan.tokens < ceiling {
            hi = mid;
            found = Some(plan);
        } else {
            lo = mid + 1;
        }
    }
    // The last `hi = mid` is the final `lo`, so `found` is candidate `lo`.
    let (first, mut plan) = match found {
        Some(plan) => (lo, plan),
        None => (candidates.len() - 1, build(candidates[candidates.len() - 1], count)),
    };
    if validate(messages, &plan.messages, layout.recent_start).is_ok() {
        return Some(plan);
    }
    // Only a conversation with unusual pairing gets here: walk on to the next candidate
    // that keeps every pair intact.
    for &c in candidates.iter().skip(first + 1) {
        plan = build(c, count);
        if validate(messages, &plan.messages, layout.recent_start).is_ok() {
            return Some(plan);
        }
    }
    None
}

/// The distinct candidate cut points, increasing, each extended over the results that
/// answer what it drops; the last one is always `cut` (the whole middle).
fn candidates(messages: &[Message], pairs: &Pairs, layout: &Layout, cut: usize) -> Vec<usize> {
    // reach[i]: the last answer of any turn in 0..=i.
    let mut reach = vec![0usize; cut + 1];
    let mut running = 0usize;
    for (i, slot) in reach.iter_mut().enumerate() {
        if let Some(last) = pairs.last_answer(i) {
            running = running.max(last);
        }
        *slot = running.max(i);
    }
    let mut out: Vec<usize> = Vec::new();
    for &start in &layout.middle {
        // The candidate of `start` is the smallest pair-closed cut at or after it, so a
        // start inside the previous candidate gives that candidate again: skipping it
        // keeps this linear when thousands of results follow one turn.
        if out.last().is_some_and(|&last| start <= last) {
            continue;
        }
        let mut c = start;
        loop {
            while c < cut && messages[c + 1].is_tool_result() && !messages[c + 1].is_sticky() {
                c += 1;
            }
            let r = reach[c];
            if r > cut {
                c = usize::MAX;
                break;
            }
            if r <= c {
                break;
            }
            c = r;
        }
        if c == usize::MAX {
            break;
        }
        if out.last().is_none_or(|&last| c > last) {
            out.push(c);
        }
    }
    if out.last().is_none_or(|&last| last < cut) {
        out.push(cut);
    }
    out
}
