//! Replay: the pure state machine that turns transcript records into the conversation.
//!
//! The same [`Replayer`] validates every line the writer appends and every line the
//! loader reads, so "an unknown id is an error at append time and at load" is one rule in
//! one place, and the live conversation is by construction what replay rebuilds.
//!
//! A compaction cuts at `replaces_through_id`: the sticky messages up to it stay where
//! they were, one summary message (role user, content = the summary, id = the compaction
//! line's id) takes the place of the rest, then everything after the cut follows. An
//! elision replaces the content of each named message with its stub text. A compaction
//! keeps the answers of a sticky turn with it, as the engine does ([`plan::pinned`]). A
//! repair drops the named orphan results and inserts synthetic answers (ids
//! `"<line id>.<k>"`) after the named messages. This is the
//! contract of [`crate::CompactionResult`] (`cut_index`, `elisions`) expressed by id.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use foldhash::quality::RandomState;

use super::record::{CompactionRecord, ElisionItem, Record, RepairRecord, synthetic_answer_id};
use crate::message::{Content, Message};
use crate::plan;

/// A record that cannot apply to the conversation as it stands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// An id that is already used by an earlier line.
    #[error("id {id:?} is already used by an earlier line")]
    DuplicateId {
        /// The id.
        id: String,
    },
    /// A compaction or elision names a message that is not in the conversation (never
    /// was, or an earlier compaction replaced it).
    #[error("{what} names id {id:?}, which is not a message of the conversation")]
    UnknownId {
        /// The id.
        id: String,
        /// Which field named it.
        what: &'static str,
    },
    /// `session-meta` somewhere other than the first line.
    #[error("session-meta may only be the first line")]
    MetaNotFirst,
    /// An elision line that stubs nothing.
    #[error("an elision line must stub at least one message")]
    EmptyElision,
    /// A line whose type is empty or only whitespace.
    #[error("a line's type must not be blank")]
    BlankType,
}

/// The conversation rebuilt so far, with the ids every line has used.
#[derive(Clone, Debug, Default)]
pub struct Replayer {
    messages: Vec<Message>,
    /// Keyed by a seeded hasher: ids come from files, and SipHash was a measurable part of
    /// every append.
    positions: HashMap<String, usize, RandomState>,
    used: HashSet<String, RandomState>,
}

impl Replayer {
    /// An empty conversation.
    pub fn new() -> Self {
        Replayer::default()
    }

    /// The conversation as it stands.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The conversation, consumed.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The position of the message with this id in the conversation.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }

    /// True when some earlier line used this id.
    pub fn is_used(&self, id: &str) -> bool {
        self.used.contains(id)
    }

    /// Checks that a line with this envelope id and record would apply, without applying it.
    ///
    /// # Errors
    /// A reused id, an unknown id, a misplaced `session-meta`, an elision that stubs
    /// nothing, a blank line type.
    pub fn check(&self, id: &str, record: &Record) -> Result<(), ReplayError> {
        if self.used.contains(id) {
            return Err(ReplayError::DuplicateId { id: id.to_owned() });
        }
        match record {
            Record::Meta(_) if !self.used.is_empty() => Err(ReplayError::MetaNotFirst),
            Record::Compaction(compaction) => self.known(&compaction.replaces_through_id, "replaces_through_id"),
            Record::Elision(elision) if elision.items.is_empty() => Err(ReplayError::EmptyElision),
            Record::Elision(elision) => elision
                .items
                .iter()
                .try_for_each(|item| self.known(&item.id, "elision item")),
            Record::Repair(repair) => {
                repair
                    .dropped
                    .iter()
                    .try_for_each(|dropped| self.known(dropped, "repair dropped"))?;
                repair
                    .answers
                    .iter()
                    .try_for_each(|answer| self.known(&answer.after, "repair answer after"))?;
                for k in 0..repair.answers.len() {
                    let synthetic = synthetic_answer_id(id, k);
                    if self.used.contains(&synthetic) {
                        return Err(ReplayError::DuplicateId { id: synthetic });
                    }
                }
                Ok(())
            }
            Record::Unknown { kind, .. } if kind.trim().is_empty() => Err(ReplayError::BlankType),
            _ => Ok(()),
        }
    }

    fn known(&self, id: &str, what: &'static str) -> Result<(), ReplayError> {
        if self.positions.contains_key(id) {
            Ok(())
        } else {
            Err(ReplayError::UnknownId {
                id: id.to_owned(),
                what,
            })
        }
    }

    /// Applies one line. Nothing changes when it is refused.
    ///
    /// # Errors
    /// As [`Replayer::check`].
    pub fn apply(&mut self, id: &str, record: &Record) -> Result<(), ReplayError> {
        self.check(id, record)?;
        self.apply_checked(id.to_owned(), Cow::Borrowed(record));
        Ok(())
    }

    /// [`Replayer::apply`] of a record the caller gives up: a message is moved into the
    /// conversation instead of copied (the session writer's path: each appended message
    /// was copied once more before).
    ///
    /// # Errors
    /// As [`Replayer::check`]; nothing changes then.
    pub fn apply_owned(&mut self, id: String, record: Record) -> Result<(), ReplayError> {
        self.check(&id, &record)?;
        self.apply_checked(id, Cow::Owned(record));
        Ok(())
    }

    fn apply_checked(&mut self, id: String, record: Cow<'_, Record>) {
        match record {
            Cow::Owned(Record::Message(message)) => self.push_message(&id, message),
            Cow::Borrowed(Record::Message(message)) => self.push_message(&id, message.clone()),
            Cow::Owned(other) => self.apply_line(&id, &other),
            Cow::Borrowed(other) => self.apply_line(&id, other),
        }
        self.used.insert(id);
    }

    fn push_message(&mut self, id: &str, mut message: Message) {
        if message.id.as_deref() != Some(id) {
            message.id = Some(id.to_owned());
        }
        self.positions.insert(id.to_owned(), self.messages.len());
        self.messages.push(message);
    }

    /// A line that is not a message.
    fn apply_line(&mut self, id: &str, record: &Record) {
        match record {
            Record::Elision(elision) => self.elide(&elision.items),
            Record::Compaction(compaction) => self.compact(id, compaction),
            Record::Repair(repair) => self.repair(id, repair),
            Record::Meta(_) | Record::Unknown { .. } | Record::Message(_) => {}
        }
    }

    fn elide(&mut self, items: &[ElisionItem]) {
        for item in items {
            if let Some(&at) = self.positions.get(&item.id) {
                self.messages[at].content = Content::Text(item.stub.clone());
            }
        }
    }

    fn compact(&mut self, id: &str, compaction: &CompactionRecord) {
        let Some(&cut) = self.positions.get(&compaction.replaces_through_id) else {
            return;
        };
        let rest = self.messages.split_off(cut + 1);
        let head = std::mem::take(&mut self.messages);
        // The pinned messages (sticky ones, and the answers of a sticky turn) stay, as
        // in the engine's assembly.
        let pins = plan::pinned(&head, &plan::Pairs::build(&head));
        let mut rebuilt: Vec<Message> = head
            .into_iter()
            .zip(pins)
            .filter_map(|(m, pin)| pin.then_some(m))
            .collect();
        rebuilt.push(summary_message(id, &compaction.summary));
        rebuilt.extend(rest);
        self.messages = rebuilt;
        self.reindex();
    }

    fn repair(&mut self, id: &str, repair: &RepairRecord) {
        let dropped: HashSet<&str> = repair.dropped.iter().map(String::as_str).collect();
        let mut rebuilt = Vec::with_capacity(self.messages.len() + repair.answers.len());
        for message in std::mem::take(&mut self.messages) {
            let message_id = message.id.clone();
            if !message_id.as_deref().is_some_and(|m| dropped.contains(m)) {
                rebuilt.push(message);
            }
            for (k, answer) in repair.answers.iter().enumerate() {
                if message_id.as_deref() == Some(answer.after.as_str()) {
                    let synthetic = synthetic_answer_id(id, k);
                    self.used.insert(synthetic.clone());
                    rebuilt.push(Message::tool(answer.tool_call_id.clone(), answer.content.clone()).with_id(synthetic));
                }
            }
        }
        self.messages = rebuilt;
        self.reindex();
    }

    fn reindex(&mut self) {
        self.positions = self
            .messages
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.id.clone().map(|id| (id, i)))
            .collect();
    }
}

/// The message a compaction inserts: role user, content the summary, id the compaction
/// line's id, nothing else.
pub fn summary_message(id: &str, summary: &str) -> Message {
    Message::user(summary).with_id(id)
}
