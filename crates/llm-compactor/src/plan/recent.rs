//! The token cap of the recent window (`max_recent_tokens`).
//!
//! The recent window is kept verbatim, so one huge tool result in the last turns used to
//! make every pass `exhausted`: nothing outside the window could be dropped to make room.
//! The cap makes the window shrink to fit, from the oldest end, only at boundaries that
//! never split a call from its answers, and never past the newest user message (the
//! instruction the agent is working on). When even the newest turn is over the cap, the
//! biggest tool results in it are cut head-and-tail, with a marker that names how many
//! characters were cut; the newest user message and pinned messages are never touched.
//! What still does not fit after that is reported as `exhausted`.
//!
//! The results the agent has not read yet (the answers to the last assistant turn, at
//! the end of the conversation) are spared while they fit the room the budget leaves
//! (`unread_cap`): cutting them to meet a soft cap cut a 10.4 KB command output to 4.3 KB
//! before the model ever saw it, in a request at 71% of its budget. They are cut only
//! down to that room, when the request could not be sent otherwise; the cut is in
//! `truncations` and the original stays in the transcript.
//!
//! A cut result is recorded like an elision (its index and its new whole content), so a
//! session replays it byte for byte.

use super::cut::Layout;
use super::pairs::Pairs;
use super::pinned::pinned;
use super::stub::is_stub;
use crate::message::{Content, Message, Part, Role};

/// Characters of a cut result always kept (head and tail together).
const MIN_KEPT_CHARS: usize = 256;

/// A tool result of the recent window cut head-and-tail to fit the cap.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Truncation {
    /// Its index in the conversation.
    pub index: usize,
    /// Its new whole content: head, marker, tail.
    pub content: String,
    /// How many chars were cut from its middle.
    pub cut_chars: usize,
}

/// `text` with its middle cut so that `keep` chars remain (half head, half tail), with a
/// marker that names how many chars were cut; `None` when that would not shorten it.
///
/// ```
/// use llm_compactor::plan::cut_middle;
/// let text = "a".repeat(100) + &"b".repeat(100);
/// let cut = cut_middle(&text, 20).unwrap();
/// assert!(cut.starts_with("aaaaaaaaaa\n[... 180 characters cut"));
/// assert!(cut.ends_with("]\nbbbbbbbbbb"));
/// ```
pub fn cut_middle(text: &str, keep: usize) -> Option<String> {
    let chars = text.chars().count();
    let cut = chars.checked_sub(keep)?;
    let head = keep / 2;
    let marker =
        format!("\n[... {cut} characters cut from the middle of this tool result by the context compactor ...]\n");
    if cut <= marker.chars().count() {
        return None;
    }
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(b, _)| b);
    let tail_start = text.char_indices().nth(head + cut).map_or(text.len(), |(b, _)| b);
    Some(format!("{}{marker}{}", &text[..head_end], &text[tail_start..]))
}

/// The recent window's token cap under a `limit` (the per-call target, else the
/// context budget) when the sticky messages take `sticky` of it: the configured cap
/// (`cap`), never more than three quarters of what the sticky messages leave (the
/// last quarter is the summary's), and at least 1 (the window still keeps the newest
/// user message whole, whatever its cap: see [`fit_recent`]).
///
/// ```
/// use llm_compactor::plan::window_cap;
/// assert_eq!(window_cap(400, 2_000, 100), 400);
/// assert_eq!(window_cap(369, 1_847, 1_547), 225);
/// assert_eq!(window_cap(369, 1_000, 1_500), 1);
/// ```
pub fn window_cap(cap: usize, limit: usize, sticky: usize) -> usize {
    cap.min(limit.saturating_sub(sticky) * 3 / 4).max(1)
}

/// `layout` with its recent window shrunk to `max_tokens` (by the per-message counts
/// `tokens`), and the cuts of oversized tool results when even the newest turn is over
/// it. The unread results (answers to the last assistant turn, ending the conversation)
/// are cut only while the window is over `unread_cap` (at least `max_tokens`: the room
/// the budget leaves it), and only down to it. `count_one` counts one message (for a
/// cut result). The layout is returned as it was when the window already fits. Only the
/// counts from `layout.recent_start` on are read (the rest may be 0).
pub fn fit_recent(
    messages: &[Message],
    pairs: &Pairs,
    layout: Layout,
    tokens: &[usize],
    max_tokens: usize,
    unread_cap: usize,
    count_one: &mut dyn FnMut(&Message) -> usize,
) -> (Layout, Vec<Truncation>) {
    let n = messages.len();
    if tokens.len() != n || layout.recent_start >= n {
        return (layout, Vec::new());
    }
    let mut suffix = vec![0usize; n + 1];
    for i in (0..n).rev() {
        suffix[i] = suffix[i + 1].saturating_add(tokens[i]);
    }
    if suffix[layout.recent_start] <= max_tokens {
        return (layout, Vec::new());
    }
    // The earliest non-sticky asking turn of any result at or after each index.
    let mut earliest_asker = vec![usize::MAX; n + 1];
    for i in (0..n).rev() {
        let own = pairs
            .asker(i)
            .filter(|&turn| messages.get(turn).is_some_and(|m| !m.is_sticky()))
            .unwrap_or(usize::MAX);
        earliest_asker[i] = earliest_asker[i + 1].min(own);
    }
    let newest_user = messages
        .iter()
        .rposition(|m| m.role == Role::User && !m.is_sticky())
        .filter(|&u| u >= layout.recent_start);
    let mut limit = newest_user.unwrap_or(n - 1);
    if let Some(turn) = super::cut::pending_turn(messages) {
        limit = limit.min(turn);
    }
    let valid = |s: usize| s < n && !messages[s].is_tool_result() && earliest_asker[s] >= s;
    let boundaries: Vec<usize> = (layout.recent_start..=limit).filter(|&s| valid(s)).collect();
    let start = boundaries
        .iter()
        .copied()
        .find(|&s| suffix[s] <= max_tokens)
        .or_else(|| boundaries.last().copied())
        .unwrap_or(layout.recent_start);
    let pins = pinned(messages, pairs);
    let shrunk = if start == layout.recent_start {
        layout
    } else {
        let cut = start - 1;
        Layout {
            cut: Some(cut),
            recent_start: start,
            middle: (0..=cut).filter(|&i| !pins[i]).collect(),
        }
    };
    let mut excess = suffix[shrunk.recent_start].saturating_sub(max_tokens);
    if excess == 0 {
        return (shrunk, Vec::new());
    }
    // Cut the biggest tool results of the window until it fits: those already read
    // first, to the soft cap; the unread ones only to the room the budget leaves. A cut
    // writes the result as text: one that holds anything else (an image, a file) is not
    // cut, since its other parts would go without a word.
    let unread = unread_from(messages);
    let cuttable = |i: &usize| {
        messages[*i].is_tool_result() && !pins[*i] && !is_stub(&messages[*i].content) && is_text(&messages[*i].content)
    };
    let mut read: Vec<usize> = (shrunk.recent_start..unread.max(shrunk.recent_start))
        .filter(cuttable)
        .collect();
    read.sort_by_key(|&i| (std::cmp::Reverse(tokens[i]), i));
    let mut truncations = Vec::new();
    let saved = cut_biggest(messages, tokens, &read, &mut excess, &mut truncations, count_one);
    let window = suffix[shrunk.recent_start] - saved;
    let mut unread_excess = window.saturating_sub(unread_cap.max(max_tokens));
    if unread_excess > 0 {
        let mut fresh: Vec<usize> = (unread.max(shrunk.recent_start)..n).filter(cuttable).collect();
        fresh.sort_by_key(|&i| (std::cmp::Reverse(tokens[i]), i));
        cut_biggest(
            messages,
            tokens,
            &fresh,
            &mut unread_excess,
            &mut truncations,
            count_one,
        );
    }
    truncations.sort_by_key(|t| t.index);
    (shrunk, truncations)
}

/// Where the unread results start: the tool results that end the conversation (the
/// answers to its last assistant turn, not yet seen by the model); `n` when it does not
/// end with one.
fn unread_from(messages: &[Message]) -> usize {
    let trailing = messages.iter().rev().take_while(|m| m.is_tool_result()).count();
    messages.len() - trailing
}

/// Cuts the results `candidates` (biggest first) head-and-tail until `excess` tokens
/// are saved, pushing each cut to `truncations`; the tokens saved.
fn cut_biggest(
    messages: &[Message],
    tokens: &[usize],
    candidates: &[usize],
    excess: &mut usize,
    truncations: &mut Vec<Truncation>,
    count_one: &mut dyn FnMut(&Message) -> usize,
) -> usize {
    let mut saved = 0;
    for &i in candidates {
        if *excess == 0 {
            break;
        }
        let text = messages[i].text();
        let chars = text.chars().count();
        let before = tokens[i].max(1);
        // Chars to drop, in proportion to the tokens to drop, then halved until it fits.
        let wanted = (chars as u128 * (*excess).min(before) as u128).div_ceil(before as u128) as usize;
        let mut keep = chars.saturating_sub(wanted).max(MIN_KEPT_CHARS);
        let mut best: Option<(String, usize, usize)> = None;
        for _ in 0..8 {
            let Some(content) = cut_middle(&text, keep) else { break };
            let mut probe = messages[i].clone();
            probe.content = Content::Text(content.clone());
            let after = count_one(&probe);
            best = Some((content, after, chars - keep));
            if before.saturating_sub(after) >= *excess || keep == MIN_KEPT_CHARS {
                break;
            }
            keep = (keep / 2).max(MIN_KEPT_CHARS);
        }
        if let Some((content, after, cut_chars)) = best
            && after < before
        {
            *excess = excess.saturating_sub(before - after);
            truncations.push(Truncation {
                index: i,
                cut_chars,
                content,
            });
            saved += before - after;
        }
    }
    saved
}

/// True when `content` is text only (a string, or text parts), so that a cut of its
/// text loses nothing else.
fn is_text(content: &Content) -> bool {
    match content {
        Content::Parts(parts) => parts.iter().all(|part| matches!(part, Part::Text { .. })),
        _ => true,
    }
}
