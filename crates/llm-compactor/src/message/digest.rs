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
fn write_digest_json(message: &Message, out: &mut impl std::io::Write) {
    let _ = write_digest_fields(message, out);
}

fn write_digest_fields(message: &Message, out: &mut impl std::io::Write) -> std::io::Result<()> {
    let string =
        |out: &mut dyn std::io::Write, text: &str| serde_json::to_writer(out, text).map_err(std::io::Error::from);
    out.write_all(b"{\"content\":")?;
    match &message.content {
        Content::Text(text) => string(out, text)?,
        content => write_canonical(&content.to_value(), out),
    }
    if let Some(depth) = message.depth {
        write!(out, ",\"depth\":{depth}")?;
    }
    out.write_all(b",\"role\":")?;
    string(out, message.role.as_str())?;
    write!(
        out,
        ",\"sticky\":{},\"sysprompt\":{}",
        message.sticky, message.sysprompt
    )?;
    if let Some(id) = &message.tool_call_id {
        out.write_all(b",\"tool_call_id\":")?;
        string(out, id)?;
    }
    if !message.tool_calls.is_empty() {
        out.write_all(b",\"tool_calls\":[")?;
        for (i, call) in message.tool_calls.iter().enumerate() {
            out.write_all(if i == 0 {
                b"{\"arguments\":"
            } else {
                b",{\"arguments\":"
            })?;
            string(out, &call.arguments)?;
            out.write_all(b",\"id\":")?;
            string(out, &call.id)?;
            out.write_all(b",\"name\":")?;
            string(out, &call.name)?;
            out.write_all(b"}")?;
        }
        out.write_all(b"]")?;
    }
    out.write_all(b"}")
}

/// SHA-256 hex of the newline-joined digests of `messages`.
pub fn conversation_digest(messages: &[Message]) -> String {
    let joined: Vec<String> = messages.iter().map(message_digest).collect();
    hex::encode(Sha256::digest(joined.join("\n").as_bytes()))
}
