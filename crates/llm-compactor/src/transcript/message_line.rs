//! A message's transcript line, written by hand.
//!
//! Why: every round of an agent loop appends its new messages, and serde_json's writer
//! spent most of that append escaping the content byte by byte. The line here is the
//! same bytes as the derived serialization ([`crate::message::Message`]'s native form
//! inside the sorted envelope: `id`, `payload`, `ts`, `type`, `v`), with the strings
//! escaped eight bytes at a time, extras and content parts included (a mini-swe-agent
//! message carries as much in its `extra` object as in its content).
//! `tests/message_digest.rs` compares the two on arbitrary messages, so a transcript
//! does not depend on which writer wrote it.

use super::record::VERSION;
use crate::message::json_string::{write_json_array, write_json_object, write_json_string, write_json_value};
use crate::message::{Content, Message, Part, ToolCall};

/// Appends the line (newline included) of `message`, whose id is `id`, to `out`.
pub(crate) fn write_message_line(out: &mut Vec<u8>, id: &str, ts: &str, kind: &str, message: &Message) {
    out.extend_from_slice(b"{\"id\":");
    write_json_string(out, id);
    out.extend_from_slice(b",\"payload\":");
    write_payload(out, message);
    out.extend_from_slice(b",\"ts\":");
    write_json_string(out, ts);
    out.extend_from_slice(b",\"type\":");
    write_json_string(out, kind);
    out.extend_from_slice(b",\"v\":");
    out.extend_from_slice(VERSION.to_string().as_bytes());
    out.extend_from_slice(b"}\n");
}

/// The message's native form, in the order and with the omissions of its `Serialize`.
fn write_payload(out: &mut Vec<u8>, message: &Message) {
    out.push(b'{');
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, name: &str| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
        write_json_string(out, name);
        out.push(b':');
    };
    if let Some(id) = &message.id {
        key(out, "id");
        write_json_string(out, id);
    }
    key(out, "role");
    write_json_string(out, message.role.as_str());
    match &message.content {
        Content::Absent => {}
        Content::Null => {
            key(out, "content");
            out.extend_from_slice(b"null");
        }
        Content::Text(text) => {
            key(out, "content");
            write_json_string(out, text);
        }
        Content::Parts(parts) => {
            key(out, "content");
            write_json_array(out, parts, write_part);
        }
    }
    if !message.tool_calls.is_empty() {
        key(out, "tool_calls");
        write_json_array(out, &message.tool_calls, write_call);
    }
    if let Some(id) = &message.tool_call_id {
        key(out, "tool_call_id");
        write_json_string(out, id);
    }
    if let Some(name) = &message.name {
        key(out, "name");
        write_json_string(out, name);
    }
    if message.sticky {
        key(out, "sticky");
        out.extend_from_slice(b"true");
    }
    if message.sysprompt != message.role.is_system_prompt() {
        key(out, "sysprompt");
        out.extend_from_slice(if message.sysprompt { b"true" } else { b"false" });
    }
    if let Some(depth) = message.depth {
        key(out, "depth");
        out.extend_from_slice(depth.to_string().as_bytes());
    }
    if !message.extras.is_empty() {
        key(out, "extras");
        write_json_object(out, &message.extras);
    }
    out.push(b'}');
}

fn write_call(out: &mut Vec<u8>, call: &ToolCall) {
    out.extend_from_slice(b"{\"id\":");
    write_json_string(out, &call.id);
    out.extend_from_slice(b",\"name\":");
    write_json_string(out, &call.name);
    out.extend_from_slice(b",\"arguments\":");
    write_json_string(out, &call.arguments);
    if !call.extras.is_empty() {
        out.extend_from_slice(b",\"extras\":");
        write_json_object(out, &call.extras);
    }
    out.push(b'}');
}

/// A part as [`Part::to_value`] gives it (a text part with extras, rare, through it).
fn write_part(out: &mut Vec<u8>, part: &Part) {
    let (kind, field, text) = match part {
        Part::Text { text, extras } if extras.is_empty() => ("text", "text", text),
        Part::Thinking { thinking, extras } if extras.is_empty() => ("thinking", "thinking", thinking),
        Part::ToolUse { id } => ("tool_use", "id", id),
        Part::Other(value) => return write_json_value(out, value),
        part => return write_json_value(out, &part.to_value()),
    };
    out.extend_from_slice(b"{\"type\":");
    write_json_string(out, kind);
    out.push(b',');
    write_json_string(out, field);
    out.push(b':');
    write_json_string(out, text);
    out.push(b'}');
}
