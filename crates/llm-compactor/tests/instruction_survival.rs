//! What the user said stays (issue 41, item 1): instruction survival by type after one
//! and after five successive passes, on generated chat sessions (`chat_support`).
//!
//! Each planted instruction (rules, constraints, facts, the task's state, preferences,
//! an injected `<system-reminder>` instruction file) must be in the result verbatim;
//! the constraint a later message replaced must never be listed as current; a repeated
//! message is listed once. At budgets of 20–30% of the session every type survives one
//! pass (100%), and at 25–30% five passes (each over the last result plus fifteen new
//! turns), every result under the trigger; the other figures are printed, not asserted.

use crate::chat_support::{self, ChatSession, Kind, compact, ledger_compactor};

use std::collections::BTreeMap;
use std::sync::Arc;

use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::message::Message;
use llm_compactor::plan::ledger::{LedgerRules, SUPERSEDED, extract, render, render_user_first};

/// Survived / planted, by kind.
type Tally = BTreeMap<Kind, (usize, usize)>;

fn tally(session: &ChatSession, messages: &[Message], into: &mut Tally) {
    for planted in &session.planted {
        let entry = into.entry(planted.kind).or_default();
        entry.0 += usize::from(chat_support::survives(planted, messages));
        entry.1 += 1;
    }
}

/// The result of `passes` successive passes at `budget` (fifteen new turns between two).
fn passes(
    session: &ChatSession,
    seed: u64,
    budget: usize,
    passes: usize,
    counter: &Arc<dyn TokenCounter>,
) -> Vec<Message> {
    let compactor = ledger_compactor(budget, Arc::clone(counter));
    let size = counter.count_messages(&session.messages);
    let mut messages = session.messages.clone();
    for pass in 0..passes {
        if pass > 0 {
            messages.extend(chat_support::more_turns(seed, 1000 + pass * 15, 15));
        }
        let r = compact(&compactor, &messages);
        // At 20% and above under the trigger (a result over it would call for another
        // pass at once); at 10% the limit when nothing under the trigger keeps the last
        // request.
        let ceiling = if budget * 5 >= size {
            compactor.config().trigger()
        } else {
            budget
        };
        assert!(
            r.tokens_after <= ceiling && !r.exhausted,
            "budget {budget}, pass {}: {} tokens after",
            pass + 1,
            r.tokens_after
        );
        messages = r.messages;
    }
    messages
}

fn percent(t: &Tally, kind: Kind) -> f64 {
    let (s, n) = t.get(&kind).copied().unwrap_or_default();
    100.0 * s as f64 / n.max(1) as f64
}

#[test]
fn every_type_survives_one_and_five_passes_at_20_to_30_percent() {
    let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicCounter);
    for pct in [10, 20, 25, 30] {
        let (mut one, mut five) = (Tally::new(), Tally::new());
        for seed in 0..4 {
            let session = chat_support::session(seed, 65);
            let size = counter.count_messages(&session.messages);
            let budget = (size * pct / 100).max(256);
            let after_one = passes(&session, seed, budget, 1, &counter);
            let after_five = passes(&session, seed, budget, 5, &counter);
            tally(&session, &after_one, &mut one);
            tally(&session, &after_five, &mut five);
            if pct >= 20 {
                for (messages, n) in [(&after_one, 1), (&after_five, 5)] {
                    let repeated = &session.planted[8].text;
                    assert_eq!(
                        chat_support::listed(repeated, messages),
                        1,
                        "seed {seed}, {pct}%, {n} passes: the repeated rule is listed once"
                    );
                }
            }
        }
        let row: Vec<String> = Kind::ALL
            .iter()
            .map(|k| format!("{k:?} {:.0}%/{:.0}%", percent(&one, *k), percent(&five, *k)))
            .collect();
        eprintln!("budget {pct}% (after 1 / after 5 passes): {}", row.join(", "));
        // Every result also stays under the trigger (a result over it would call for
        // another pass at once): at 20% that leaves five passes short of room for all.
        for kind in Kind::ALL {
            if pct >= 20 {
                assert_eq!(percent(&one, kind), 100.0, "{pct}%: {kind:?} after one pass");
            }
            if pct >= 25 {
                assert_eq!(percent(&five, kind), 100.0, "{pct}%: {kind:?} after five passes");
            }
        }
    }
}

#[test]
fn the_superseded_cap_is_marked_and_its_replacement_listed() {
    let session = chat_support::session(7, 65);
    let middle: Vec<usize> = (1..session.messages.len() - 2).collect();
    let ledger = extract(&session.messages, &middle, &LedgerRules::default());
    let old = &session.planted[1].text;
    let new = &session.planted[9].text;
    let line = ledger
        .earlier_users
        .iter()
        .find(|l| l.starts_with(old.as_str()))
        .expect("listed");
    assert_eq!(*line, format!("{old}{SUPERSEDED}"));
    assert!(ledger.earlier_users.iter().any(|l| l == new));
    // Read back from a summary, the mark holds (a second pass keeps it).
    let text = render(&ledger, 100_000);
    let back = llm_compactor::plan::ledger::parse_rendered(&text).expect("a ledger");
    assert!(back.earlier_users.contains(line));
}

#[test]
fn a_reminder_is_pinned_first_and_kept_before_the_users_other_words() {
    let session = chat_support::session(3, 65);
    let middle: Vec<usize> = (1..session.messages.len() - 2).collect();
    let ledger = extract(&session.messages, &middle, &LedgerRules::default());
    assert_eq!(ledger.pinned.len(), 1);
    assert!(ledger.pinned[0].starts_with("<system-reminder>"));
    // The first user turn's own words are an earlier message, the block split out.
    assert!(ledger.earlier_users[0].starts_with("Rule: never book anything"));
    // A room too small for the user's other words still holds the pinned block, first.
    let text = render_user_first(&ledger, 500);
    let pinned = text.find("### Pinned instructions").expect("pinned kept");
    assert!(text.find("### Last user request").is_none_or(|r| r > pinned), "{text}");
    assert!(
        text.contains("  - Never share the traveller's passport number"),
        "{text}"
    );
    let back = llm_compactor::plan::ledger::parse_rendered(&text).expect("a ledger");
    assert_eq!(back.pinned, ledger.pinned);
}

#[test]
fn a_reinjected_reminder_is_listed_once_with_its_count() {
    let reminder = "<system-reminder>Use pnpm, never npm.</system-reminder>";
    let mut messages = vec![Message::system("agent")];
    for i in 0..4 {
        messages.push(Message::user(format!("{reminder}\nStep {i}: continue with the build.")));
        messages.push(Message::assistant("Done."));
    }
    let ledger = extract(&messages, &(1..9).collect::<Vec<_>>(), &LedgerRules::default());
    assert_eq!(ledger.pinned, vec![format!("{reminder} (×4)")]);
}

#[test]
fn questions_are_cut_before_rules() {
    let session = chat_support::session(5, 65);
    let middle: Vec<usize> = (1..session.messages.len() - 2).collect();
    let ledger = extract(&session.messages, &middle, &LedgerRules::default());
    let text = render_user_first(&ledger, 1_400);
    for planted in session
        .planted
        .iter()
        .filter(|p| p.kind != Kind::Pinned && !p.superseded)
    {
        assert!(text.contains(&planted.text), "{:?} cut:\n{text}", planted.text);
    }
    assert!(text.contains("omitted, questions first"), "{text}");
}
