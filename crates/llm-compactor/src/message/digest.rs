//! Message and conversation digests.
//!
//! A message's digest is the SHA-256 (lowercase hex) of the canonical JSON of
//! `{role, content, sticky, sysprompt, tool_calls?, tool_call_id?, depth?}`: what the
//! model sees and how the compactor treats it, and nothing else (not the id, not the
//! wire extras). A conversation's digest is the SHA-256 of its messages' digests joined
//! by newlines. The calibrated token counter uses it to know that a billed prefix is
//! still the prefix it was.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::canonical::canonical_json;
use super::model::Message;

/// The canonical JSON object a message's digest is taken over.
pub fn digest_value(message: &Message) -> Value {
    let mut object = Map::new();
    object.insert("role".into(), Value::String(message.role.as_str().into()));
    object.insert("content".into(), message.content.to_value());
    object.insert("sticky".into(), Value::Bool(message.sticky));
    object.insert("sysprompt".into(), Value::Bool(message.sysprompt));
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                let mut c = Map::new();
                c.insert("id".into(), Value::String(call.id.clone()));
                c.insert("name".into(), Value::String(call.name.clone()));
                c.insert("arguments".into(), Value::String(call.arguments.clone()));
                Value::Object(c)
            })
            .collect();
        object.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &message.tool_call_id {
        object.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    if let Some(depth) = message.depth {
        object.insert("depth".into(), Value::from(depth));
    }
    Value::Object(object)
}

/// SHA-256 hex of a message's canonical JSON.
///
/// ```
/// use llm_compactor::message::{message_digest, Message};
/// let a = message_digest(&Message::user("hi"));
/// assert_eq!(a.len(), 64);
/// assert_eq!(a, message_digest(&Message::user("hi").with_id("ignored")));
/// assert_ne!(a, message_digest(&Message::user("hi!")));
/// ```
pub fn message_digest(message: &Message) -> String {
    hex::encode(Sha256::digest(canonical_json(&digest_value(message)).as_bytes()))
}

/// SHA-256 hex of the newline-joined digests of `messages`.
pub fn conversation_digest(messages: &[Message]) -> String {
    let joined: Vec<String> = messages.iter().map(message_digest).collect();
    hex::encode(Sha256::digest(joined.join("\n").as_bytes()))
}
