//! `compactor eval --instructions`: planting instructions in a conversation, and scoring
//! what a compacted conversation kept of them (pure: no I/O).
//!
//! Eight user messages are inserted at fixed shares of the conversation (issue 41's
//! complaint: rules and instructions are gone after compaction): an injected
//! `<system-reminder>` instruction file with a rule, a constraint with a value that a
//! correction later replaces, a fact, the task and where it stands, a preference, and a
//! second rule said three times. Each goes in at a turn boundary (after a user or tool
//! message, before the assistant's next message), after an acknowledgement of the
//! assistant's, so roles keep alternating and no tool call is parted from its result.
//! The values (numbers, the goal) vary with a seed (the conversation's name), the same
//! seed giving the same conversation.
//!
//! A planted instruction survives when its verbatim text is in the result (a pinned block
//! also as the ledger renders it, its newlines indented); the replaced constraint
//! survives when it is never presented as current (see [`presented_as_current`]).

use llm_compactor::plan::SUMMARY_HEADER;
use llm_compactor::plan::ledger::SUPERSEDED;
use llm_compactor::{Message, Role};
use serde::Serialize;

/// What a planted instruction is, for survival by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A rule ("never …"); one of them said three times.
    Rule,
    /// A constraint with a value; the replaced one scores as never presented as current,
    /// its correction as present.
    Constraint,
    /// A fact about the user.
    Fact,
    /// The task's goal and where it stands.
    Task,
    /// A preference.
    Preference,
    /// An injected instruction file (a `<system-reminder>` block).
    Reminder,
}

impl Kind {
    /// Every kind, in report order.
    pub const ALL: [Kind; 6] = [
        Kind::Rule,
        Kind::Constraint,
        Kind::Fact,
        Kind::Task,
        Kind::Preference,
        Kind::Reminder,
    ];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Rule => "rule",
            Kind::Constraint => "constraint",
            Kind::Fact => "fact",
            Kind::Task => "task",
            Kind::Preference => "preference",
            Kind::Reminder => "reminder",
        }
    }
}

/// One planted instruction.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Planted {
    /// Its type.
    pub kind: Kind,
    /// Its verbatim text.
    pub text: String,
    /// True when a later planted message replaces it (it must then never be presented as
    /// current); `replaced_by` is that message.
    pub superseded: bool,
    /// The text of the message that replaces it, when superseded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
}

/// The assistant's acknowledgement inserted before each planted user message.
pub const ACK: &str = "Understood, I will keep that in mind.";

/// The 64-bit FNV-1a hash of `name`: the seed of a conversation's planted values.
pub fn seed_of(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

const GOALS: [&str; 4] = [
    "get every test passing and report back",
    "finish the change and write it up",
    "sort out the customer's request end to end",
    "fix the reported problem without side effects",
];
const ZONES: [&str; 4] = ["Lisbon", "Tokyo", "Chicago", "Nairobi"];

/// The planted messages for `seed`, in the order they are inserted, each with the share of
/// the conversation (in thousandths) before which it goes, and what it plants.
fn messages_for(seed: u64) -> (Vec<(usize, String)>, Vec<Planted>) {
    let pick = |n: u64, salt: u64| ((seed ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 33) % n;
    let old_cap = 150 + pick(100, 1);
    let new_cap = 700 + pick(300, 2);
    let digits = 1000 + pick(9000, 3);
    let goal = GOALS[pick(GOALS.len() as u64, 4) as usize];
    let zone = ZONES[pick(ZONES.len() as u64, 5) as usize];
    let reminder = "<system-reminder>\nContents of /home/user/project/CLAUDE.md (project instructions):\n\
                    - Never commit credentials or API keys.\n\
                    - Run the full test suite before calling a change done.\n</system-reminder>"
        .to_owned();
    let rule = "Rule: never delete a file or a record without asking me first.".to_owned();
    let repeated = "Remember: never run anything with sudo.".to_owned();
    let constraint = format!("Constraint: the budget cap is ${old_cap} for this whole task.");
    let correction = format!("Correction: the budget cap is now ${new_cap}, it replaces the ${old_cap} one.");
    let fact = format!("Fact: my account number ends in {digits} and I work from {zone}.");
    let task = format!("Task: the goal is to {goal}; the first step is done, the rest is not yet.");
    let preference = "Preference: keep answers short, and list options as bullet points.".to_owned();
    let inserted = vec![
        (50, format!("{reminder}\n{rule}")),
        (80, constraint.clone()),
        (100, repeated.clone()),
        (140, fact.clone()),
        (180, task.clone()),
        (220, preference.clone()),
        (280, repeated.clone()),
        (340, correction.clone()),
        (400, repeated.clone()),
    ];
    let plant = |kind, text: &str| Planted {
        kind,
        text: text.to_owned(),
        superseded: false,
        replaced_by: None,
    };
    let planted = vec![
        plant(Kind::Reminder, &reminder),
        plant(Kind::Rule, &rule),
        plant(Kind::Rule, &repeated),
        Planted {
            superseded: true,
            replaced_by: Some(correction.clone()),
            ..plant(Kind::Constraint, &constraint)
        },
        plant(Kind::Constraint, &correction),
        plant(Kind::Fact, &fact),
        plant(Kind::Task, &task),
        plant(Kind::Preference, &preference),
    ];
    (inserted, planted)
}

/// True when a planted pair may go in before `messages[i]`: the assistant's next message
/// after a user or tool message (never between a tool call and its result).
fn is_boundary(messages: &[Message], i: usize) -> bool {
    i > 0
        && messages.get(i).is_some_and(|m| m.role == Role::Assistant)
        && matches!(messages[i - 1].role, Role::User | Role::Tool)
        && !messages[i - 1].is_sticky()
}

/// The turn boundaries of `messages` (see [`is_boundary`]), and its end when its last
/// message is a user or tool message.
pub fn boundaries(messages: &[Message]) -> Vec<usize> {
    let mut out: Vec<usize> = (1..messages.len()).filter(|&i| is_boundary(messages, i)).collect();
    if messages
        .last()
        .is_some_and(|m| matches!(m.role, Role::User | Role::Tool) && !m.is_sticky())
    {
        out.push(messages.len());
    }
    out
}

/// The first boundary at or after `share` thousandths of `len`, else the last one.
pub fn boundary_at(boundaries: &[usize], len: usize, share: usize) -> Option<usize> {
    let at = len * share / 1000;
    boundaries
        .iter()
        .copied()
        .find(|&b| b >= at)
        .or_else(|| boundaries.last().copied())
}

/// A planted conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Planting {
    /// The conversation with the planted messages in.
    pub messages: Vec<Message>,
    /// What was planted.
    pub planted: Vec<Planted>,
    /// The index of the last planted message in `messages`.
    pub last: usize,
}

/// `messages` with the instructions of `seed` planted; `None` when the conversation has
/// no turn boundary (no user or tool message outside the sticky prefix).
pub fn plant(messages: &[Message], seed: u64) -> Option<Planting> {
    let (inserted, planted) = messages_for(seed);
    let bounds = boundaries(messages);
    let mut at: Vec<(usize, &String)> = Vec::new();
    for (share, text) in &inserted {
        at.push((boundary_at(&bounds, messages.len(), *share)?, text));
    }
    let mut out = Vec::with_capacity(messages.len() + 2 * at.len());
    let mut next = at.iter().peekable();
    let mut last = 0;
    for i in 0..=messages.len() {
        while let Some((_, text)) = next.next_if(|(b, _)| *b == i) {
            out.push(Message::assistant(ACK));
            last = out.len();
            out.push(Message::user(text.as_str()));
        }
        if let Some(m) = messages.get(i) {
            out.push(m.clone());
        }
    }
    Some(Planting {
        messages: out,
        planted,
        last,
    })
}

/// True for a summary message (its text starts with the summary's header).
fn is_summary(message: &Message) -> bool {
    message.text().starts_with(SUMMARY_HEADER)
}

/// Where `text` (or its rendering in the ledger, newlines indented) occurs in `hay`.
fn occurrences<'a>(hay: &'a str, text: &'a str) -> Vec<(usize, usize)> {
    let indented = text.replace('\n', "\n  ");
    let mut found: Vec<(usize, usize)> = hay.match_indices(text).map(|(at, t)| (at, t.len())).collect();
    if indented != text {
        found.extend(hay.match_indices(indented.as_str()).map(|(at, t)| (at, t.len())));
    }
    found
}

/// True when `text` occurs in `hay` without the superseded mark after it (its repeat
/// count may come between).
fn unmarked(hay: &str, text: &str) -> bool {
    occurrences(hay, text).into_iter().any(|(at, len)| {
        let rest = &hay[at + len..];
        let rest = rest
            .strip_prefix(" (×")
            .map_or(rest, |r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
        let rest = rest.strip_prefix(')').unwrap_or(rest);
        !rest.starts_with(SUPERSEDED)
    })
}

/// True when `planted` (superseded) is presented as current in `messages`: a summary
/// lists it without its superseded mark, or a message of the conversation itself holds
/// it with no later message (nor the rest of the same one) holding its replacement.
pub fn presented_as_current(planted: &Planted, messages: &[Message]) -> bool {
    let replacement = planted.replaced_by.as_deref().unwrap_or_default();
    messages.iter().enumerate().any(|(i, m)| {
        let text = m.text();
        if is_summary(m) {
            return unmarked(&text, &planted.text);
        }
        let Some(at) = text.find(&planted.text) else {
            return false;
        };
        let later_here = !replacement.is_empty() && text[at..].contains(replacement);
        let later = !replacement.is_empty() && messages[i + 1..].iter().any(|n| n.text().contains(replacement));
        !(later_here || later)
    })
}

/// Whether `planted` survives in `messages`: present verbatim, or, when superseded, never
/// presented as current.
pub fn survives(planted: &Planted, messages: &[Message]) -> bool {
    if planted.superseded {
        return !presented_as_current(planted, messages);
    }
    messages
        .iter()
        .any(|m| !occurrences(&m.text(), &planted.text).is_empty())
}

/// True when a summary of `messages` lists `planted` more than once.
pub fn duplicated(planted: &Planted, messages: &[Message]) -> bool {
    let listed: usize = messages
        .iter()
        .filter(|m| is_summary(m))
        .map(|m| occurrences(&m.text(), &planted.text).len())
        .sum();
    listed > 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> Vec<Message> {
        let mut m = vec![Message::system("agent"), Message::user("Fix the bug.")];
        for i in 0..20 {
            let mut call = Message::assistant("");
            call.tool_calls
                .push(llm_compactor::ToolCall::new(format!("c{i}"), "bash", "{}"));
            m.push(call);
            m.push(Message::tool(format!("c{i}"), format!("output {i}")));
        }
        m
    }

    #[test]
    fn planting_keeps_calls_with_their_results_and_roles_alternating() {
        let messages = agent();
        let Planting {
            messages: planted,
            planted: list,
            last,
        } = plant(&messages, 7).unwrap();
        assert_eq!(planted[last].text(), "Remember: never run anything with sudo.");
        assert_eq!(planted.len(), messages.len() + 18);
        assert_eq!(list.len(), 8);
        for (i, m) in planted.iter().enumerate() {
            if m.role == Role::Tool {
                assert!(!planted[i - 1].tool_calls.is_empty() || planted[i - 1].role == Role::Tool);
            }
            if m.text() == ACK {
                assert!(matches!(planted[i - 1].role, Role::User | Role::Tool));
                assert_eq!(planted[i + 1].role, Role::User);
            }
        }
        // Every planted text is in the planted conversation; the same seed, the same bytes.
        for p in &list {
            assert!(survives(p, &planted), "{p:?}");
        }
        assert_eq!(plant(&messages, 7).unwrap().messages, planted);
        assert_ne!(plant(&messages, 8).unwrap().planted, list);
    }

    #[test]
    fn a_conversation_without_a_boundary_is_not_planted() {
        assert!(plant(&[Message::system("s")], 1).is_none());
        // A lone task message: planted at its end.
        let planting = plant(&[Message::system("s"), Message::user("task")], 1).unwrap();
        assert_eq!(planting.messages.len(), 2 + 18);
        assert_eq!(planting.last, 19);
    }

    #[test]
    fn a_replaced_value_is_current_only_without_its_mark_or_its_replacement() {
        let list = plant(&agent(), 3).unwrap().planted;
        let old = list.iter().find(|p| p.superseded).unwrap();
        let new = old.replaced_by.clone().unwrap();
        let summary = |body: String| Message::user(format!("{SUMMARY_HEADER}\n{body}"));
        // Listed plainly in a summary: current (the complaint).
        let plain = [summary(format!("- {}\n- {new}", old.text))];
        assert!(presented_as_current(old, &plain));
        // Marked (a count between is fine): not current.
        let marked = [summary(format!("- {} (×2){SUPERSEDED}\n- {new}", old.text))];
        assert!(!presented_as_current(old, &marked));
        assert!(survives(old, &marked));
        // In the conversation itself, followed by its correction: not current; alone: current.
        let raw = [Message::user(old.text.clone()), Message::user(new.clone())];
        assert!(!presented_as_current(old, &raw));
        assert!(presented_as_current(old, &raw[..1]));
        // Dropped entirely: not presented at all.
        assert!(survives(old, &[]));
    }

    #[test]
    fn a_pinned_block_survives_as_the_ledger_renders_it_and_duplicates_are_counted() {
        let list = plant(&agent(), 3).unwrap().planted;
        let reminder = list.iter().find(|p| p.kind == Kind::Reminder).unwrap();
        let rendered = reminder.text.replace('\n', "\n  ");
        let once = [Message::user(format!("{SUMMARY_HEADER}\n- {rendered}"))];
        assert!(survives(reminder, &once));
        assert!(!duplicated(reminder, &once));
        let twice = [Message::user(format!("{SUMMARY_HEADER}\n- {rendered}\n- {rendered}"))];
        assert!(duplicated(reminder, &twice));
        assert!(!survives(reminder, &[Message::user("- Never commit credentials")]));
    }
}
