//! Budgets at the door in a pass and in the decision before a request: the compactor's
//! [`crate::plan::DoorRules`] applied through the pure rule ([`crate::plan::door()`]).

use super::Compactor;
use super::result::Elision;
use crate::message::Message;
use crate::plan;

impl Compactor {
    /// The door's elisions of `messages` (none when the door is off).
    pub(crate) fn door_elisions(&self, messages: &[Message]) -> Vec<Elision> {
        match &self.config.door {
            Some(rules) => plan::door(messages, rules),
            None => Vec::new(),
        }
    }

    /// True when the door has something to do in `messages`: a pass is due, whatever
    /// the count (53 screenshots can be 33 MB and under the trigger).
    pub(crate) fn door_due(&self, messages: &[Message]) -> bool {
        self.config.door.is_some() && !self.door_elisions(messages).is_empty()
    }
}
