//! `none`: no context management at all.
//!
//! The baseline every ratio is taken against. The conversation only grows, every request
//! shares all but its newest messages with the previous one (the best cache behaviour
//! there is), and a long trajectory runs over the window: those rounds are counted, and
//! in real life the provider would have rejected them.

use crate::message::Message;
use crate::simulate::SimError;
use crate::simulate::strategy::{Env, Step, Strategy};

/// No management: the conversation as the agent lived it.
#[derive(Clone, Debug, Default)]
pub struct NoManagement {
    conversation: Vec<Message>,
}

impl Strategy for NoManagement {
    fn name(&self) -> &str {
        "none"
    }

    fn prepare(&mut self, appended: &[Message], _env: &Env<'_>) -> Result<Step, SimError> {
        self.conversation.extend_from_slice(appended);
        Ok(Step::default())
    }

    fn conversation(&self) -> &[Message] {
        &self.conversation
    }
}
