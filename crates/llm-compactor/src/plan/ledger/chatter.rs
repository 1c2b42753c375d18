//! Which earlier user messages instruct, and which only ask or acknowledge.
//!
//! A 130-turn chat holds a handful of rules, constraints, facts and preferences among
//! dozens of questions and "ok, thanks". When the ledger's room is short, the
//! "Earlier user messages" section used to keep the newest lines, so the rules said
//! first (the oldest) were the first cut. Now a line that only asks or acknowledges
//! ([`is_chatter`]) is cut before any line that states something; within each tier the
//! newest are kept first. Nothing is reworded: the tier only decides what is cut.

use super::Ledger;
use super::marks::{split_count, split_superseded};
use super::sections::PINNED_INDENT;

/// Chars of the last request that must be there for it to count as kept.
const REQUEST_HEAD: usize = 120;

/// Words that make even a short message an instruction.
const INSTRUCTING: [&str; 12] = [
    "never", "always", "must", "don't", "dont", "do", "not", "only", "avoid", "remember", "keep", "use",
];

/// Interjections a chat sentence may consist of without saying anything.
const ACKS: [&str; 14] = [
    "ok", "okay", "thanks", "thank", "you", "great", "cool", "sure", "yes", "no", "fine", "good", "perfect", "nice",
];

/// True when a user message only asks (every sentence is a question) or acknowledges
/// (a few words of thanks, "ok", "continue"), and states no rule, constraint or fact.
///
/// ```
/// use llm_compactor::plan::ledger::is_chatter;
/// assert!(is_chatter("Question 12: what about option 2 for day 5?"));
/// assert!(is_chatter("Thanks! What about Paris?"));
/// assert!(is_chatter("ok, continue"));
/// assert!(!is_chatter("Never use tabs."));
/// assert!(!is_chatter("Fact: my passport ends in 4471."));
/// assert!(!is_chatter("Great. Book the 9:00 one."));
/// ```
pub fn is_chatter(text: &str) -> bool {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    if words.iter().any(|w| INSTRUCTING.contains(&w.as_str())) {
        return false;
    }
    if words.len() <= 3 {
        return true;
    }
    sentences(text).all(|s| s.ends_with('?') || is_ack(s))
}

/// The sentences of `text`, each with its end mark, trimmed.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(['.', '!', '?', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty() && s.chars().any(char::is_alphanumeric))
}

/// A sentence of at most three words, each an interjection.
fn is_ack(sentence: &str) -> bool {
    let words: Vec<String> = sentence
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    words.len() <= 3 && words.iter().all(|w| ACKS.contains(&w.as_str()))
}

/// How many of the instructions of `ledger` `text` (a summary) holds verbatim, of how
/// many: each pinned block, each earlier user message that instructs (not
/// [`is_chatter`], not superseded), and the last request (its head). What a pass weighs
/// before it takes a ledger cut to reach its target rather than one that only fits its
/// limit (see [`super::sized_ledgers`]): a soft aim is no reason to drop what the user
/// said.
///
/// ```
/// use llm_compactor::plan::ledger::{instructions_kept, Ledger};
/// let ledger = Ledger {
///     last_user: Some("Book it.".into()),
///     earlier_users: vec!["Never pay upfront.".into(), "What about Oslo?".into()],
///     ..Ledger::default()
/// };
/// assert_eq!(instructions_kept(&ledger, "- Never pay upfront.\n- Book it."), (2, 2));
/// assert_eq!(instructions_kept(&ledger, "- What about Oslo?\n- Book it."), (1, 2));
/// ```
pub fn instructions_kept(ledger: &Ledger, text: &str) -> (usize, usize) {
    let mut kept = 0;
    let mut total = 0;
    let mut count = |found: bool| {
        total += 1;
        kept += usize::from(found);
    };
    for pin in &ledger.pinned {
        count(text.contains(split_count(pin).0.replace('\n', PINNED_INDENT).as_str()));
    }
    for line in &ledger.earlier_users {
        let (body, superseded) = split_superseded(line);
        let body = split_count(body).0;
        if !superseded && !is_chatter(body) {
            count(text.contains(body));
        }
    }
    if ledger.last_user.is_some() {
        count(request_kept(ledger, text));
    }
    (kept, total)
}

/// True when `text` (a summary) holds the head of the last request of `ledger` (a long
/// one is cut by design, see [`super::render`]), or the ledger has none.
///
/// ```
/// use llm_compactor::plan::ledger::{request_kept, Ledger};
/// let ledger = Ledger { last_user: Some("Book it.".into()), ..Ledger::default() };
/// assert!(request_kept(&ledger, "- Book it."));
/// assert!(!request_kept(&ledger, "- Never pay upfront."));
/// ```
pub fn request_kept(ledger: &Ledger, text: &str) -> bool {
    ledger.last_user.as_deref().is_none_or(|request| {
        let end = request
            .char_indices()
            .nth(REQUEST_HEAD)
            .map_or(request.len(), |(b, _)| b);
        text.contains(&request[..end])
    })
}
