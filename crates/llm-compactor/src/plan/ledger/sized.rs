//! A ledger sized to the pass's target: [`ledger_room`] and [`sized_ledgers`].
//!
//! The configured cap (`LedgerPolicy::max_tokens`, 2,048 by default) is what a ledger may
//! add to a summary when the budget has room for it. With a small budget it has not: a
//! 256-token budget whose pass appended a 1,300-token ledger returned a conversation five
//! times over its budget, `exhausted`, while a smaller ledger or a trim would have fitted.
//! So the ledger's cap is the smaller of the configured cap and the room the pass's aim
//! leaves once the conversation without a summary (the sticky prefix, the summary's header,
//! the recent window) is counted. Both numbers are the pass's; this is arithmetic on them.
//!
//! When the room is the binding limit, the ledger is cut by importance: the user's own
//! words (the last request last of all) are kept before the artifact trail, which the
//! agent can re-read ([`super::render_user_first`]). At the configured cap the sharing
//! is the one `compactor eval` tuned ([`super::render`]), unchanged.

use super::render::{render, render_user_first};
use super::{Ledger, chars_for_tokens};

/// The smallest cap, in chars, a ledger is rendered at: below it the heading leaves no
/// room for a fact.
const MIN_CHARS: usize = 120;
/// How many halvings of the cap a pass tries after the first (a cap in chars is an
/// estimate of tokens; a text denser than three chars a token needs a smaller one).
const HALVINGS: u32 = 4;

/// The tokens a ledger may take in a summary: what `aim` leaves after `frame` (the
/// conversation's tokens with an empty summary), never more than `max_tokens` (the
/// configured cap).
///
/// ```
/// use llm_compactor::plan::ledger::ledger_room;
/// assert_eq!(ledger_room(100_000, 3_000, 2_048), 2_048);
/// assert_eq!(ledger_room(400, 150, 2_048), 250);
/// assert_eq!(ledger_room(100, 150, 2_048), 0);
/// ```
pub fn ledger_room(aim: usize, frame: usize, max_tokens: usize) -> usize {
    aim.saturating_sub(frame).min(max_tokens)
}

/// The rendered ledgers a pass tries for a summary with `room` tokens for the ledger
/// (see [`ledger_room`]) under a configured cap of `max_tokens`, largest first, each
/// distinct and non-empty: the cap, then its halvings (below the configured cap, a
/// ledger at four chars a token first). At the configured cap the sharing is
/// [`render`]'s; below it, [`render_user_first`]'s.
///
/// ```
/// use llm_compactor::plan::ledger::{sized_ledgers, Ledger};
/// let ledger = Ledger {
///     last_user: Some("Summarize the report in French.".into()),
///     earlier_users: vec!["Never email the client directly.".into()],
///     identifiers: (0..200).map(|i| format!("identifier_{i}")).collect(),
///     ..Ledger::default()
/// };
/// let roomy = sized_ledgers(&ledger, 2_048, 2_048);
/// let tight = sized_ledgers(&ledger, 80, 2_048);
/// assert!(tight[0].chars().count() <= 320 && tight[0].contains("Never email the client directly."));
/// assert!(tight[1].chars().count() <= 240);
/// assert!(roomy[0].len() > tight[0].len());
/// assert!(sized_ledgers(&ledger, 10, 2_048).is_empty());
/// ```
pub fn sized_ledgers(ledger: &Ledger, room: usize, max_tokens: usize) -> Vec<String> {
    let tokens = room.min(max_tokens);
    let user_first = tokens < max_tokens;
    let max = chars_for_tokens(tokens);
    // When the room binds, first a ledger at four chars a token (prose, which the user's
    // words are): the pass proves each by its count, and three chars a token left a
    // quarter of a small budget unused while the user's rules were cut.
    let dense = user_first.then(|| tokens.saturating_mul(4));
    let mut out: Vec<String> = Vec::new();
    let caps = dense.into_iter().chain((0..=HALVINGS).map(|k| max >> k));
    for cap in caps.filter(|c| *c >= MIN_CHARS) {
        let text = if user_first {
            render_user_first(ledger, cap)
        } else {
            render(ledger, cap)
        };
        if !text.is_empty() && out.last() != Some(&text) {
            out.push(text);
        }
    }
    out
}
