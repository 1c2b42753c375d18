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
use super::validate::validate_refs;
use crate::count::TokenCounter;
use crate::message::Message;

/// A chosen hard trim, not assembled yet: what [`Compactor::plan`](crate::Compactor::plan)
/// reports, and what [`TrimChoice::assemble`] turns into a [`TrimPlan`] (the one copy a
/// trim makes).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrimChoice {
    /// The last input index dropped (the notice replaces `0..=cut_index`, sticky kept).
    pub cut_index: usize,
    /// How many messages are dropped.
    pub dropped: usize,
    /// The notice message's whole content.
    pub notice: String,
    /// The trimmed conversation's token count.
    pub tokens: usize,
}

impl TrimChoice {
    /// The trimmed conversation of `messages` (the conversation the choice was made on).
    pub fn assemble(self, messages: &[Message]) -> TrimPlan {
        let (trimmed, dropped) = assemble(messages, self.cut_index, &self.notice);
        TrimPlan {
            cut_index: self.cut_index,
            dropped,
            notice: self.notice,
            messages: trimmed,
            tokens: self.tokens,
        }
    }
}

/// A planned hard trim.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
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

/// One hard-trim search, in the manner of regex-automata's `Input`: what is searched
/// (the conversation, its pairs and layout), what the trim must reach (`<= goal`, and
/// `< ceiling`: a trim must shrink the conversation), and what is already known (each
/// message's count), set by builder methods; then [`TrimSearch::choose`] (counted by a
/// [`TokenCounter`]) or [`TrimSearch::choose_by`] (counted by a function of a whole
/// candidate) picks the trim, and `plan`/`plan_by` assemble it.
///
/// The trim chosen is the least destructive candidate that fits, trying candidates from
/// least to most destructive; the whole middle when none does. `None` when there is no
/// middle, or when no candidate passes the validator (a conversation whose pairing no
/// trim can respect).
///
/// ```
/// use llm_compactor::count::HeuristicCounter;
/// use llm_compactor::message::Message;
/// use llm_compactor::plan::{Pairs, TrimSearch, layout_with};
/// let mut messages = vec![Message::system("Be terse.")];
/// for i in 0..20 {
///     messages.push(Message::user(format!("question {i}: {}", "q".repeat(400))));
///     messages.push(Message::assistant(format!("answer {i}: {}", "a".repeat(400))));
/// }
/// let pairs = Pairs::build(&messages);
/// let layout = layout_with(&messages, &pairs, 4);
/// let trim = TrimSearch::new(&messages, &pairs, &layout, 1_000).plan(&HeuristicCounter).unwrap();
/// assert!(trim.tokens <= 1_000 && trim.messages.len() < messages.len());
/// ```
#[derive(Clone, Copy)]
pub struct TrimSearch<'a> {
    messages: &'a [Message],
    pairs: &'a Pairs,
    layout: &'a Layout,
    goal: usize,
    ceiling: usize,
    counts: Option<&'a [usize]>,
}

impl std::fmt::Debug for TrimSearch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrimSearch")
            .field("messages", &self.messages.len())
            .field("cut", &self.layout.cut)
            .field("goal", &self.goal)
            .field("ceiling", &self.ceiling)
            .field("counts_known", &self.counts.is_some())
            .finish()
    }
}

impl<'a> TrimSearch<'a> {
    /// A search for the trim of `messages` (laid out by `layout`) that counts `<= goal`;
    /// no ceiling, no counts known.
    pub fn new(messages: &'a [Message], pairs: &'a Pairs, layout: &'a Layout, goal: usize) -> Self {
        TrimSearch {
            messages,
            pairs,
            layout,
            goal,
            ceiling: usize::MAX,
            counts: None,
        }
    }

    /// A trim must also count `< ceiling` (the conversation's own count: it must shrink).
    pub fn ceiling(mut self, ceiling: usize) -> Self {
        self.ceiling = ceiling;
        self
    }

    /// Each message's count is known (`counts[i]` is `counter.count_message(&messages[i])`
    /// for the additive counter [`TrimSearch::choose`] is given, as a
    /// [`crate::Conversation`] keeps them): no message is counted at all, only the
    /// notices. Counts of another length than the conversation plan nothing.
    pub fn known_counts(mut self, counts: &'a [usize]) -> Self {
        self.counts = Some(counts);
        self
    }

    /// The trim, counted by `counter`. With an additive counter (see
    /// [`TokenCounter::additive`]) or known counts no candidate is built and no message
    /// the trim will never keep is counted: a candidate's tokens are prefix-sum
    /// arithmetic (the pinned messages it keeps, its notice, the suffix after its cut);
    /// the suffix sums are counted from the end, in chunks, only as far back as a
    /// candidate under test needs, and a candidate whose suffix alone is over the goal is
    /// rejected without counting the rest. So a trim that keeps the last 40% of a
    /// conversation counts about 40% of it, and nothing is copied (the candidates are
    /// validated as views). A non-additive counter (calibrated, whole-request) counts
    /// each candidate conversation as [`TrimSearch::choose_by`] does.
    pub fn choose(&self, counter: &dyn TokenCounter) -> Option<TrimChoice> {
        match self.counts {
            Some(counts) if counts.len() != self.messages.len() => None,
            Some(counts) => self.choose_counted(counter, Some(counts)),
            None if !counter.additive() => {
                let mut count = |m: &[Message]| counter.count_messages(m);
                self.choose_by(&mut count)
            }
            None => self.choose_counted(counter, None),
        }
    }

    /// [`TrimSearch::choose`], assembled.
    pub fn plan(&self, counter: &dyn TokenCounter) -> Option<TrimPlan> {
        self.choose(counter).map(|c| c.assemble(self.messages))
    }

    /// The trim, each candidate the search looks at assembled and counted whole by
    /// `count` (the only way for a count that is not a sum of messages). Candidates are
    /// searched by bisection, which finds the first fitting one for any count where
    /// dropping more never counts more (every real counter); for another the answer
    /// still fits, it may just not be the least destructive.
    pub fn choose_by(&self, count: &mut dyn FnMut(&[Message]) -> usize) -> Option<TrimChoice> {
        let messages = self.messages;
        let candidates = plan_candidates(messages, self.pairs, self.layout)?;
        let pins = pinned(messages, self.pairs);
        let mut tokens_of = |c: usize, _bounded: bool| {
            let dropped = dropped_through(&pins, c);
            Some(count(&assemble(messages, c, &notice_content(dropped)).0))
        };
        self.search(&pins, &candidates, &mut tokens_of)
    }

    /// [`TrimSearch::choose_by`], assembled.
    pub fn plan_by(&self, count: &mut dyn FnMut(&[Message]) -> usize) -> Option<TrimPlan> {
        self.choose_by(count).map(|c| c.assemble(self.messages))
    }

    fn choose_counted(&self, counter: &dyn TokenCounter, known: Option<&[usize]>) -> Option<TrimChoice> {
        let messages = self.messages;
        let candidates = plan_candidates(messages, self.pairs, self.layout)?;
        let cut = *candidates.last()?;
        let pins = pinned(messages, self.pairs);
        // sticky[i]: tokens of the pinned (kept in place) messages in 0..i, for i <= cut + 1
        // (every candidate keeps them all, so counting them counts what is kept);
        // dropped[i]: unpinned messages in 0..i.
        let (mut sticky, mut dropped) = (vec![0usize; cut + 2], vec![0usize; cut + 2]);
        for i in 0..=cut {
            let keep = pins[i];
            let tokens = match (keep, known) {
                (false, _) => 0,
                (true, Some(counts)) => counts[i],
                (true, None) => counter.count_message(&messages[i]),
            };
            sticky[i + 1] = sticky[i] + tokens;
            dropped[i + 1] = dropped[i] + usize::from(!keep);
        }
        let mut suffix = Suffix::new(messages, counter, known);
        // Over this, a candidate cannot fit (`tokens <= goal && tokens < ceiling`).
        let limit = self.ceiling.checked_sub(1).map(|c| c.min(self.goal));
        let mut tokens_of = |c: usize, bounded: bool| {
            let notice = summary_message(&notice_content(dropped[c + 1]));
            let head = sticky[c + 1] + counter.count_message(&notice);
            if !bounded {
                return suffix.from(c + 1, None).map(|s| head + s);
            }
            // A bound below what the head alone costs: the candidate is over it already.
            let room = limit?.checked_sub(head)?;
            suffix.from(c + 1, Some(room)).map(|s| head + s)
        };
        self.search(&pins, &candidates, &mut tokens_of)
    }

    /// The bisection over `candidates` by `tokens_of(candidate, bounded)`, then the
    /// validator; nothing is assembled: each candidate is validated as a view
    /// (references to the kept messages and its notice), and the caller assembles the
    /// choice. `tokens_of(c, true)` may answer `None` for a candidate that is certainly
    /// over the goal; `tokens_of(c, false)` is the exact count.
    fn search(
        &self,
        pins: &[bool],
        candidates: &[usize],
        tokens_of: &mut dyn FnMut(usize, bool) -> Option<usize>,
    ) -> Option<TrimChoice> {
        let (messages, goal, ceiling) = (self.messages, self.goal, self.ceiling);
        let choose = |c: usize, tokens: usize| {
            let dropped = dropped_through(pins, c);
            let notice = notice_content(dropped);
            let notice_message = summary_message(&notice);
            let view: Vec<&Message> = messages[..=c]
                .iter()
                .zip(pins)
                .filter(|(_, pinned)| **pinned)
                .map(|(m, _)| m)
                .chain(std::iter::once(&notice_message))
                .chain(&messages[c + 1..])
                .collect();
            validate_refs(messages, self.pairs, &view, self.layout.recent_start)
                .is_ok()
                .then_some(TrimChoice {
                    cut_index: c,
                    dropped,
                    notice,
                    tokens,
                })
        };
        // Bisection for the first candidate that fits.
        let (mut lo, mut hi) = (0usize, candidates.len());
        let mut found: Option<usize> = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match tokens_of(candidates[mid], true) {
                Some(tokens) if tokens <= goal && tokens < ceiling => {
                    hi = mid;
                    found = Some(tokens);
                }
                _ => lo = mid + 1,
            }
        }
        // The last `hi = mid` is the final `lo`, so `found` is candidate `lo`'s count.
        let last = candidates.len() - 1;
        let (first, chosen) = match found {
            Some(tokens) => (lo, choose(candidates[lo], tokens)),
            None => (last, choose(candidates[last], exact(tokens_of, candidates[last]))),
        };
        if chosen.is_some() {
            return chosen;
        }
        // Only a conversation with unusual pairing gets here: walk on to the next
        // candidate that keeps every pair intact.
        candidates
            .iter()
            .skip(first + 1)
            .find_map(|&c| choose(c, exact(tokens_of, c)))
    }
}

/// Suffix sums of per-message counts, counted from the end on demand.
struct Suffix<'a> {
    messages: &'a [Message],
    counter: &'a dyn TokenCounter,
    known: Option<&'a [usize]>,
    /// `sums[k]`: tokens of the last `k` messages (`sums[0] == 0`).
    sums: Vec<usize>,
}

/// Messages counted per step when the suffix grows: big enough that a memo's per-call
/// overhead is amortized, small enough that little is counted past what is needed.
const SUFFIX_CHUNK: usize = 32;

impl<'a> Suffix<'a> {
    fn new(messages: &'a [Message], counter: &'a dyn TokenCounter, known: Option<&'a [usize]>) -> Self {
        Suffix {
            messages,
            counter,
            known,
            sums: vec![0],
        }
    }

    /// Tokens of `messages[start..]`; `None` as soon as what is counted of it exceeds
    /// `bound` (the rest is then never counted).
    fn from(&mut self, start: usize, bound: Option<usize>) -> Option<usize> {
        let n = self.messages.len();
        let want = n - start.min(n);
        while self.sums.len() <= want {
            let counted = self.sums.len() - 1;
            let running = self.sums[counted];
            if bound.is_some_and(|b| running > b) {
                return None;
            }
            let hi = n - counted;
            let lo = hi.saturating_sub(SUFFIX_CHUNK).max(n - want);
            let counts: Vec<usize> = match self.known {
                Some(known) => known[lo..hi].to_vec(),
                None => self.counter.count_some(&self.messages[lo..hi]),
            };
            let mut running = running;
            for &tokens in counts.iter().rev() {
                running += tokens;
                self.sums.push(running);
            }
        }
        let tokens = self.sums[want];
        match bound {
            Some(b) if tokens > b => None,
            _ => Some(tokens),
        }
    }
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

/// A candidate's exact tokens (an unbounded count always answers).
fn exact(tokens_of: &mut dyn FnMut(usize, bool) -> Option<usize>, c: usize) -> usize {
    tokens_of(c, false).unwrap_or_default()
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
