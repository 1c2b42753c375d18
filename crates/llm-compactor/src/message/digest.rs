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

use super::canonical::write_canonical;
use super::content::Content;
use super::json_string::write_json_string;
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
    // Rendered into one buffer and hashed in one pass (serde_json writes a string in many
    // small pieces, each escape apart).
    let text = match &message.content {
        Content::Text(text) => text.len(),
        _ => 0,
    };
    let calls: usize = message.tool_calls.iter().map(|call| call.arguments.len()).sum();
    let mut json = Vec::with_capacity(text + calls + 128);
    write_digest_json(message, &mut json);
    hex::encode(Sha256::digest(&json))
}

/// Writes `canonical_json(&digest_value(message))` without building either: the keys of
/// [`digest_value`]'s object in sorted order (`content`, `depth`, `role`, `sticky`,
/// `sysprompt`, `tool_call_id`, `tool_calls`; a call's `arguments`, `id`, `name`), each
/// value as [`write_canonical`] writes it. A message's digest is taken on every append
/// (the chained prefix digest the calibrated counter anchors on), and building the two
/// values copied the whole message twice before rendering it; `tests/message_digest.rs`
/// checks the bytes against the built values.
fn write_digest_json(message: &Message, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"content\":");
    match &message.content {
        Content::Text(text) => write_json_string(out, text),
        content => write_canonical(&content.to_value(), out),
    }
    if let Some(depth) = message.depth {
        out.extend_from_slice(b",\"depth\":");
        out.extend_from_slice(depth.to_string().as_bytes());
    }
    out.extend_from_slice(b",\"role\":");
    write_json_string(out, message.role.as_str());
    out.extend_from_slice(if message.sticky {
        b",\"sticky\":true"
    } else {
        b",\"sticky\":false"
    });
    out.extend_from_slice(if message.sysprompt {
        b",\"sysprompt\":true"
    } else {
        b",\"sysprompt\":false"
    });
    if let Some(id) = &message.tool_call_id {
        out.extend_from_slice(b",\"tool_call_id\":");
        write_json_string(out, id);
    }
    if !message.tool_calls.is_empty() {
        out.extend_from_slice(b",\"tool_calls\":[");
        for (i, call) in message.tool_calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"arguments\":");
            write_json_string(out, &call.arguments);
            out.extend_from_slice(b",\"id\":");
            write_json_string(out, &call.id);
            out.extend_from_slice(b",\"name\":");
            write_json_string(out, &call.name);
            out.push(b'}');
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// SHA-256 hex of the newline-joined digests of `messages`.
pub fn conversation_digest(messages: &[Message]) -> String {
    let joined: Vec<String> = messages.iter().map(message_digest).collect();
    hex::encode(Sha256::digest(joined.join("\n").as_bytes()))
}
