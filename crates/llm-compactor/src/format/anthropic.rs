//! Anthropic Messages: `{system, messages, ...}` with content blocks.
//!
//! The model has no "turn of several tool results", so a user turn holding
//! `tool_result` blocks is split into one [`Role::Tool`] message per block plus one user
//! message for the remaining blocks, and each piece records, in its extras under
//! [`ANTHROPIC_HINT_KEY`], which wire turn it came from and the block positions it held.
//! Export regroups consecutive pieces of one turn and restores the block order. The same
//! key marks a `system`-role message that sat inside `messages` (invalid for the API,
//! but kept where it was). Digests ignore extras, and the OpenAI exporter never writes
//! the key, so the hint stays out of everyone else's way.

use serde_json::{Map, Value};

use super::wire::{kind_of, take_messages};
use super::{FormatError, append_extras, bare_message, refuse_reserved_key};
use crate::message::{Content, Message, Part, Role, ToolCall};

/// The key in [`Message::extras`] under which the Anthropic importer records how to
/// rebuild a wire turn (`turn`, `blocks`, `turn_extras`, `in_messages`).
pub const ANTHROPIC_HINT_KEY: &str = "_llm_compactor_anthropic";

/// The content-block type of Anthropic's server-side compaction (`compact_20260112`):
/// opaque, kept verbatim, and its turn sticky.
pub const COMPACTION_BLOCK: &str = "compaction";

/// Imports an Anthropic conversation object.
pub(super) fn import_document(value: Value, source_name: &str) -> Result<(Vec<Message>, Value), FormatError> {
    let Value::Object(mut object) = value else {
        return Err(FormatError::whole(
            source_name,
            format!(
                "an Anthropic conversation is an object with `messages`, not {}",
                kind_of(&value)
            ),
        ));
    };
    let system = object.get_mut("system").map(Value::take);
    let (items, envelope) = take_messages(object, source_name, "an Anthropic conversation")?;
    let mut messages = Vec::with_capacity(items.len() + 1);
    if let Some(system) = system {
        let content =
            Content::from_value(system).map_err(|p| FormatError::whole(source_name, format!("system: {p}")))?;
        let mut message = bare_message(Role::System);
        message.content = content;
        messages.push(message);
    }
    for (index, item) in items.into_iter().enumerate() {
        import_turn(index, item, &mut messages).map_err(|p| FormatError::at(source_name, index, p))?;
    }
    Ok((messages, Value::Object(envelope)))
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

fn import_turn(index: usize, value: Value, out: &mut Vec<Message>) -> Result<(), String> {
    let Value::Object(object) = value else {
        return Err(format!("a message must be an object, not {}", kind_of(&value)));
    };
    let mut role = None;
    let mut content = None;
    let mut extras = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("role", Value::String(text)) => role = Some(text),
            ("role", other) => return Err(format!("role must be a string, not {}", kind_of(&other))),
            ("content", value) => content = Some(value),
            (_, value) => {
                refuse_reserved_key(&key, "")?;
                extras.insert(key, value);
            }
        }
    }
    let Some(role) = role else {
        return Err("the message has no role".into());
    };
    match (role.as_str(), content) {
        ("assistant", Some(Value::Array(blocks))) => {
            let mut parts = Vec::with_capacity(blocks.len());
            let mut calls = Vec::new();
            for (j, block) in blocks.into_iter().enumerate() {
                if block_type(&block) == Some("tool_use") {
                    let call = import_tool_use(j, block)?;
                    parts.push(Part::ToolUse { id: call.id.clone() });
                    calls.push(call);
                } else {
                    parts.push(Part::from_value(block).map_err(|e| format!("content block {j}: {e}"))?);
                }
            }
            let mut message = bare_message(Role::Assistant);
            // A server-side compaction block stands for the history before it: the turn
            // is passed on verbatim, never summarized, elided or split.
            message.sticky = parts.iter().any(|p| p.kind() == COMPACTION_BLOCK);
            message.content = Content::Parts(parts);
            message.tool_calls = calls;
            message.extras = extras;
            out.push(message);
        }
        ("user", Some(Value::Array(blocks))) if blocks.iter().any(|b| block_type(b) == Some("tool_result")) => {
            split_tool_results(index, blocks, extras, out)?;
        }
        (_, content) => {
            let role = Role::from(role.as_str());
            let content = match content {
                None => Content::Absent,
                Some(value) => Content::from_value(value)?,
            };
            if role.is_system_prompt() {
                let mut hint = Map::new();
                hint.insert("in_messages".into(), Value::Bool(true));
                extras.insert(ANTHROPIC_HINT_KEY.into(), Value::Object(hint));
            }
            let mut message = bare_message(role);
            message.content = content;
            message.extras = extras;
            out.push(message);
        }
    }
    Ok(())
}

fn split_tool_results(
    index: usize,
    blocks: Vec<Value>,
    turn_extras: Map<String, Value>,
    out: &mut Vec<Message>,
) -> Result<(), String> {
    let mut pieces = Vec::new();
    let mut rest = Vec::new();
    let mut rest_positions = Vec::new();
    for (j, block) in blocks.into_iter().enumerate() {
        if block_type(&block) == Some("tool_result") {
            let mut message = import_tool_result(j, block)?;
            message
                .extras
                .insert(ANTHROPIC_HINT_KEY.into(), group_hint(index, &[j]));
            pieces.push(message);
        } else {
            rest.push(Part::from_value(block).map_err(|e| format!("content block {j}: {e}"))?);
            rest_positions.push(j);
        }
    }
    if !rest.is_empty() {
        let mut message = bare_message(Role::User);
        message.content = Content::Parts(rest);
        message
            .extras
            .insert(ANTHROPIC_HINT_KEY.into(), group_hint(index, &rest_positions));
        pieces.push(message);
    }
    if !turn_extras.is_empty()
        && let Some(Value::Object(hint)) = pieces.first_mut().and_then(|m| m.extras.get_mut(ANTHROPIC_HINT_KEY))
    {
        hint.insert("turn_extras".into(), Value::Object(turn_extras));
    }
    out.extend(pieces);
    Ok(())
}

fn group_hint(turn: usize, blocks: &[usize]) -> Value {
    let mut hint = Map::new();
    hint.insert("turn".into(), Value::from(turn));
    hint.insert(
        "blocks".into(),
        Value::Array(blocks.iter().map(|&b| Value::from(b)).collect()),
    );
    Value::Object(hint)
}

fn import_tool_use(j: usize, block: Value) -> Result<ToolCall, String> {
    let Value::Object(object) = block else {
        return Err(format!("content block {j} must be an object"));
    };
    let mut id = None;
    let mut name = None;
    let mut input = None;
    let mut extras = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("type", _) => {}
            ("id", Value::String(text)) => id = Some(text),
            ("name", Value::String(text)) => name = Some(text),
            (field @ ("id" | "name"), other) => {
                return Err(format!(
                    "content block {j}: tool_use {field} must be a string, not {}",
                    kind_of(&other)
                ));
            }
            ("input", value) => input = Some(value),
            (_, value) => {
                refuse_reserved_key(&key, &format!("content block {j}: "))?;
                extras.insert(key, value);
            }
        }
    }
    let id = id.ok_or_else(|| format!("content block {j}: a tool_use block has no id"))?;
    let name = name.ok_or_else(|| format!("content block {j}: a tool_use block has no name"))?;
    let input = input.ok_or_else(|| format!("content block {j}: a tool_use block has no input"))?;
    let arguments = serde_json::to_string(&input).map_err(|e| format!("content block {j}: {e}"))?;
    Ok(ToolCall {
        id,
        name,
        arguments,
        extras,
    })
}

fn import_tool_result(j: usize, block: Value) -> Result<Message, String> {
    let Value::Object(object) = block else {
        return Err(format!("content block {j} must be an object"));
    };
    // A cache mark is a request annotation that moves (see `plan::breakpoints::strip_marks`):
    // never part of the recorded order.
    let order: Vec<String> = object.keys().filter(|k| *k != "cache_control").cloned().collect();
    let mut tool_use_id = None;
    let mut content = Content::Absent;
    let mut extras = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("type", _) => {}
            ("tool_use_id", Value::String(text)) => tool_use_id = Some(text),
            ("tool_use_id", other) => {
                return Err(format!(
                    "content block {j}: tool_use_id must be a string, not {}",
                    kind_of(&other)
                ));
            }
            ("content", value) => {
                content = Content::from_value(value).map_err(|e| format!("content block {j}: {e}"))?
            }
            (_, value) => {
                refuse_reserved_key(&key, &format!("content block {j}: "))?;
                extras.insert(key, value);
            }
        }
    }
    let id = tool_use_id.ok_or_else(|| format!("content block {j}: a tool_result block has no tool_use_id"))?;
    let mut message = bare_message(Role::Tool);
    message.tool_call_id = Some(id);
    message.content = content;
    message.extras = extras;
    // A client that writes the block's keys in another order than the exporter's (Claude
    // Code puts `tool_use_id` first) gets them back in its order: a forwarded request
    // and a replayed transcript are then the client's bytes.
    if order != super::key_order::block_order(&message) {
        message.extras.insert(
            super::key_order::KEY_ORDER.into(),
            order.into_iter().map(Value::String).collect(),
        );
    }
    Ok(message)
}

/// What an imported message remembers about its wire turn.
#[derive(Default)]
struct Hint {
    turn: Option<u64>,
    blocks: Vec<usize>,
    turn_extras: Option<Map<String, Value>>,
    in_messages: bool,
}

fn hint(message: &Message) -> Hint {
    let Some(Value::Object(object)) = message.extras.get(ANTHROPIC_HINT_KEY) else {
        return Hint::default();
    };
    Hint {
        turn: object.get("turn").and_then(Value::as_u64),
        blocks: object
            .get("blocks")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|v| v.as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX))
                    .collect()
            })
            .unwrap_or_default(),
        turn_extras: object.get("turn_extras").and_then(Value::as_object).cloned(),
        in_messages: object.get("in_messages").and_then(Value::as_bool).unwrap_or(false),
    }
}

/// True for a message that belongs in the top-level `system`.
fn is_top_level_system(message: &Message) -> bool {
    message.role.is_system_prompt() && !hint(message).in_messages
}

/// Exports an Anthropic conversation object.
pub(super) fn export_document(messages: &[Message], envelope: &Value) -> Value {
    let (system, rest): (Vec<&Message>, Vec<&Message>) = messages.iter().partition(|m| is_top_level_system(m));
    let mut object = match envelope {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    object.insert("messages".into(), Value::Array(export_turns(&rest)));
    match system_value(&system) {
        Some(value) => {
            if let Some(slot) = object.get_mut("system") {
                *slot = value;
            } else {
                let at = object.keys().position(|k| k == "messages").unwrap_or(object.len());
                object.shift_insert(at, "system".into(), value);
            }
        }
        None => {
            object.shift_remove("system");
        }
    }
    Value::Object(object)
}

fn system_value(system: &[&Message]) -> Option<Value> {
    match system {
        [] => None,
        [only] => match &only.content {
            Content::Absent => None,
            Content::Parts(parts) => Some(Value::Array(part_values(parts))),
            other => Some(other.to_value()),
        },
        many => Some(Value::Array(
            many.iter().flat_map(|m| content_blocks(&m.content)).collect(),
        )),
    }
}

fn part_values(parts: &[Part]) -> Vec<Value> {
    parts
        .iter()
        .filter(|p| !matches!(p, Part::ToolUse { .. }))
        .map(Part::to_value)
        .collect()
}

/// A content as a list of blocks (a non-empty string becomes one text block).
fn content_blocks(content: &Content) -> Vec<Value> {
    match content {
        Content::Absent | Content::Null => Vec::new(),
        Content::Text(text) if text.is_empty() => Vec::new(),
        Content::Text(text) => vec![Part::text(text.clone()).to_value()],
        Content::Parts(parts) => part_values(parts),
    }
}

fn export_turns(messages: &[&Message]) -> Vec<Value> {
    turn_ranges(messages)
        .into_iter()
        .map(|range| {
            let first = messages[range.start];
            if hint(first).turn.is_some() {
                export_group(&messages[range])
            } else if first.role == Role::Tool {
                let tools = messages[range.clone()]
                    .iter()
                    .take_while(|m| m.role == Role::Tool)
                    .count();
                let mut blocks: Vec<Value> = messages[range.start..range.start + tools]
                    .iter()
                    .map(|m| tool_result_block(m))
                    .collect();
                if let Some(user) = messages[range].get(tools) {
                    blocks.extend(content_blocks(&user.content));
                }
                let mut turn = Map::new();
                turn.insert("role".into(), Value::String("user".into()));
                turn.insert("content".into(), Value::Array(blocks));
                Value::Object(turn)
            } else {
                export_message(first)
            }
        })
        .collect()
}

/// The wire turns the messages (top-level system prompts left out) are written as: one
/// range of messages per element of the wire `messages` array. The pieces of one
/// imported user turn are one turn; so are consecutive tool results without a hint, with
/// the plain user message that follows them; every other message is a turn of its own.
fn turn_ranges(messages: &[&Message]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::with_capacity(messages.len());
    let mut k = 0;
    while k < messages.len() {
        let first = hint(messages[k]);
        let end = if let Some(turn) = first.turn {
            k + messages[k..].iter().take_while(|m| hint(m).turn == Some(turn)).count()
        } else if messages[k].role == Role::Tool {
            let end = k + messages[k..]
                .iter()
                .take_while(|m| m.role == Role::Tool && hint(m).turn.is_none())
                .count();
            match messages.get(end) {
                Some(user) if user.role == Role::User && user.tool_calls.is_empty() && hint(user).turn.is_none() => {
                    end + 1
                }
                _ => end,
            }
        } else {
            k + 1
        };
        ranges.push(k..end);
        k = end;
    }
    ranges
}

/// For each message, the index in the exported `messages` array of the wire turn it is
/// written into (`None` for a system prompt written to the top-level `system`): what a
/// provider's error path `messages.N.content.M` counts.
pub(crate) fn wire_turns(messages: &[Message]) -> Vec<Option<usize>> {
    let mut turns = vec![None; messages.len()];
    let rest: Vec<usize> = (0..messages.len())
        .filter(|&i| !is_top_level_system(&messages[i]))
        .collect();
    let refs: Vec<&Message> = rest.iter().map(|&i| &messages[i]).collect();
    for (n, range) in turn_ranges(&refs).into_iter().enumerate() {
        for k in range {
            turns[rest[k]] = Some(n);
        }
    }
    turns
}

/// For each content block an assistant message is written with, the index of the part
/// it comes from (`None` for a call written at the end, without a placeholder): the
/// `M` of a provider's error path `messages.N.content.M` as a part index.
pub(crate) fn assistant_block_parts(message: &Message) -> Vec<Option<usize>> {
    let Content::Parts(parts) = &message.content else {
        let text = usize::from(
            !matches!(&message.content, Content::Absent | Content::Null)
                && !matches!(&message.content, Content::Text(t) if t.is_empty()),
        );
        return vec![None; text + message.tool_calls.len()];
    };
    let mut used = vec![false; message.tool_calls.len()];
    let mut blocks = Vec::with_capacity(parts.len());
    for (p, part) in parts.iter().enumerate() {
        match part {
            Part::ToolUse { id } => {
                let call = (0..used.len()).find(|&i| !used[i] && message.tool_calls[i].id == *id);
                if let Some(i) = call {
                    used[i] = true;
                    blocks.push(Some(p));
                }
            }
            _ => blocks.push(Some(p)),
        }
    }
    blocks.extend(used.iter().filter(|u| !**u).map(|_| None));
    blocks
}

/// Rebuilds one user turn from its pieces, in the block order the hints record.
fn export_group(pieces: &[&Message]) -> Value {
    let mut blocks: Vec<(usize, Value)> = Vec::new();
    let mut turn_extras = None;
    for piece in pieces {
        let hint = hint(piece);
        if turn_extras.is_none() {
            turn_extras = hint.turn_extras;
        }
        if piece.role == Role::Tool {
            let at = hint.blocks.first().copied().unwrap_or(usize::MAX);
            blocks.push((at, tool_result_block(piece)));
        } else {
            let mut positions = hint.blocks.into_iter();
            for block in content_blocks_exact(&piece.content) {
                blocks.push((positions.next().unwrap_or(usize::MAX), block));
            }
        }
    }
    blocks.sort_by_key(|(at, _)| *at);
    let mut turn = Map::new();
    turn.insert("role".into(), Value::String("user".into()));
    turn.insert(
        "content".into(),
        Value::Array(blocks.into_iter().map(|(_, b)| b).collect()),
    );
    for (key, value) in turn_extras.unwrap_or_default() {
        if !turn.contains_key(&key) {
            turn.insert(key, value);
        }
    }
    Value::Object(turn)
}

/// Like [`content_blocks`] but keeps an empty string as an empty text block (a piece of
/// a wire turn is rebuilt as it was).
fn content_blocks_exact(content: &Content) -> Vec<Value> {
    match content {
        Content::Text(text) => vec![Part::text(text.clone()).to_value()],
        other => content_blocks(other),
    }
}

fn tool_result_block(message: &Message) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), Value::String("tool_result".into()));
    block.insert(
        "tool_use_id".into(),
        Value::String(message.tool_call_id.clone().unwrap_or_default()),
    );
    match &message.content {
        Content::Absent => {}
        Content::Parts(parts) => {
            block.insert("content".into(), Value::Array(part_values(parts)));
        }
        other => {
            block.insert("content".into(), other.to_value());
        }
    }
    append_extras(&mut block, &message.extras);
    match message.extras.get(super::key_order::KEY_ORDER) {
        Some(Value::Array(order)) => Value::Object(super::key_order::in_order(block, order)),
        _ => Value::Object(block),
    }
}

fn export_message(message: &Message) -> Value {
    let mut object = Map::new();
    object.insert("role".into(), Value::String(message.role.as_str().into()));
    if message.tool_calls.is_empty() {
        match &message.content {
            Content::Absent => {}
            Content::Parts(parts) => {
                object.insert("content".into(), Value::Array(part_values(parts)));
            }
            other => {
                object.insert("content".into(), other.to_value());
            }
        }
    } else {
        object.insert("content".into(), Value::Array(blocks_with_calls(message)));
    }
    append_extras(&mut object, &message.extras);
    Value::Object(object)
}

/// An assistant turn's blocks: each tool-use placeholder is replaced by its call; calls
/// without a placeholder follow at the end.
fn blocks_with_calls(message: &Message) -> Vec<Value> {
    let mut used = vec![false; message.tool_calls.len()];
    let mut blocks = Vec::new();
    match &message.content {
        Content::Parts(parts) => {
            for part in parts {
                match part {
                    Part::ToolUse { id } => blocks.extend(take_call(message, id, &mut used)),
                    other => blocks.push(other.to_value()),
                }
            }
        }
        other => blocks.extend(content_blocks(other)),
    }
    for (call, used) in message.tool_calls.iter().zip(used) {
        if !used {
            blocks.push(tool_use_block(call));
        }
    }
    blocks
}

/// The tool-use block of the first call not yet placed whose id is `id`.
fn take_call(message: &Message, id: &str, used: &mut [bool]) -> Option<Value> {
    let i = (0..message.tool_calls.len()).find(|&i| !used[i] && message.tool_calls[i].id == id)?;
    used[i] = true;
    Some(tool_use_block(&message.tool_calls[i]))
}

fn tool_use_block(call: &ToolCall) -> Value {
    let input = serde_json::from_str(&call.arguments).unwrap_or_else(|_| Value::String(call.arguments.clone()));
    let mut block = Map::new();
    block.insert("type".into(), Value::String("tool_use".into()));
    block.insert("id".into(), Value::String(call.id.clone()));
    block.insert("name".into(), Value::String(call.name.clone()));
    block.insert("input".into(), input);
    append_extras(&mut block, &call.extras);
    Value::Object(block)
}
