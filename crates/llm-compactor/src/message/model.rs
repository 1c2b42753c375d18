//! [`Message`], [`Role`] and [`ToolCall`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::content::Content;

/// Who speaks a message.
///
/// The four roles every provider knows are variants; OpenAI's `developer` role is kept
/// apart from `system` so that it exports back as itself; any other role string (for
/// example mini-swe-agent's closing `exit` record) is preserved as [`Role::Other`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A system prompt.
    System,
    /// OpenAI's `developer` role: a system prompt by another name.
    Developer,
    /// The user, or the harness speaking as the user.
    User,
    /// The model.
    Assistant,
    /// A tool result answering one tool call.
    Tool,
    /// Any other role string, kept verbatim.
    Other(String),
}

impl Role {
    /// The wire name of the role.
    ///
    /// ```
    /// use llm_compactor::message::Role;
    /// assert_eq!(Role::Tool.as_str(), "tool");
    /// assert_eq!(Role::from("exit").as_str(), "exit");
    /// ```
    pub fn as_str(&self) -> &str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::Other(other) => other,
        }
    }

    /// True for `system` and `developer`: the roles that carry a system prompt.
    pub fn is_system_prompt(&self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

impl From<&str> for Role {
    fn from(value: &str) -> Self {
        match value {
            "system" => Role::System,
            "developer" => Role::Developer,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => Role::Other(other.to_owned()),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Ok(Role::from(raw.as_str()))
    }
}

/// One tool call requested by an assistant turn.
///
/// `arguments` is the raw arguments string exactly as the model produced it (OpenAI
/// sends a JSON string; Anthropic's `input` object is stored as its compact JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id that the answering tool message names in `tool_call_id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The raw arguments string.
    pub arguments: String,
    /// Every other field of the call on the wire (`type`, `index`, ...), kept verbatim.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extras: Map<String, Value>,
}

impl ToolCall {
    /// A call with no extra wire fields.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            extras: Map::new(),
        }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One message of a conversation, in a provider-neutral shape that loses nothing.
///
/// ```
/// use llm_compactor::message::{Message, ToolCall};
///
/// let system = Message::system("You are a careful coding agent.");
/// assert!(system.is_sticky());
///
/// let ask = Message::assistant("Reading it.")
///     .with_tool_calls(vec![ToolCall::new("call_1", "fs_read", r#"{"path":"src/lib.rs"}"#)]);
/// let answer = Message::tool("call_1", "pub mod message;");
/// assert_eq!(answer.tool_call_id.as_deref(), Some("call_1"));
/// assert!(!ask.is_sticky() && !answer.is_sticky());
/// ```
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "MessageRepr")]
pub struct Message {
    /// A stable id (the session transcript's envelope id), when the message has one.
    pub id: Option<String>,
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
    /// The tool calls an assistant turn asked for.
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the id of the call it answers.
    pub tool_call_id: Option<String>,
    /// The optional `name` field (a tool result's tool name on some wires).
    pub name: Option<String>,
    /// Explicitly sticky: never summarized, elided or trimmed.
    pub sticky: bool,
    /// A system prompt (sticky). Set by the importers for `system`/`developer` roles and
    /// Anthropic's top-level `system`. In the native JSON form it defaults to what the
    /// role implies (true for `system` and `developer`) and is written only when it
    /// differs from that, so `{"role": "system", ...}` is sticky however it was written.
    pub sysprompt: bool,
    /// Injected at this depth from the end by the harness (sticky).
    pub depth: Option<u32>,
    /// Every wire field we do not model, kept verbatim so that export is lossless.
    pub extras: Map<String, Value>,
}

impl Message {
    /// A message of `role` with text content and nothing else.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        let sysprompt = role.is_system_prompt();
        Message {
            id: None,
            role,
            content: Content::Text(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            sticky: false,
            sysprompt,
            depth: None,
            extras: Map::new(),
        }
    }

    /// A system prompt (sticky).
    pub fn system(text: impl Into<String>) -> Self {
        Message::new(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Message::new(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message::new(Role::Assistant, text)
    }

    /// A tool result answering `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, text: impl Into<String>) -> Self {
        let mut message = Message::new(Role::Tool, text);
        message.tool_call_id = Some(tool_call_id.into());
        message
    }

    /// The same message with these tool calls.
    pub fn with_tool_calls(mut self, tool_calls: Vec<ToolCall>) -> Self {
        self.tool_calls = tool_calls;
        self
    }

    /// The same message with this id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same message, explicitly sticky.
    pub fn sticky(mut self) -> Self {
        self.sticky = true;
        self
    }

    /// The same message, injected at `depth`.
    pub fn at_depth(mut self, depth: u32) -> Self {
        self.depth = Some(depth);
        self
    }

    /// Equal in everything but the `id` (a message that was recorded, or rebuilt by a
    /// pass, may or may not carry one).
    pub fn eq_ignoring_id(&self, other: &Message) -> bool {
        self.eq_for_digest(other)
            && self.name == other.name
            && self.tool_calls == other.tool_calls
            && self.extras == other.extras
    }

    /// True when every field [`crate::message::message_digest`] covers is equal (role,
    /// content, the flags, the tool calls' ids, names and arguments, `tool_call_id`,
    /// depth), so both messages have the same digest; the id, the name and the wire
    /// extras are not compared. A check "is this still the prefix that was digested" by
    /// memory comparison instead of SHA-256, and without walking the extras' maps (a
    /// Responses turn keeps its original items there).
    ///
    /// ```
    /// use llm_compactor::message::{message_digest, Message};
    /// let mut a = Message::user("hi");
    /// let mut b = Message::user("hi").with_id("m1");
    /// b.extras.insert("raw".into(), serde_json::json!({"provider": "x"}));
    /// assert!(a.eq_for_digest(&b));
    /// assert_eq!(message_digest(&a), message_digest(&b));
    /// a.sticky = true;
    /// assert!(!a.eq_for_digest(&b));
    /// ```
    pub fn eq_for_digest(&self, other: &Message) -> bool {
        self.role == other.role
            // Contents that differ as values may still write the same JSON (absent and
            // `null` content both digest as `null`): the digest reads the JSON.
            && (self.content == other.content || self.content.to_value() == other.content.to_value())
            && self.sticky == other.sticky
            && self.sysprompt == other.sysprompt
            && self.tool_call_id == other.tool_call_id
            && self.depth == other.depth
            && self.tool_calls.len() == other.tool_calls.len()
            && self
                .tool_calls
                .iter()
                .zip(&other.tool_calls)
                .all(|(a, b)| a.id == b.id && a.name == b.name && a.arguments == b.arguments)
    }

    /// Sticky messages are never summarized, elided or trimmed: an explicit flag, a
    /// system prompt, or a message injected at a depth.
    pub fn is_sticky(&self) -> bool {
        self.sticky || self.sysprompt || self.depth.is_some()
    }

    /// True for a tool result (role `tool`).
    pub fn is_tool_result(&self) -> bool {
        self.role == Role::Tool
    }

    /// The content as plain text (text parts joined; see [`Content::text`]).
    pub fn text(&self) -> String {
        self.content.text()
    }
}

/// The native JSON form of a [`Message`] as it is read: every field optional, and
/// `sysprompt` defaulting to what the role implies.
#[derive(Deserialize)]
struct MessageRepr {
    #[serde(default)]
    id: Option<String>,
    role: Role,
    #[serde(default)]
    content: Content,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    sticky: bool,
    #[serde(default)]
    sysprompt: Option<bool>,
    #[serde(default)]
    depth: Option<u32>,
    #[serde(default)]
    extras: Map<String, Value>,
}

impl From<MessageRepr> for Message {
    fn from(repr: MessageRepr) -> Self {
        let sysprompt = repr.sysprompt.unwrap_or_else(|| repr.role.is_system_prompt());
        Message {
            id: repr.id,
            role: repr.role,
            content: repr.content,
            tool_calls: repr.tool_calls,
            tool_call_id: repr.tool_call_id,
            name: repr.name,
            sticky: repr.sticky,
            sysprompt,
            depth: repr.depth,
            extras: repr.extras,
        }
    }
}

/// The native JSON form of a [`Message`] as it is written: empty fields left out, and
/// `sysprompt` only where it differs from what the role implies. The session writer
/// writes the same bytes by hand (`session/message_line.rs`): a field changed here must
/// change there (`tests/message_digest.rs` compares the two).
#[derive(Serialize)]
struct MessageOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    role: &'a Role,
    #[serde(skip_serializing_if = "Content::is_absent")]
    content: &'a Content,
    #[serde(skip_serializing_if = "<[ToolCall]>::is_empty")]
    tool_calls: &'a [ToolCall],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    sticky: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    sysprompt: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    depth: Option<u32>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    extras: &'a Map<String, Value>,
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageOut {
            id: self.id.as_deref(),
            role: &self.role,
            content: &self.content,
            tool_calls: &self.tool_calls,
            tool_call_id: self.tool_call_id.as_deref(),
            name: self.name.as_deref(),
            sticky: self.sticky,
            sysprompt: (self.sysprompt != self.role.is_system_prompt()).then_some(self.sysprompt),
            depth: self.depth,
            extras: &self.extras,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Message {
        serde_json::from_str(json).expect("a native message")
    }

    #[test]
    fn a_system_or_developer_message_read_from_native_json_is_sticky() {
        assert!(read(r#"{"role":"system","content":"rules"}"#).is_sticky());
        assert!(read(r#"{"role":"developer","content":"rules"}"#).is_sticky());
        assert!(!read(r#"{"role":"user","content":"hi"}"#).is_sticky());
    }

    #[test]
    fn sysprompt_is_written_only_where_it_differs_from_the_role_and_round_trips() {
        let system = Message::system("rules");
        assert_eq!(
            serde_json::to_string(&system).unwrap(),
            r#"{"role":"system","content":"rules"}"#
        );
        let mut demoted = Message::system("not a prompt");
        demoted.sysprompt = false;
        let mut promoted = Message::user("a prompt");
        promoted.sysprompt = true;
        for message in [system, demoted, promoted] {
            let text = serde_json::to_string(&message).unwrap();
            assert_eq!(read(&text), message, "{text}");
        }
    }
}
