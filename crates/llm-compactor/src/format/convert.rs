//! Conversion between formats: reshaping messages and envelopes so that the target's
//! exporter writes a conversation the target's API accepts. What this drops is listed in
//! the module docs of [`super`].

use serde_json::{Map, Value};

use super::Format;
use super::mini_swe_agent::TRAJECTORY_FORMAT;
use crate::message::{Content, Message, Part, Role};

/// OpenAI message keys (beside the modeled ones) that an OpenAI-shaped target keeps.
const OPENAI_MESSAGE_KEYS: [&str; 3] = ["refusal", "audio", "annotations"];

/// The envelope of a document with no top-level field besides its messages.
pub(super) fn fresh_envelope(format: Format) -> Value {
    match format {
        Format::OpenAi => Value::Null,
        Format::Anthropic => {
            let mut object = Map::new();
            object.insert("messages".into(), Value::Null);
            Value::Object(object)
        }
        Format::MiniSweAgent => {
            let mut object = Map::new();
            object.insert("info".into(), Value::Object(Map::new()));
            object.insert("messages".into(), Value::Null);
            object.insert("trajectory_format".into(), Value::String(TRAJECTORY_FORMAT.into()));
            Value::Object(object)
        }
    }
}

/// Messages reshaped for `target` (which differs from their source format).
pub(super) fn normalize(messages: &[Message], target: Format) -> Vec<Message> {
    match target {
        Format::Anthropic => to_anthropic(messages),
        Format::OpenAi | Format::MiniSweAgent => to_openai(messages),
    }
}

fn known_role(role: &Role) -> bool {
    !matches!(role, Role::Other(_))
}

fn to_anthropic(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut leading = true;
    for message in messages.iter().filter(|m| known_role(&m.role)) {
        let mut m = message.clone();
        m.extras = Map::new();
        m.name = None;
        if m.role.is_system_prompt() {
            if !leading {
                m.role = Role::User;
            }
        } else {
            leading = false;
        }
        if m.role == Role::Tool && m.tool_call_id.is_none() {
            m.role = Role::User;
        }
        for call in &mut m.tool_calls {
            call.extras = Map::new();
            let is_object = serde_json::from_str::<Value>(&call.arguments).is_ok_and(|v| v.is_object());
            if !is_object {
                let mut wrapped = Map::new();
                wrapped.insert("arguments".into(), Value::String(call.arguments.clone()));
                call.arguments = Value::Object(wrapped).to_string();
            }
        }
        m.content = anthropic_content(&m.content, &m.role, !m.tool_calls.is_empty());
        out.push(m);
    }
    out
}

fn anthropic_content(content: &Content, role: &Role, has_calls: bool) -> Content {
    let empty = || {
        if has_calls || *role == Role::Tool {
            Content::Absent
        } else {
            Content::Text(String::new())
        }
    };
    match content {
        Content::Text(text) => Content::Text(text.clone()),
        Content::Absent | Content::Null => empty(),
        Content::Parts(parts) => {
            let parts: Vec<Part> = parts.iter().filter_map(anthropic_part).collect();
            if parts.is_empty() {
                empty()
            } else {
                Content::Parts(parts)
            }
        }
    }
}

fn anthropic_part(part: &Part) -> Option<Part> {
    match part {
        Part::Text { text, .. } if text.is_empty() => None,
        Part::Text { text, .. } => Some(Part::text(text.clone())),
        Part::Thinking { extras, .. } if extras.contains_key("signature") => Some(part.clone()),
        Part::Thinking { .. } => None,
        Part::ToolUse { .. } => Some(part.clone()),
        Part::Other(value) => match part.kind() {
            "image_url" => Some(Part::Other(image_from_url(value))),
            "image" | "document" | "redacted_thinking" | "search_result" => Some(part.clone()),
            "refusal" => value.get("refusal").and_then(Value::as_str).map(Part::text),
            other => Some(marker(other)),
        },
    }
}

fn marker(kind: &str) -> Part {
    let kind = if kind.is_empty() { "unknown" } else { kind };
    Part::text(format!("[{kind} omitted]"))
}

/// An Anthropic image block from an OpenAI `image_url` part.
fn image_from_url(part: &Value) -> Value {
    let url = part
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut source = Map::new();
    let data_url = url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,"));
    match data_url {
        Some((media_type, data)) => {
            source.insert("type".into(), Value::String("base64".into()));
            source.insert("media_type".into(), Value::String(media_type.into()));
            source.insert("data".into(), Value::String(data.into()));
        }
        None => {
            source.insert("type".into(), Value::String("url".into()));
            source.insert("url".into(), Value::String(url.into()));
        }
    }
    let mut block = Map::new();
    block.insert("type".into(), Value::String("image".into()));
    block.insert("source".into(), Value::Object(source));
    Value::Object(block)
}

/// An OpenAI `image_url` part from an Anthropic image block (`None` for a source we
/// cannot express as a URL).
fn url_from_image(block: &Value) -> Option<Value> {
    let source = block.get("source")?;
    let url = match source.get("type").and_then(Value::as_str)? {
        "base64" => format!(
            "data:{};base64,{}",
            source.get("media_type")?.as_str()?,
            source.get("data")?.as_str()?
        ),
        "url" => source.get("url")?.as_str()?.to_owned(),
        _ => return None,
    };
    let mut image_url = Map::new();
    image_url.insert("url".into(), Value::String(url));
    let mut part = Map::new();
    part.insert("type".into(), Value::String("image_url".into()));
    part.insert("image_url".into(), Value::Object(image_url));
    Some(Value::Object(part))
}

fn to_openai(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    for message in messages.iter().filter(|m| known_role(&m.role)) {
        let mut m = message.clone();
        m.extras.retain(|key, _| OPENAI_MESSAGE_KEYS.contains(&key.as_str()));
        if m.role == Role::Tool && m.tool_call_id.is_none() {
            m.role = Role::User;
        }
        for call in &mut m.tool_calls {
            call.extras = Map::new();
            call.extras.insert("type".into(), Value::String("function".into()));
        }
        m.content = openai_content(&m.content, &m.role, !m.tool_calls.is_empty());
        out.push(m);
    }
    out
}

fn openai_content(content: &Content, role: &Role, has_calls: bool) -> Content {
    let empty = || {
        if has_calls {
            Content::Null
        } else {
            Content::Text(String::new())
        }
    };
    match content {
        Content::Text(text) => Content::Text(text.clone()),
        Content::Absent | Content::Null => empty(),
        Content::Parts(parts) => {
            let parts: Vec<Part> = parts.iter().filter_map(|p| openai_part(p, role)).collect();
            if parts.is_empty() {
                empty()
            } else {
                Content::Parts(parts)
            }
        }
    }
}

fn openai_part(part: &Part, role: &Role) -> Option<Part> {
    let user = *role == Role::User;
    match part {
        Part::Text { text, .. } => Some(Part::text(text.clone())),
        Part::Thinking { .. } | Part::ToolUse { .. } => None,
        Part::Other(value) => match part.kind() {
            "redacted_thinking" => None,
            "image" if user => Some(url_from_image(value).map_or_else(|| marker("image"), Part::Other)),
            "image_url" | "input_audio" | "file" if user => Some(part.clone()),
            "refusal" if *role == Role::Assistant => Some(part.clone()),
            other => Some(marker(other)),
        },
    }
}

/// Merges consecutive Anthropic turns of the same role into one, tool results first, so
/// that a converted conversation alternates as the API expects.
pub(super) fn merge_consecutive_turns(document: &mut Value) {
    let Some(Value::Array(turns)) = document.get_mut("messages") else {
        return;
    };
    let mut merged: Vec<Value> = Vec::with_capacity(turns.len());
    for turn in std::mem::take(turns) {
        let same = merged
            .last()
            .is_some_and(|last| last.get("role").is_some() && last.get("role") == turn.get("role"));
        if !same {
            merged.push(turn);
            continue;
        }
        let Some(last) = merged.last_mut() else { continue };
        let mut blocks = turn_blocks(last);
        blocks.extend(turn_blocks(&turn));
        let (mut results, rest): (Vec<Value>, Vec<Value>) = blocks
            .into_iter()
            .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
        results.extend(rest);
        last["content"] = Value::Array(results);
    }
    *turns = merged;
}

fn turn_blocks(turn: &Value) -> Vec<Value> {
    match turn.get("content") {
        Some(Value::String(text)) if !text.is_empty() => vec![Part::text(text.clone()).to_value()],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// The envelope for `target`, mapping the request parameters both formats know.
pub(super) fn map_envelope(source: Format, target: Format, envelope: &Value) -> Value {
    let fresh = fresh_envelope(target);
    let Value::Object(from) = envelope else { return fresh };
    match (source, target) {
        (Format::Anthropic, Format::OpenAi) => {
            let mut out = Map::new();
            out.insert("messages".into(), Value::Null);
            copy_common(from, &mut out);
            if let Some(stop) = from.get("stop_sequences") {
                out.insert("stop".into(), stop.clone());
            }
            if let Some(Value::Array(tools)) = from.get("tools") {
                let tools: Vec<Value> = tools.iter().filter_map(openai_tool).collect();
                if !tools.is_empty() {
                    out.insert("tools".into(), Value::Array(tools));
                }
            }
            if let Some(choice) = from.get("tool_choice").and_then(openai_tool_choice) {
                out.insert("tool_choice".into(), choice);
            }
            if out.len() == 1 {
                Value::Null
            } else {
                Value::Object(out)
            }
        }
        (Format::OpenAi, Format::Anthropic) => {
            let mut out = Map::new();
            copy_common(from, &mut out);
            if !out.contains_key("max_tokens")
                && let Some(max) = from.get("max_completion_tokens")
            {
                out.insert("max_tokens".into(), max.clone());
            }
            match from.get("stop") {
                Some(Value::String(stop)) => {
                    out.insert("stop_sequences".into(), Value::Array(vec![Value::String(stop.clone())]));
                }
                Some(stop @ Value::Array(_)) => {
                    out.insert("stop_sequences".into(), stop.clone());
                }
                _ => {}
            }
            if let Some(Value::Array(tools)) = from.get("tools") {
                let tools: Vec<Value> = tools.iter().filter_map(anthropic_tool).collect();
                if !tools.is_empty() {
                    out.insert("tools".into(), Value::Array(tools));
                }
            }
            if let Some(choice) = from.get("tool_choice").and_then(anthropic_tool_choice) {
                out.insert("tool_choice".into(), choice);
            }
            out.insert("messages".into(), Value::Null);
            Value::Object(out)
        }
        _ => fresh,
    }
}

fn copy_common(from: &Map<String, Value>, out: &mut Map<String, Value>) {
    for key in ["model", "max_tokens", "temperature", "top_p", "stream"] {
        if let Some(value) = from.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
}

fn openai_tool(tool: &Value) -> Option<Value> {
    let name = tool.get("name")?.as_str()?;
    let mut function = Map::new();
    function.insert("name".into(), Value::String(name.into()));
    if let Some(description) = tool.get("description") {
        function.insert("description".into(), description.clone());
    }
    if let Some(schema) = tool.get("input_schema") {
        function.insert("parameters".into(), schema.clone());
    }
    let mut out = Map::new();
    out.insert("type".into(), Value::String("function".into()));
    out.insert("function".into(), Value::Object(function));
    Some(Value::Object(out))
}

fn anthropic_tool(tool: &Value) -> Option<Value> {
    let function = tool.get("function")?;
    let name = function.get("name")?.as_str()?;
    let mut out = Map::new();
    out.insert("name".into(), Value::String(name.into()));
    if let Some(description) = function.get("description") {
        out.insert("description".into(), description.clone());
    }
    let schema = function
        .get("parameters")
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    out.insert("input_schema".into(), schema);
    Some(Value::Object(out))
}

fn openai_tool_choice(choice: &Value) -> Option<Value> {
    Some(match choice.get("type")?.as_str()? {
        "auto" => Value::String("auto".into()),
        "any" => Value::String("required".into()),
        "none" => Value::String("none".into()),
        "tool" => serde_json::json!({"type": "function", "function": {"name": choice.get("name")?.as_str()?}}),
        _ => return None,
    })
}

fn anthropic_tool_choice(choice: &Value) -> Option<Value> {
    Some(match choice {
        Value::String(mode) => match mode.as_str() {
            "auto" => serde_json::json!({"type": "auto"}),
            "required" => serde_json::json!({"type": "any"}),
            "none" => serde_json::json!({"type": "none"}),
            _ => return None,
        },
        Value::Object(_) => {
            let name = choice.get("function")?.get("name")?.as_str()?;
            serde_json::json!({"type": "tool", "name": name})
        }
        _ => return None,
    })
}
