//! Where Anthropic counts and accepts `cache_control`: the walk over a Messages request
//! that both the counter and the placement share, so the two can never disagree.
//!
//! Anthropic counts a breakpoint on every tool definition, every `system` block, every
//! content block of every message (a `tool_result`'s own content blocks included) and the
//! request's top-level automatic `cache_control` field; more than four in one request is
//! a 400. A breakpoint may sit on a text block with text, an image, a document, a
//! search result, a tool use or a tool result, but not on a thinking or redacted-thinking
//! block, an empty text block, or a block the proxy does not model (a server-side
//! `compaction` block is the provider's own and is passed through as it came).

use serde_json::{Map, Value};

/// The field that marks a breakpoint.
pub const CACHE_CONTROL: &str = "cache_control";

/// The most breakpoints Anthropic accepts in one request.
pub const MAX_BREAKPOINTS: usize = 4;

/// True for a content block that may carry `cache_control`.
pub fn can_carry(block: &Value) -> bool {
    let Some(object) = block.as_object() else {
        return false;
    };
    match object.get("type").and_then(Value::as_str) {
        Some("text") => object
            .get("text")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty()),
        Some("image" | "document" | "search_result" | "tool_use" | "tool_result") => true,
        _ => false,
    }
}

/// True when `value` (a block, a tool, the request) carries a breakpoint.
pub fn marked(value: &Value) -> bool {
    value.get(CACHE_CONTROL).is_some_and(|c| !c.is_null())
}

/// Breakpoints inside one message's content (tool results' own blocks included).
pub fn count_in_message(message: &Value) -> usize {
    match message.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().map(count_in_block).sum(),
        _ => 0,
    }
}

fn count_in_block(block: &Value) -> usize {
    let nested = match block.get("content") {
        Some(Value::Array(inner)) if block.get("type").and_then(Value::as_str) == Some("tool_result") => {
            inner.iter().filter(|b| marked(b)).count()
        }
        _ => 0,
    };
    usize::from(marked(block)) + nested
}

/// Every breakpoint of a Messages request, counted where Anthropic counts them: the
/// top-level automatic field, tools, `system` blocks and message content blocks.
pub fn count_breakpoints(request: &Value) -> usize {
    let top = usize::from(marked(request));
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .map_or(0, |tools| tools.iter().filter(|t| marked(t)).count());
    let system = match request.get("system") {
        Some(Value::Array(blocks)) => blocks.iter().filter(|b| marked(b)).count(),
        _ => 0,
    };
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .map_or(0, |m| m.iter().map(count_in_message).sum());
    top + tools + system + messages
}

/// Removes every breakpoint inside one message (its blocks and tool results' blocks).
pub fn strip_message(message: &mut Value) {
    if let Some(Value::Array(blocks)) = message.get_mut("content") {
        for block in blocks {
            if let Some(object) = block.as_object_mut() {
                object.shift_remove(CACHE_CONTROL);
                if let Some(Value::Array(inner)) = object.get_mut("content") {
                    for b in inner {
                        if let Some(o) = b.as_object_mut() {
                            o.shift_remove(CACHE_CONTROL);
                        }
                    }
                }
            }
        }
    }
}

/// The breakpoints inside one message, in order (to move the last one).
pub fn marks_in_message(message: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(Value::Array(blocks)) = message.get("content") {
        for block in blocks {
            if let Some(mark) = block.get(CACHE_CONTROL).filter(|c| !c.is_null()) {
                out.push(mark.clone());
            }
            if let Some(Value::Array(inner)) = block.get("content") {
                out.extend(
                    inner
                        .iter()
                        .filter_map(|b| b.get(CACHE_CONTROL).filter(|c| !c.is_null()).cloned()),
                );
            }
        }
    }
    out
}

/// A non-empty string content as one text block, so it can carry a breakpoint
/// (Anthropic renders both the same; only the list form has a place for the mark).
fn blocks_of(slot: &mut Value) -> Option<&mut Vec<Value>> {
    if let Value::String(text) = slot {
        if text.is_empty() {
            return None;
        }
        let mut block = Map::new();
        block.insert("type".into(), Value::String("text".into()));
        block.insert("text".into(), Value::String(std::mem::take(text)));
        *slot = Value::Array(vec![Value::Object(block)]);
    }
    slot.as_array_mut()
}

/// Marks the last block of `slot` (a content or a `system` value) that may carry a
/// breakpoint; false when none may, or the block already carries one.
pub fn mark_last(slot: &mut Value, mark: &Value) -> bool {
    let eligible = match slot {
        Value::String(text) => !text.is_empty(),
        Value::Array(blocks) => blocks.iter().any(can_carry),
        _ => false,
    };
    if !eligible {
        return false;
    }
    let Some(blocks) = blocks_of(slot) else {
        return false;
    };
    let Some(block) = blocks.iter_mut().rev().find(|b| can_carry(b)) else {
        return false;
    };
    if marked(block) {
        return false;
    }
    if let Some(object) = block.as_object_mut() {
        object.insert(CACHE_CONTROL.into(), mark.clone());
        return true;
    }
    false
}

/// True when a message's content could take a breakpoint.
pub fn message_can_carry(message: &Value) -> bool {
    match message.get("content") {
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(blocks)) => blocks.iter().any(can_carry),
        _ => false,
    }
}
