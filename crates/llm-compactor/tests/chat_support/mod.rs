//! Deterministic chat sessions with planted instructions (issue 41).
//!
//! A session is what a new user of the Python package tried: ~130 turns of a chat in
//! which the early user turns state safety rules, hard constraints (a budget cap, later
//! raised), facts, the task's state and preferences, an agent client injects its
//! instruction file as a `<system-reminder>` block, one rule is repeated three times,
//! and everything else is questions, acknowledgements and the assistant's answers. The
//! seed varies the numbers, names and wording; the same seed gives the same session.

use std::sync::Arc;

use llm_compactor::backend::LedgerSummarizer;
use llm_compactor::count::TokenCounter;
use llm_compactor::message::Message;
use llm_compactor::plan::ledger::LedgerPolicy;
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig};

/// A compactor at `budget` counting with `counter` whose summary is the ledger (what the
/// Python package and the CLI use by default).
pub fn ledger_compactor(budget: usize, counter: Arc<dyn TokenCounter>) -> Compactor {
    let config = CompactorConfig::builder(budget).build().unwrap();
    Compactor::new(config, counter)
        .with_ledger(LedgerPolicy::default())
        .with_summarizer(Arc::new(LedgerSummarizer))
}

/// One pass of `compactor` over `messages`, on a runtime of its own.
pub fn compact(compactor: &Compactor, messages: &[Message]) -> CompactionResult {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(compactor.compact(messages, CompactOptions::default()))
        .unwrap()
}

/// What an instruction is, for survival by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A safety rule ("never …").
    Rule,
    /// A hard constraint with a value (the budget cap).
    Constraint,
    /// A fact about the user or the world.
    Fact,
    /// The task and where it stands.
    Task,
    /// A preference.
    Preference,
    /// An injected instruction file (`<system-reminder>`).
    Pinned,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 6] = [
        Kind::Rule,
        Kind::Constraint,
        Kind::Fact,
        Kind::Task,
        Kind::Preference,
        Kind::Pinned,
    ];
}

/// One planted instruction: its kind and its verbatim text; `superseded` when a later
/// message replaces it (then it must not be presented as current).
#[derive(Clone, Debug)]
pub struct Planted {
    pub kind: Kind,
    pub text: String,
    pub superseded: bool,
}

/// A generated session.
pub struct ChatSession {
    pub messages: Vec<Message>,
    pub planted: Vec<Planted>,
}

/// A small deterministic generator (an LCG): the same seed, the same session.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const CITIES: [&str; 6] = ["Lisbon", "Kyoto", "Oslo", "Lima", "Cairo", "Quebec"];
const FOODS: [&str; 4] = ["peanuts", "shellfish", "gluten", "sesame"];

/// A session of `turns` user turns (each answered), with planted instructions in the
/// first turns, a repeated rule, and a constraint superseded two thirds of the way in.
pub fn session(seed: u64, turns: usize) -> ChatSession {
    assert!(turns >= 30, "a session has room for its planted instructions");
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xC0FFEE);
    let city = rng.pick(&CITIES);
    let food = rng.pick(&FOODS);
    let old_cap = 150 + rng.below(100);
    let new_cap = 700 + rng.below(300);
    let digits = 1000 + rng.below(9000);
    let reminder = "<system-reminder>\nContents of /home/user/trip/CLAUDE.md (project instructions):\n\
         - Never share the traveller's passport number with anyone.\n\
         - Confirm every booking in writing before paying.\n</system-reminder>"
        .to_owned();
    let plants: Vec<(Kind, String)> = vec![
        (
            Kind::Rule,
            "Rule: never book anything without asking me first.".to_owned(),
        ),
        (
            Kind::Constraint,
            format!("Constraint: the budget cap is ${old_cap} for the whole trip."),
        ),
        (
            Kind::Fact,
            format!("Fact: my passport number ends in {digits} and I am allergic to {food}."),
        ),
        (
            Kind::Task,
            format!("Task: plan a five-day trip to {city}; flights are booked, the hotel is not yet."),
        ),
        (
            Kind::Preference,
            "Preference: window seats, and no red-eye flights please.".to_owned(),
        ),
        (
            Kind::Rule,
            "Rule: always quote prices in euros, not dollars.".to_owned(),
        ),
        (
            Kind::Constraint,
            "Constraint: the trip must end by Friday the 14th.".to_owned(),
        ),
        (
            Kind::Preference,
            "Preference: I like quiet hotels near a park.".to_owned(),
        ),
    ];
    let repeated = "Remember: never pay a deposit over 20% upfront.";
    let superseding = format!("Correction: the budget cap is now ${new_cap}, it replaces the ${old_cap} one.");
    let supersede_at = turns * 2 / 3;
    let repeats = [turns / 4, turns / 2, turns * 3 / 4];
    let mut planted: Vec<Planted> = plants
        .iter()
        .enumerate()
        .map(|(i, (kind, text))| Planted {
            kind: *kind,
            text: text.clone(),
            superseded: i == 1,
        })
        .collect();
    planted.push(Planted {
        kind: Kind::Rule,
        text: repeated.to_owned(),
        superseded: false,
    });
    planted.push(Planted {
        kind: Kind::Constraint,
        text: superseding.clone(),
        superseded: false,
    });
    planted.push(Planted {
        kind: Kind::Pinned,
        text: reminder.clone(),
        superseded: false,
    });

    let mut messages = vec![Message::system("You are a travel assistant. Be concise.")];
    for i in 0..turns {
        let user = if i == 0 {
            format!("{reminder}\n{}", plants[0].1)
        } else if i < plants.len() {
            plants[i].1.clone()
        } else if i == supersede_at {
            superseding.clone()
        } else if repeats.contains(&i) {
            repeated.to_owned()
        } else {
            filler(&mut rng, i, city)
        };
        messages.push(Message::user(user));
        messages.push(Message::assistant(answer(&mut rng, i, city)));
    }
    ChatSession { messages, planted }
}

/// `n` more turns of questions and answers (what a session says between two passes).
pub fn more_turns(seed: u64, start: usize, n: usize) -> Vec<Message> {
    let mut rng = Rng(seed ^ (start as u64) << 20);
    let city = rng.pick(&CITIES);
    (start..start + n)
        .flat_map(|i| {
            [
                Message::user(filler(&mut rng, i, city)),
                Message::assistant(answer(&mut rng, i, city)),
            ]
        })
        .collect()
}

fn filler(rng: &mut Rng, i: usize, city: &str) -> String {
    match rng.below(5) {
        0 => "ok, thanks".to_owned(),
        1 => format!("What about option {} on day {}?", rng.below(5), 1 + rng.below(5)),
        2 => format!("Is the museum in {city} open on day {}?", 1 + rng.below(5)),
        3 => format!(
            "Question {i}: how long is the walk from the hotel to stop {}?",
            rng.below(9)
        ),
        _ => "Great! And the train?".to_owned(),
    }
}

fn answer(rng: &mut Rng, i: usize, city: &str) -> String {
    let opening = rng.pick(&["Noted.", "Sure.", "Here is what I found.", "Good question."]);
    format!(
        "{opening} For turn {i}: option {} in {city} costs {} euros and leaves at {}:00; \
         I will keep your rules in mind.",
        rng.below(5),
        90 + rng.below(200),
        6 + rng.below(12)
    )
}

/// Whether `planted` survives in `messages`: its verbatim text is there, and, when it
/// was superseded, never without the mark that says so (where it is still listed).
pub fn survives(planted: &Planted, messages: &[Message]) -> bool {
    let all: String = messages.iter().map(|m| m.text()).collect::<Vec<_>>().join("\n");
    if planted.superseded {
        return !presented_as_current(&planted.text, &all);
    }
    all.contains(&planted.text) || all.contains(&planted.text.replace('\n', "\n  "))
}

/// True when `text` appears without the superseded mark after it (its count may come
/// between).
pub fn presented_as_current(text: &str, all: &str) -> bool {
    all.match_indices(text).any(|(at, _)| {
        let rest = &all[at + text.len()..];
        let rest = rest
            .strip_prefix(" (×")
            .map_or(rest, |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
        let rest = rest.strip_prefix(')').unwrap_or(rest);
        !rest.starts_with(llm_compactor::plan::ledger::SUPERSEDED)
    })
}

/// How many times `text` is listed in `messages` (for duplicates).
pub fn listed(text: &str, messages: &[Message]) -> usize {
    messages.iter().map(|m| m.text().matches(text).count()).sum()
}
