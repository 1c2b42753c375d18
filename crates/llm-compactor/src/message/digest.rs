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
    lower_hex(&message_digest_bytes(message))
}

/// [`message_digest`] as its 64 ASCII hex bytes, without allocating: what the chained
/// prefix digest feeds its SHA-256 state on every append.
pub(crate) fn message_digest_hex(message: &Message) -> [u8; 64] {
    hex_bytes(&message_digest_bytes(message))
}

/// The SHA-256 of a message's canonical JSON. Rendered into a buffer kept per thread and
/// hashed in one pass (serde_json writes a string in many small pieces, each escape
/// apart); the buffer is reused, so a digest allocates nothing once the thread has seen a
/// message of that size (profiled: growing a fresh buffer and freeing it was a tenth of
/// a digest).
fn message_digest_bytes(message: &Message) -> [u8; 32] {
    /// A buffer grown past this (one huge message) is let go after use.
    const KEEP_BYTES: usize = 1 << 20;
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let digest_of = |json: &mut Vec<u8>| {
        json.clear();
        write_digest_json(message, json);
        let digest: [u8; 32] = Sha256::digest(&json[..]).into();
        if json.capacity() > KEEP_BYTES {
            *json = Vec::new();
        }
        digest
    };
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut json) => digest_of(&mut json),
        // Re-entered on this thread (not possible today): a buffer of its own.
        Err(_) => digest_of(&mut Vec::new()),
    })
}

/// `bytes` in lowercase hex.
pub(crate) fn lower_hex(bytes: &[u8; 32]) -> String {
    hex_bytes(bytes).iter().map(|&b| char::from(b)).collect()
}

/// `bytes` in lowercase hex, as ASCII bytes: a table lookup per nibble (the `hex` crate
/// goes through a `char` iterator, which profiled at a tenth of a message digest).
fn hex_bytes(bytes: &[u8; 32]) -> [u8; 64] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 64];
    for (pair, byte) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
    out
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
    let mut joined = Sha256::new();
    for (i, message) in messages.iter().enumerate() {
        if i > 0 {
            joined.update(b"\n");
        }
        joined.update(message_digest_hex(message));
    }
    lower_hex(&joined.finalize().into())
}
