//! [`Pairs`]: which assistant turn asked for which tool result.
//!
//! A tool result and the assistant turn whose `tool_calls` asked for it must live or die
//! together: a result without its asking turn, or an asking turn whose answers are gone,
//! is a conversation providers reject ("tool_call_id did not match a preceding
//! tool_calls"). Every rule that moves a boundary consults this index.

use std::collections::HashMap;

use crate::message::{Message, ToolCall};

/// The asking turn of every tool result and the answers of every asking turn.
///
/// A result is joined to the NEAREST preceding assistant turn that has a call with its
/// `tool_call_id` (so a provider that reuses ids across turns still pairs correctly). A
/// result with no such turn is an orphan: it has no asker and no call identity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairs {
    asker: Vec<Option<(usize, usize)>>,
    last_answer: Vec<Option<usize>>,
}

impl Pairs {
    /// Indexes a conversation in one pass.
    pub fn build(messages: &[Message]) -> Pairs {
        Pairs::build_from(messages.iter())
    }

    /// [`Pairs::build`] of a conversation given as message references (a candidate
    /// output viewed without being assembled).
    pub(crate) fn build_from<'a>(messages: impl ExactSizeIterator<Item = &'a Message>) -> Pairs {
        let mut pairs = Pairs {
            asker: vec![None; messages.len()],
            last_answer: vec![None; messages.len()],
        };
        // foldhash: ids are hashed once per call and result, and SipHash was a visible
        // part of a hard trim's time; nothing iterates the map, so the seed is irrelevant.
        let mut open: HashMap<&str, (usize, usize), foldhash::fast::RandomState> = HashMap::default();
        for (i, message) in messages.enumerate() {
            pairs.join(i, message, &mut open, |call| call.id.as_str());
        }
        pairs
    }

    /// Message `i`'s step of the joining (`asker` and `last_answer` already have its
    /// slot): its calls open under their ids, and a result joins the nearest open call
    /// with its id. `key` gives the map's key of a call's id: borrowed when the whole
    /// conversation is at hand, owned when it grows message by message.
    fn join<'m, K>(
        &mut self,
        i: usize,
        message: &'m Message,
        open: &mut HashMap<K, (usize, usize), impl std::hash::BuildHasher>,
        key: impl Fn(&'m ToolCall) -> K,
    ) where
        K: std::borrow::Borrow<str> + std::hash::Hash + Eq,
    {
        for (position, call) in message.tool_calls.iter().enumerate() {
            open.insert(key(call), (i, position));
        }
        if message.is_tool_result()
            && let Some(id) = message.tool_call_id.as_deref()
            && let Some(&(turn, position)) = open.get(id)
            && turn < i
        {
            self.asker[i] = Some((turn, position));
            self.last_answer[turn] = Some(i);
        }
    }

    /// The index of the assistant turn that asked for the result at `index`.
    pub fn asker(&self, index: usize) -> Option<usize> {
        self.asker.get(index).copied().flatten().map(|(turn, _)| turn)
    }

    /// The call (in its asking turn) that the result at `index` answers.
    pub fn call<'a>(&self, messages: &'a [Message], index: usize) -> Option<&'a ToolCall> {
        let (turn, position) = self.asker.get(index).copied().flatten()?;
        messages.get(turn)?.tool_calls.get(position)
    }

    /// The index of the last result answering the turn at `index`, if any.
    pub fn last_answer(&self, index: usize) -> Option<usize> {
        self.last_answer.get(index).copied().flatten()
    }
}

/// [`Pairs`] of a growing conversation, extended one message at a time (the same
/// joins [`Pairs::build`] makes: nearest preceding asking turn).
#[derive(Clone, Debug, Default)]
pub(crate) struct PairsBuilder {
    pairs: Pairs,
    /// Each call id's newest asking turn and position.
    open: HashMap<String, (usize, usize), foldhash::fast::FixedState>,
}

impl PairsBuilder {
    /// Indexes the next message.
    pub(crate) fn push(&mut self, message: &Message) {
        let i = self.pairs.asker.len();
        self.pairs.asker.push(None);
        self.pairs.last_answer.push(None);
        self.pairs.join(i, message, &mut self.open, |call| call.id.clone());
    }

    /// The pairs of the messages pushed so far.
    pub(crate) fn pairs(&self) -> &Pairs {
        &self.pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_joins_as_build_does() {
        use crate::message::ToolCall;
        let messages = vec![
            Message::assistant("")
                .with_tool_calls(vec![ToolCall::new("a", "ls", "{}"), ToolCall::new("b", "ls", "[]")]),
            Message::tool("b", "y"),
            Message::tool("zz", "orphan"),
            Message::assistant("").with_tool_calls(vec![ToolCall::new("a", "cat", "{}")]),
            Message::tool("a", "x"),
        ];
        let mut builder = PairsBuilder::default();
        for m in &messages {
            builder.push(m);
        }
        assert_eq!(builder.pairs(), &Pairs::build(&messages));
        assert_eq!(builder.pairs().asker(4), Some(3));
    }
}
