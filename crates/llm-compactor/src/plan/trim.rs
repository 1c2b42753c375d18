//! Hard-trim planning: the arithmetic fallback that cannot fail to make progress.
//!
//! When no summary can be had, the oldest non-sticky messages are dropped, unsummarized,
//! until the conversation fits. Candidates go from least to most destructive (drop
//! everything non-sticky up to and including candidate `c`), each extended forward over
//! the tool results that answer what it drops, so an assistant turn never loses its
//! results. The first candidate that fits the goal (and shrinks the conversation) wins;
//! otherwise the whole middle goes. The recent window is never touched, even when that
//! leaves the conversation above the goal: that is reported as `exhausted`, not hidden.

use super::assemble::{assemble, notice_content, summary_message};
use super::cut::Layout;
use super::pairs::Pairs;
use super::pinned::pinned;
use super::validate::validate;
use crate::count::TokenCounter;
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
/// `count` counts a whole candidate conversation, so every candidate the search looks at
/// is assembled to be counted; [`plan_trim_counted`] gives the same plan from a
/// [`TokenCounter`] by arithmetic when the counter is additive. Candidates are searched
/// by bisection, which finds the first fitting one for any counter where dropping more
/// never counts more (every real counter); for another the answer still fits, it may just
/// not be the least destructive.
pub fn plan_trim(
    messages: &[Message],
    pairs: &Pairs,
    layout: &Layout,
    goal: usize,
    ceiling: usize,
    count: &mut dyn FnMut(&[Message]) -> usize,
) -> Option<TrimPlan> {
    let candidates = plan_candidates(messages, pairs, layout)?;
    let pins = pinned(messages, pairs);
    let mut tokens_of = |c: usize| {
        let dropped = dropped_through(&pins, c);
        count(&assemble(messages, c, &notice_content(dropped)).0)
    };
    search(messages, layout, &pins, &candidates, goal, ceiling, &mut tokens_of)
}

/// [`plan_trim`] counted by `counter`: the same plan, but with an additive counter
/// (see [`TokenCounter::additive`]) no candidate is built. Each message is counted once
/// ([`TokenCounter::count_each`]), a candidate's tokens are prefix-sum arithmetic (the
/// sticky messages it keeps, its notice, the suffix after its cut) and only the chosen
/// trim is assembled. A non-additive counter (calibrated, whole-request) counts each
/// candidate conversation as [`plan_trim`] does.
pub fn plan_trim_counted(
    messages: &[Message],
    pairs: &Pairs,
    layout: &Layout,
    goal: usize,
    ceiling: usize,
    counter: &dyn TokenCounter,
) -> Option<TrimPlan> {
    if !counter.additive() {
        let mut count = |m: &[Message]| counter.count_messages(m);
        return plan_trim(messages, pairs, layout, goal, ceiling, &mut count);
    }
    let candidates = plan_candidates(messages, pairs, layout)?;
    let counts = counter.count_each(messages);
    let pins = pinned(messages, pairs);
    // sticky[i]: tokens of the pinned (kept in place) messages in 0..i; suffix[i]: tokens
    // of i..; dropped[i]: unpinned messages in 0..i.
    let n = messages.len();
    let (mut sticky, mut dropped) = (vec![0usize; n + 1], vec![0usize; n + 1]);
    for (i, &tokens) in counts.iter().enumerate() {
        let keep = pins[i];
        sticky[i + 1] = sticky[i] + if keep { tokens } else { 0 };
        dropped[i + 1] = dropped[i] + usize::from(!keep);
    }
    let mut suffix = vec![0usize; n + 1];
    let mut running = 0usize;
    for (slot, &tokens) in suffix[..n].iter_mut().zip(&counts).rev() {
        running += tokens;
        *slot = running;
    }
    let mut tokens_of = |c: usize| {
        let notice = summary_message(&notice_content(dropped[c + 1]));
        sticky[c + 1] + counter.count_message(&notice) + suffix[c + 1]
    };
    search(messages, layout, &pins, &candidates, goal, ceiling, &mut tokens_of)
}

/// The candidates of a plannable layout, or `None` when there is nothing to trim (no
/// middle, or a layout of another conversation).
fn plan_candidates(messages: &[Message], pairs: &Pairs, layout: &Layout) -> Option<Vec<usize>> {
    let cut = layout.cut?;
    // A layout of another conversation (a cut past the end) plans nothing.
    if layout.middle.is_empty() || cut >= messages.len() || layout.middle.iter().any(|&i| i > cut) {
        return None;
    }
    Some(candidates(messages, pairs, layout, cut))
}

/// The unpinned messages in `0..=c` (see [`pinned`]): what the notice of candidate `c`
/// reports dropped.
fn dropped_through(pins: &[bool], c: usize) -> usize {
    pins[..=c].iter().filter(|&&pinned| !pinned).count()
}

/// The bisection over `candidates` by `tokens_of(candidate)`, then the validator; only
/// the chosen candidate (and, for unusual pairings, the ones walked to after it) is
/// assembled.
fn search(
    messages: &[Message],
    layout: &Layout,
    pins: &[bool],
    candidates: &[usize],
    goal: usize,
    ceiling: usize,
    tokens_of: &mut dyn FnMut(usize) -> usize,
) -> Option<TrimPlan> {
    let build = |c: usize, tokens: usize| {
        let notice = notice_content(dropped_through(pins, c));
        let (trimmed, dropped) = assemble(messages, c, &notice);
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
    let mut found: Option<usize> = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let tokens = tokens_of(candidates[mid]);
        if tokens <= goal && tokens < ceiling {
            hi = mid;
            found = Some(tokens);
        } else {
            lo = mid + 1;
        }
    }
    // The last `hi = mid` is the final `lo`, so `found` is candidate `lo`'s count.
    let last = candidates.len() - 1;
    let (first, mut plan) = match found {
        Some(tokens) => (lo, build(candidates[lo], tokens)),
        None => (last, build(candidates[last], tokens_of(candidates[last]))),
    };
    if validate(messages, &plan.messages, layout.recent_start).is_ok() {
        return Some(plan);
    }
    // Only a conversation with unusual pairing gets here: walk on to the next candidate
    // that keeps every pair intact.
    for &c in candidates.iter().skip(first + 1) {
        plan = build(c, tokens_of(c));
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
