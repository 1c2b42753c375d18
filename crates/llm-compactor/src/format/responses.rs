//! OpenAI Responses API requests (`POST /v1/responses`): the `input` items as messages.
//!
//! Why a request codec and not a [`super::Format`]: a Responses request is not a
//! conversation file anyone keeps on disk, and there is no conversion to or from it; the
//! proxy needs to read its conversation, let the engine compact it, and write the request
//! back with everything else as it came. So this module reads a request object into
//! [`Message`]s plus an envelope, and writes them back, losslessly: **import followed by
//! export gives back an equal [`Value`]**, as for the other formats.
//!
//! How items become messages:
//!
//! - `instructions` (a string) becomes a leading system message (sticky, counted, never
//!   summarized) and is written back to `instructions`.
//! - A string `input` is one user message, written back as a string.
//! - A `message` item of role `user`, `system` or `developer` (typed or the short
//!   `{role, content}` form) is a message of that role; its `input_text` parts are text.
//! - An assistant turn is a run of consecutive items the model produced: `reasoning`,
//!   assistant `message`, the calls the client runs (`function_call`, `custom_tool_call`,
//!   `local_shell_call`) and the hosted tools' calls the server ran within the response
//!   (`web_search_call`, `file_search_call`, `code_interpreter_call`,
//!   `image_generation_call`, `mcp_call`, `mcp_list_tools`): ONE assistant message whose
//!   text is its `output_text` and whose tool calls are the client's calls (`call_id`,
//!   `name`, and `arguments` or `input`; a `local_shell_call` is named `local_shell`, its
//!   `action` object the arguments). A hosted call needs no answer from the client, so
//!   it is part of the turn and nothing else: it goes where its turn goes (kept, or
//!   summarized with it). What the model has in context of the turn's reasoning and
//!   hosted calls (a search's query, an MCP call's output, a code interpreter's logs, a
//!   reasoning summary) is counted and shown to the summarizer: such a turn's content is
//!   parts, its texts and a view of each of those items. Grouping keeps a reasoning item
//!   with the items it led to (a cut between them is a request OpenAI refuses); the
//!   original items are kept in the message's extras under [`RESPONSES_HINT_KEY`] and
//!   written back verbatim.
//! - A `function_call_output`, `custom_tool_call_output` or `local_shell_call_output`
//!   item is a tool message answering `call_id`; its `output` is the content (a stub,
//!   when aged). A synthetic answer (a repaired unanswered call) is written as the output
//!   type of its call.
//!
//! Anything else (`previous_response_id`, whose conversation lives on the server; item
//! types this module does not model, such as `item_reference`, `computer_call` and its
//! screenshot output, or an MCP approval; a message of a role the API has no input
//! message of) is [`ResponsesError::Unsupported`]: the caller passes such a request
//! through unchanged rather than guess at it.

use serde_json::{Map, Value};

use super::openai::insert_content;
use super::wire::kind_of;
use super::{FormatError, append_extras, bare_message, refuse_reserved_key};
use crate::message::{Content, Message, Part, Role, ToolCall};

/// The extras key of a message read from a Responses request: `"instructions"`, `"input"`
/// (a string input), or, on an assistant turn, the array of its original items. Other
/// formats never write it.
pub const RESPONSES_HINT_KEY: &str = "_llm_compactor_responses";

/// The item type of a server-side compaction (`context_management`): an opaque,
/// encrypted stand-in for the history before it, kept verbatim in its turn, which is
/// sticky.
pub const COMPACTION_ITEM: &str = "compaction";

/// Why a Responses request cannot be read as a conversation.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ResponsesError {
    /// Well-formed, but with parts this codec does not model: pass it through unchanged.
    #[error("not compacted: {0}")]
    Unsupported(String),
    /// Malformed (not an object, an item without its required fields).
    #[error(transparent)]
    Invalid(#[from] FormatError),
}

/// A Responses API request read as a conversation.
///
/// ```
/// use llm_compactor::format::responses::ResponsesRequest;
/// use serde_json::json;
///
/// let body = json!({
///     "model": "gpt-5", "instructions": "Be brief.",
///     "input": [
///         {"role": "user", "content": "list the files"},
///         {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
///         {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
///     ]
/// });
/// let request = ResponsesRequest::from_value(body.clone(), "request").unwrap();
/// assert_eq!(request.messages().len(), 4); // instructions, user, the call, its output
/// assert_eq!(request.messages()[2].tool_calls[0].id, "c1");
/// assert_eq!(request.to_value(), body);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct ResponsesRequest {
    messages: Vec<Message>,
    /// The request object with `input` (and `instructions` when read as a message) left
    /// as `null` placeholders that keep their key order.
    envelope: Map<String, Value>,
}

impl ResponsesRequest {
    /// Reads a request body.
    ///
    /// # Errors
    /// [`ResponsesError::Unsupported`] for a request this codec does not model (see the
    /// module docs), [`ResponsesError::Invalid`] for a malformed one.
    pub fn from_value(value: Value, source_name: &str) -> Result<ResponsesRequest, ResponsesError> {
        let Value::Object(mut envelope) = value else {
            return Err(FormatError::whole(
                source_name,
                format!("a Responses request is an object, not {}", kind_of(&value)),
            )
            .into());
        };
        if envelope.get("previous_response_id").is_some_and(|v| !v.is_null()) {
            return Err(ResponsesError::Unsupported(
                "previous_response_id: the conversation is kept by the server".into(),
            ));
        }
        if envelope.get("conversation").is_some_and(|v| !v.is_null()) {
            return Err(ResponsesError::Unsupported(
                "conversation: the conversation is kept by the server".into(),
            ));
        }
        let mut messages = Vec::new();
        if let Some(Value::String(text)) = envelope.get("instructions") {
            let mut message = bare_message(Role::System);
            message.content = Content::Text(text.clone());
            message.extras.insert(RESPONSES_HINT_KEY.into(), "instructions".into());
            messages.push(message);
            envelope.insert("instructions".into(), Value::Null);
        }
        match envelope.get_mut("input").map(Value::take) {
            Some(Value::String(text)) => {
                let mut message = bare_message(Role::User);
                message.content = Content::Text(text);
                message.extras.insert(RESPONSES_HINT_KEY.into(), "input".into());
                messages.push(message);
            }
            Some(Value::Array(items)) => messages.extend(import_items(items, source_name)?),
            Some(other) => {
                return Err(FormatError::whole(
                    source_name,
                    format!("`input` must be a string or an array of items, not {}", kind_of(&other)),
                )
                .into());
            }
            None => return Err(FormatError::whole(source_name, "a Responses request has no `input`").into()),
        }
        Ok(ResponsesRequest { messages, envelope })
    }

    /// The conversation: the instructions (when a string), then the input.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, by value.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The same request with other messages (a compacted conversation).
    pub fn with_messages(&self, messages: Vec<Message>) -> ResponsesRequest {
        ResponsesRequest {
            messages,
            envelope: self.envelope.clone(),
        }
    }

    /// The request as JSON: every other field as it came, `instructions` and `input`
    /// from the messages.
    pub fn to_value(&self) -> Value {
        let mut object = self.envelope.clone();
        let mut messages = self.messages.as_slice();
        if let Some((first, rest)) = messages.split_first()
            && hint(first) == Some("instructions")
            && let Content::Text(text) = &first.content
        {
            object.insert("instructions".into(), Value::String(text.clone()));
            messages = rest;
        }
        let input = match messages {
            [only] if hint(only) == Some("input") && only.role == Role::User => match &only.content {
                Content::Text(text) => Value::String(text.clone()),
                _ => Value::Array(export_items(messages)),
            },
            _ => Value::Array(export_items(messages)),
        };
        object.insert("input".into(), input);
        Value::Object(object)
    }
}

fn hint(message: &Message) -> Option<&str> {
    message.extras.get(RESPONSES_HINT_KEY).and_then(Value::as_str)
}

/// The kind of an input item: its `type`, or `message` for the short `{role, content}`.
pub(crate) fn item_kind(item: &Map<String, Value>) -> Option<&str> {
    match item.get("type") {
        Some(Value::String(kind)) => Some(kind),
        None if item.contains_key("role") => Some("message"),
        _ => None,
    }
}

/// The calls a client runs, each with the output item type that answers it.
const CLIENT_CALLS: [(&str, &str); 3] = [
    ("function_call", "function_call_output"),
    ("custom_tool_call", "custom_tool_call_output"),
    ("local_shell_call", "local_shell_call_output"),
];

/// The calls of hosted tools, run by the server within the response that made them: no
/// output item answers them.
const HOSTED_CALLS: [&str; 6] = [
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
];

/// The name a `local_shell_call` is read under (it has none of its own).
pub const LOCAL_SHELL_CALL_NAME: &str = "local_shell";

/// Items of an assistant turn: what the model produced in one response.
fn is_turn_item(item: &Map<String, Value>) -> bool {
    match item_kind(item) {
        Some("reasoning" | COMPACTION_ITEM) => true,
        Some(kind) if CLIENT_CALLS.iter().any(|(call, _)| *call == kind) || HOSTED_CALLS.contains(&kind) => true,
        Some("message") => item.get("role").and_then(Value::as_str) == Some("assistant"),
        _ => false,
    }
}

fn import_items(items: Vec<Value>, source_name: &str) -> Result<Vec<Message>, ResponsesError> {
    let mut messages = Vec::new();
    let mut turn: Vec<Map<String, Value>> = Vec::new();
    // The index of the turn's last item, which a turn's error names.
    let mut turn_end = 0;
    for (index, item) in items.into_iter().enumerate() {
        let Value::Object(item) = item else {
            return Err(FormatError::at(
                source_name,
                index,
                format!("an input item must be an object, not {}", kind_of(&item)),
            )
            .into());
        };
        if is_turn_item(&item) {
            turn.push(item);
            turn_end = index;
            continue;
        }
        if !turn.is_empty() {
            messages.push(
                assistant_turn(std::mem::take(&mut turn)).map_err(|p| FormatError::at(source_name, turn_end, p))?,
            );
        }
        let message = match item_kind(&item) {
            Some("message") => match item.get("role").and_then(Value::as_str) {
                Some("user" | "system" | "developer") => input_message(item),
                Some(role) => {
                    return Err(ResponsesError::Unsupported(format!(
                        "input item {index} is a message of role `{role}`"
                    )));
                }
                None => Err("a message item has no `role` string".to_owned()),
            },
            Some(kind) if CLIENT_CALLS.iter().any(|(_, output)| *output == kind) => tool_output(item),
            Some(kind) => {
                return Err(ResponsesError::Unsupported(format!(
                    "input item {index} is of type `{kind}`"
                )));
            }
            None => Err("an input item has neither a `type` nor a `role`".to_owned()),
        };
        messages.push(message.map_err(|p| FormatError::at(source_name, index, p))?);
    }
    if !turn.is_empty() {
        messages.push(assistant_turn(turn).map_err(|p| FormatError::at(source_name, turn_end, p))?);
    }
    Ok(messages)
}

fn string_field(item: &Map<String, Value>, field: &str, what: &str) -> Result<String, String> {
    match item.get(field) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(format!("{what}: `{field}` must be a string, not {}", kind_of(other))),
        None => Err(format!("{what} has no `{field}`")),
    }
}

/// Refuses an item that uses a key of the crate's namespace: its unknown fields become
/// the message's extras.
fn refuse_reserved_keys(item: &Map<String, Value>) -> Result<(), String> {
    item.keys().try_for_each(|key| refuse_reserved_key(key, ""))
}

/// A `user` / `system` / `developer` message item (an assistant one is a turn item).
fn input_message(mut item: Map<String, Value>) -> Result<Message, String> {
    refuse_reserved_keys(&item)?;
    let role = string_field(&item, "role", "a message item")?;
    item.shift_remove("role");
    let mut message = bare_message(Role::from(role.as_str()));
    message.content = take_content(&mut item, "content")?;
    message.extras = item;
    Ok(message)
}

/// A `function_call_output` / `custom_tool_call_output` / `local_shell_call_output` item:
/// the answer to `call_id`.
fn tool_output(mut item: Map<String, Value>) -> Result<Message, String> {
    refuse_reserved_keys(&item)?;
    let call_id = string_field(&item, "call_id", "a tool output item")?;
    item.shift_remove("call_id");
    let mut message = bare_message(Role::Tool);
    message.content = take_content(&mut item, "output")?;
    message.tool_call_id = Some(call_id);
    message.extras = item;
    Ok(message)
}

/// The content under `key`, taken out of `item` (absent when there is none).
fn take_content(item: &mut Map<String, Value>, key: &str) -> Result<Content, String> {
    item.shift_remove(key).map_or(Ok(Content::Absent), Content::from_value)
}

/// One assistant message from the items of a turn; the items themselves are kept under
/// [`RESPONSES_HINT_KEY`].
fn assistant_turn(items: Vec<Map<String, Value>>) -> Result<Message, String> {
    let (content, tool_calls) = turn_parts(items.iter())?;
    let mut message = bare_message(Role::Assistant);
    message.content = content;
    message.tool_calls = tool_calls;
    // The provider's own compaction of what came before: opaque, and never ours to
    // summarize, elide or cut away from its turn.
    message.sticky = items.iter().any(|item| item_kind(item) == Some(COMPACTION_ITEM));
    let items = items.into_iter().map(Value::Object).collect();
    message.extras.insert(RESPONSES_HINT_KEY.into(), Value::Array(items));
    Ok(message)
}

/// A turn's content and calls. The content is its assistant messages' `output_text`,
/// joined by newlines; when the turn also holds reasoning or hosted tools' calls, it is
/// parts instead, in the items' order: each text, and for each such item a
/// [`Part::Other`] that counters count and the summarizer reads (see
/// [`context_view`]).
pub(crate) fn turn_parts<'a>(
    items: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> Result<(Content, Vec<ToolCall>), String> {
    let mut parts = Vec::new();
    let mut in_context = false;
    let mut calls = Vec::new();
    for item in items {
        match item_kind(item) {
            Some("message") => match item.get("content") {
                Some(Value::String(text)) => parts.push(Part::text(text.clone())),
                Some(Value::Array(content)) => {
                    for part in content {
                        if let Some(text) = part.get("text").and_then(Value::as_str)
                            && matches!(part.get("type").and_then(Value::as_str), Some("output_text" | "text"))
                        {
                            parts.push(Part::text(text));
                        }
                    }
                }
                _ => {}
            },
            Some(kind) if is_context_kind(kind) => {
                parts.push(Part::Other(context_view(item)));
                in_context = true;
            }
            Some(kind @ ("function_call" | "custom_tool_call")) => {
                let what = format!("a {kind} item");
                let arguments = if kind == "function_call" { "arguments" } else { "input" };
                calls.push(ToolCall {
                    id: string_field(item, "call_id", &what)?,
                    name: string_field(item, "name", &what)?,
                    arguments: string_field(item, arguments, &what)?,
                    extras: Map::new(),
                });
            }
            Some("local_shell_call") => {
                let what = "a local_shell_call item";
                let action = match item.get("action") {
                    Some(action @ Value::Object(_)) => action.to_string(),
                    Some(other) => return Err(format!("{what}: `action` must be an object, not {}", kind_of(other))),
                    None => return Err(format!("{what} has no `action`")),
                };
                calls.push(ToolCall {
                    id: string_field(item, "call_id", what)?,
                    name: LOCAL_SHELL_CALL_NAME.to_owned(),
                    arguments: action,
                    extras: Map::new(),
                });
            }
            _ => {}
        }
    }
    let content = if in_context {
        Content::Parts(parts)
    } else if parts.is_empty() {
        Content::Absent
    } else {
        let texts: Vec<&str> = parts.iter().filter_map(Part::text_ref).collect();
        Content::Text(texts.join("\n"))
    };
    Ok((content, calls))
}

/// The kinds of turn items each read as one [`Part::Other`] of the turn's content (a
/// view of the item), in the items' order: reasoning, compaction, hosted calls.
pub(crate) fn is_context_kind(kind: &str) -> bool {
    kind == "reasoning" || kind == COMPACTION_ITEM || HOSTED_CALLS.contains(&kind)
}

/// What the model has in context of a reasoning item or a hosted tool's call, as a part
/// of its turn's content: counted by the counters and read by the summarizer (the item
/// itself is written back from the turn's original items).
///
/// - A hosted call is the item without its `id` and `status` (bookkeeping): its query,
///   code, outputs, results or MCP output are what the model read. A generated image is
///   counted as an image, not as its base64 ([`crate::message::media`]).
/// - A reasoning item is its `type` and `summary` only. Its `encrypted_content` stands
///   for reasoning tokens OpenAI drops from the context of later turns; the upstream's
///   bill (the calibrated counter) says what the current turn's reasoning costs.
fn context_view(item: &Map<String, Value>) -> Value {
    let keep: &dyn Fn(&str) -> bool = if item_kind(item) == Some("reasoning") {
        &|key| key == "type" || key == "summary"
    } else {
        &|key| key != "id" && key != "status"
    };
    Value::Object(
        item.iter()
            .filter(|(key, _)| keep(key))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
    )
}

fn export_items(messages: &[Message]) -> Vec<Value> {
    // The output type each call expects (a custom tool's answer is a custom output, a
    // local shell call's a local shell output), for answers that do not say.
    let mut output_types = std::collections::HashMap::new();
    let mut items = Vec::new();
    for message in messages {
        match message.role {
            Role::Assistant => {
                if let Some(Value::Array(turn)) = message.extras.get(RESPONSES_HINT_KEY) {
                    for item in turn {
                        let kind = item.get("type").and_then(Value::as_str);
                        if let Some((_, output)) = CLIENT_CALLS.iter().find(|(call, _)| Some(*call) == kind)
                            && let Some(id) = item.get("call_id").and_then(Value::as_str)
                        {
                            output_types.insert(id.to_owned(), *output);
                        }
                    }
                }
                items.extend(export_turn(message));
            }
            Role::Tool => items.push(export_tool_output(message, &output_types)),
            _ => items.push(export_input_message(message)),
        }
    }
    items
}

/// The original items of an assistant turn, when the message still says what they say
/// (then, and only then, they are written back verbatim).
pub(crate) fn message_items(message: &Message) -> Option<&Vec<Value>> {
    let Some(Value::Array(items)) = message.extras.get(RESPONSES_HINT_KEY) else {
        return None;
    };
    let maps: Option<Vec<&Map<String, Value>>> = items.iter().map(Value::as_object).collect();
    let (content, calls) = turn_parts(maps?).ok()?;
    (content == message.content && calls == message.tool_calls).then_some(items)
}

fn export_turn(message: &Message) -> Vec<Value> {
    if let Some(items) = message_items(message) {
        return items.clone();
    }
    // A turn made here (or changed): its text as an output message, then its calls. The
    // views of reasoning and hosted calls are not items (their ids and encrypted content
    // are not in them): a changed turn loses them, as a summarized one does.
    let mut items = Vec::new();
    let text = message.content.text();
    if !text.is_empty() {
        items.push(serde_json::json!({
            "type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }));
    }
    for call in &message.tool_calls {
        items.push(serde_json::json!({
            "type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments
        }));
    }
    items
}

fn export_tool_output(message: &Message, output_types: &std::collections::HashMap<String, &str>) -> Value {
    let mut object = Map::new();
    let call_id = message.tool_call_id.clone().unwrap_or_default();
    let kind = match message.extras.get("type") {
        Some(kind) => kind.clone(),
        None => (*output_types.get(&call_id).unwrap_or(&"function_call_output")).into(),
    };
    object.insert("type".into(), kind);
    object.insert("call_id".into(), Value::String(call_id));
    if message.content != Content::Absent {
        object.insert("output".into(), message.content.to_value());
    }
    append_extras(&mut object, &message.extras);
    Value::Object(object)
}

fn export_input_message(message: &Message) -> Value {
    let mut object = Map::new();
    if let Some(kind) = message.extras.get("type") {
        object.insert("type".into(), kind.clone());
    }
    object.insert("role".into(), Value::String(message.role.as_str().into()));
    insert_content(&mut object, &message.content);
    append_extras(&mut object, &message.extras);
    Value::Object(object)
}
