//! mini-swe-agent trajectories (`*.traj.json`).
//!
//! `{info, messages, trajectory_format, instance_id}`: the messages are OpenAI-shaped
//! (read by [`super::openai`]) with extra keys (`extra`, `provider_specific_fields`,
//! `reasoning_content`, `function_call: null`) that travel in [`Message::extras`], and a
//! closing bookkeeping message of role `exit` that stays a [`crate::message::Role::Other`].
//! Older trajectories speak through user messages rather than tool messages, so a tool
//! message without `tool_call_id` is accepted here.

use serde_json::Value;

use super::wire::{fill_messages, kind_of, take_messages};
use super::{FormatError, openai};
use crate::message::Message;

/// The `trajectory_format` written into a fresh trajectory.
pub(super) const TRAJECTORY_FORMAT: &str = "mini-swe-agent-1.1";

/// Imports a trajectory object.
pub(super) fn import_document(value: Value, source_name: &str) -> Result<(Vec<Message>, Value), FormatError> {
    let Value::Object(object) = value else {
        return Err(FormatError::whole(
            source_name,
            format!(
                "a mini-swe-agent trajectory is an object with `messages`, not {}",
                kind_of(&value)
            ),
        ));
    };
    let (items, envelope) = take_messages(object, source_name, "a mini-swe-agent trajectory")?;
    let messages = openai::import_messages(items, source_name, false)?;
    Ok((messages, Value::Object(envelope)))
}

/// Exports a trajectory object.
pub(super) fn export_document(messages: &[Message], envelope: &Value) -> Value {
    let items = messages.iter().map(openai::export_message).collect();
    Value::Object(fill_messages(envelope, items))
}
