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
use std::sync::Arc;

use foldhash::quality::RandomState;

use super::record::{CompactionRecord, ElisionItem, Record, RepairRecord, synthetic_answer_id};
use crate::conversation::Conversation;
use crate::count::TokenCounter;
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
#[derive(Clone, Debug)]
pub struct Replayer {
    /// Counted by [`Uncounted`] (nothing: a transcript being loaded or checked), or by
    /// the counter a [`crate::session::ContextManager`] gave it, so that the manager's
    /// conversation is this one and each message has a single owner.
    messages: Conversation,
    /// Keyed by a seeded hasher: ids come from files, and SipHash was a measurable part of
    /// every append.
    positions: HashMap<String, usize, RandomState>,
    used: HashSet<String, RandomState>,
}

impl Default for Replayer {
    fn default() -> Self {
        Replayer {
            messages: Conversation::new(Arc::new(Uncounted)),
            positions: HashMap::default(),
            used: HashSet::default(),
        }
    }
}

impl Replayer {
    /// An empty conversation.
    pub fn new() -> Self {
        Replayer::default()
    }

    /// The conversation as it stands.
    pub fn messages(&self) -> &[Message] {
        self.messages.messages()
    }

    /// The conversation, consumed.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages.into_messages()
    }

    /// The conversation with what is known of each message (counted by `counter` once
    /// [`Replayer::count_with`] gave it one, by nothing before).
    pub fn conversation(&self) -> &Conversation {
        &self.messages
    }

    /// Counts every message with `counter`, and each message applied from now on as it
    /// arrives: a loop that keeps its conversation in a replayer (a `ContextManager`, a
    /// proxy's session) then decides on it at the cost of its new messages.
    pub fn count_with(&mut self, counter: Arc<dyn TokenCounter>) {
        self.messages.recount_with(counter);
    }

    /// Stops counting (the counts are dropped).
    pub(crate) fn stop_counting(&mut self) {
        self.messages.recount_with(Arc::new(Uncounted));
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
        let positions = &self.positions;
        self.messages.set_contents(
            items
                .iter()
                .filter_map(|item| Some((*positions.get(&item.id)?, Content::Text(item.stub.clone())))),
        );
    }

    fn compact(&mut self, id: &str, compaction: &CompactionRecord) {
        let Some(&cut) = self.positions.get(&compaction.replaces_through_id) else {
            return;
        };
        let head = &self.messages.messages()[..=cut];
        // The pinned messages (sticky ones, and the answers of a sticky turn) stay, as
        // in the engine's assembly; the leading run of them is not even moved.
        let pins = plan::pinned(head, &plan::Pairs::build(head));
        let kept = pins.iter().take_while(|&&pin| pin).count();
        self.messages.splice_tail(kept, |tail| {
            let mut tail = tail.into_iter();
            let mut rebuilt: Vec<Message> = tail
                .by_ref()
                .take(cut + 1 - kept)
                .zip(&pins[kept..])
                .filter_map(|(m, &pin)| pin.then_some(m))
                .collect();
            rebuilt.push(summary_message(id, &compaction.summary));
            rebuilt.extend(tail);
            rebuilt
        });
        self.reindex(kept);
    }

    fn repair(&mut self, id: &str, repair: &RepairRecord) {
        let dropped: HashSet<&str> = repair.dropped.iter().map(String::as_str).collect();
        // Nothing before the first dropped message or the first message an answer
        // follows changes (that message is rebuilt too: the loop inserts after it).
        let named = repair.dropped.iter().chain(repair.answers.iter().map(|a| &a.after));
        let from = named
            .filter_map(|id| self.positions.get(id).copied())
            .min()
            .unwrap_or(self.messages.len());
        let used = &mut self.used;
        self.messages.splice_tail(from, |tail| {
            let mut rebuilt = Vec::with_capacity(tail.len() + repair.answers.len());
            for message in tail {
                let message_id = message.id.clone();
                if !message_id.as_deref().is_some_and(|m| dropped.contains(m)) {
                    rebuilt.push(message);
                }
                for (k, answer) in repair.answers.iter().enumerate() {
                    if message_id.as_deref() == Some(answer.after.as_str()) {
                        let synthetic = synthetic_answer_id(id, k);
                        used.insert(synthetic.clone());
                        rebuilt.push(
                            Message::tool(answer.tool_call_id.clone(), answer.content.clone()).with_id(synthetic),
                        );
                    }
                }
            }
            rebuilt
        });
        self.reindex(from);
    }

    /// The positions of the messages from `from` on, found again (those before it did
    /// not move; ids of messages that are gone are forgotten).
    fn reindex(&mut self, from: usize) {
        self.positions.retain(|_, &mut at| at < from);
        for (i, message) in self.messages.messages().iter().enumerate().skip(from) {
            if let Some(id) = &message.id {
                self.positions.insert(id.clone(), i);
            }
        }
    }
}

/// The counter of a replayer nobody counts with: every count is 0, and nothing is read.
#[derive(Debug)]
struct Uncounted;

impl TokenCounter for Uncounted {
    fn name(&self) -> &str {
        "uncounted"
    }

    fn count_text(&self, _text: &str) -> usize {
        0
    }

    fn count_message(&self, _message: &Message) -> usize {
        0
    }
}

/// The message a compaction inserts: role user, content the summary, id the compaction
/// line's id, nothing else.
pub fn summary_message(id: &str, summary: &str) -> Message {
    Message::user(summary).with_id(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Usage;
    use crate::transcript::record::{ElisionRecord, SyntheticAnswerItem};

    fn replayer_of(messages: Vec<(&str, Message)>) -> Replayer {
        let mut replayer = Replayer::new();
        for (id, message) in messages {
            replayer.apply(id, &Record::Message(message)).expect("a message line");
        }
        replayer
    }

    fn elision_of(id: &str) -> Record {
        Record::Elision(ElisionRecord {
            items: vec![ElisionItem {
                id: id.to_owned(),
                stub: "[stub]".to_owned(),
            }],
            ..ElisionRecord::default()
        })
    }

    /// Ids of the messages a compaction replaced are gone: a later line that names one
    /// is refused, and does not stub whatever message now sits at its old position.
    #[test]
    fn a_compacted_id_is_unknown_afterwards() {
        let mut replayer = replayer_of(vec![
            ("m0", Message::system("rules").sticky()),
            ("m1", Message::user("one")),
            ("m2", Message::assistant("two")),
            ("m3", Message::user("three")),
            ("m4", Message::assistant("four")),
        ]);
        let compaction = Record::Compaction(CompactionRecord {
            dropped: 2,
            exhausted: false,
            fallback: false,
            receipt: None,
            replaces_through_id: "m2".to_owned(),
            summary: "summary".to_owned(),
            summarizer: None,
            attempts: Vec::new(),
            tokens_after: 0,
            tokens_before: 0,
            usage: Usage::default(),
        });
        replayer.apply("k", &compaction).expect("a compaction line");
        let ids: Vec<_> = replayer.messages().iter().map(|m| m.id.as_deref()).collect();
        assert_eq!(ids, [Some("m0"), Some("k"), Some("m3"), Some("m4")]);
        for gone in ["m1", "m2"] {
            assert!(matches!(
                replayer.apply("e", &elision_of(gone)),
                Err(ReplayError::UnknownId { .. })
            ));
        }
        replayer.apply("e", &elision_of("m4")).expect("a known id");
        assert_eq!(replayer.messages()[3].content, Content::Text("[stub]".to_owned()));
        assert_eq!(replayer.position("m3"), Some(2));
    }

    /// A repair drops an orphan and answers a call that an earlier message made: the
    /// answer follows that message, the orphan's id is gone, later positions move.
    #[test]
    fn a_repair_answers_after_an_earlier_message_and_forgets_what_it_dropped() {
        let call = crate::message::ToolCall::new("c1", "read", "{}");
        let mut replayer = replayer_of(vec![
            ("m0", Message::user("go")),
            ("m1", Message::assistant("").with_tool_calls(vec![call])),
            ("m2", Message::user("next")),
            ("m3", Message::tool("ghost", "orphan")),
            ("m4", Message::user("last")),
        ]);
        let repair = Record::Repair(RepairRecord {
            answers: vec![SyntheticAnswerItem {
                after: "m1".to_owned(),
                content: "no answer".to_owned(),
                tool_call_id: "c1".to_owned(),
            }],
            dropped: vec!["m3".to_owned()],
        });
        replayer.apply("r", &repair).expect("a repair line");
        let ids: Vec<_> = replayer.messages().iter().map(|m| m.id.as_deref()).collect();
        assert_eq!(ids, [Some("m0"), Some("m1"), Some("r.0"), Some("m2"), Some("m4")]);
        assert_eq!(replayer.position("m4"), Some(4));
        assert_eq!(replayer.position("m3"), None);
        assert!(replayer.is_used("r.0"));
    }
}
