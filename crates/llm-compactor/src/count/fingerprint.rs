//! A message's fast fingerprint: every field a counter can see, fed to a `Hasher`.
//!
//! The memo keys its counts by it, and the calibrated counter proves with it that a
//! billed prefix is still the prefix (a seeded 64-bit hash per message, at GB/s, where the
//! SHA-256 of the canonical JSON runs two orders of magnitude slower).

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use crate::message::{Content, Message, Part};

/// Feeds every field a counter can see to `hasher`, each behind a tag, so that distinct
/// messages give distinct streams. The stable id and the message's wire extras are left
/// out: no counter reads them (they never reach the model's tokenizer), and the extras of
/// real trajectories (raw provider responses, duplicated outputs) are often bigger than
/// the content itself, which made hashing them most of a round's cost.
pub(crate) fn hash_message(message: &Message, hasher: &mut impl Hasher) {
    message.role.as_str().hash(hasher);
    match &message.content {
        Content::Absent => hasher.write_u8(0),
        Content::Null => hasher.write_u8(1),
        Content::Text(text) => {
            hasher.write_u8(2);
            text.hash(hasher);
        }
        Content::Parts(parts) => {
            hasher.write_u8(3);
            hasher.write_usize(parts.len());
            for part in parts {
                match part {
                    Part::Text { text, extras } => {
                        hasher.write_u8(0);
                        text.hash(hasher);
                        hash_map(extras, hasher);
                    }
                    Part::Thinking { thinking, extras } => {
                        hasher.write_u8(1);
                        thinking.hash(hasher);
                        hash_map(extras, hasher);
                    }
                    Part::ToolUse { id } => {
                        hasher.write_u8(2);
                        id.hash(hasher);
                    }
                    Part::Other(value) => {
                        hasher.write_u8(3);
                        hash_value(value, hasher);
                    }
                }
            }
        }
    }
    hasher.write_usize(message.tool_calls.len());
    for call in &message.tool_calls {
        call.id.hash(hasher);
        call.name.hash(hasher);
        call.arguments.hash(hasher);
        hash_map(&call.extras, hasher);
    }
    message.tool_call_id.hash(hasher);
    message.name.hash(hasher);
    message.sticky.hash(hasher);
    message.sysprompt.hash(hasher);
    message.depth.hash(hasher);
}

fn hash_map(map: &Map<String, Value>, hasher: &mut impl Hasher) {
    hasher.write_usize(map.len());
    for (key, value) in map {
        key.hash(hasher);
        hash_value(value, hasher);
    }
}

fn hash_value(value: &Value, hasher: &mut impl Hasher) {
    match value {
        Value::Null => hasher.write_u8(0),
        Value::Bool(b) => {
            hasher.write_u8(1);
            b.hash(hasher);
        }
        Value::Number(n) => {
            hasher.write_u8(2);
            n.to_string().hash(hasher);
        }
        Value::String(s) => {
            hasher.write_u8(3);
            s.hash(hasher);
        }
        Value::Array(items) => {
            hasher.write_u8(4);
            hasher.write_usize(items.len());
            for item in items {
                hash_value(item, hasher);
            }
        }
        Value::Object(map) => {
            hasher.write_u8(5);
            hash_map(map, hasher);
        }
    }
}
