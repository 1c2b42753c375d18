//! [`Content`]: what a message says, as plain text or as structured parts.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A message's content.
///
/// The wire distinguishes a missing `content` key, an explicit `null`, a string and an
/// array of parts; so do we, because export must give back the same JSON value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Content {
    /// No `content` key at all.
    #[default]
    Absent,
    /// `"content": null` (typical of an assistant turn that only calls tools).
    Null,
    /// Plain text.
    Text(String),
    /// Structured parts (text, images, thinking, anything unknown).
    Parts(Vec<Part>),
}

impl Content {
    /// True when there was no `content` key.
    pub fn is_absent(&self) -> bool {
        matches!(self, Content::Absent)
    }

    /// The text of the content: a string as is; for parts, the text of the text and
    /// thinking parts joined by newlines (other parts contribute nothing).
    ///
    /// ```
    /// use llm_compactor::message::{Content, Part};
    /// let parts = Content::Parts(vec![Part::text("a"), Part::text("b")]);
    /// assert_eq!(parts.text(), "a\nb");
    /// assert_eq!(Content::Null.text(), "");
    /// ```
    pub fn text(&self) -> String {
        match self {
            Content::Absent | Content::Null => String::new(),
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => {
                let texts: Vec<&str> = parts.iter().filter_map(Part::text_ref).collect();
                texts.join("\n")
            }
        }
    }

    /// The size of the content in Unicode scalar values, as every threshold of the
    /// compactor measures it: text is its chars; a text or thinking part its text's
    /// chars; any other part the chars of its compact JSON, except that an image, audio
    /// clip or file counts as [`super::media::MEDIA_PART_CHARS`] instead of its inline
    /// base64 (see [`super::media`]).
    pub fn chars(&self) -> usize {
        match self {
            Content::Absent | Content::Null => 0,
            Content::Text(text) => text.chars().count(),
            Content::Parts(parts) => parts.iter().map(Part::chars).sum(),
        }
    }

    /// The JSON value of the content as the wire carries it (`Absent` gives `null`).
    pub fn to_value(&self) -> Value {
        match self {
            Content::Absent | Content::Null => Value::Null,
            Content::Text(text) => Value::String(text.clone()),
            Content::Parts(parts) => Value::Array(parts.iter().map(Part::to_value).collect()),
        }
    }

    /// Content from a wire JSON value: a string, `null`, or an array of part objects.
    ///
    /// # Errors
    /// A number, boolean or object, or an array element that is not an object.
    pub fn from_value(value: Value) -> Result<Self, String> {
        match value {
            Value::Null => Ok(Content::Null),
            Value::String(text) => Ok(Content::Text(text)),
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| Part::from_value(item).map_err(|e| format!("content part {i}: {e}")))
                .collect::<Result<Vec<_>, _>>()
                .map(Content::Parts),
            other => Err(format!(
                "content must be a string, null or an array of parts, not {}",
                kind_of(&other)
            )),
        }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.to_owned())
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

/// The same JSON as [`Content::to_value`], written without building it: a message's
/// content is serialized on every transcript append, and the value was a copy of it.
impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Absent | Content::Null => serializer.serialize_unit(),
            Content::Text(text) => serializer.serialize_str(text),
            Content::Parts(parts) => serializer.collect_seq(parts.iter().map(PartOut)),
        }
    }
}

/// A part as [`Part::to_value`] gives it. A text or thinking part with no extras is
/// written directly (`type`, then the text field, the order `to_value` inserts them in);
/// with extras, whose keys may repeat `type` or the text field, through its value.
struct PartOut<'a>(&'a Part);

impl Serialize for PartOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (kind, field, text) = match self.0 {
            Part::Text { text, extras } if extras.is_empty() => ("text", "text", text),
            Part::Thinking { thinking, extras } if extras.is_empty() => ("thinking", "thinking", thinking),
            Part::ToolUse { id } => ("tool_use", "id", id),
            Part::Other(value) => return value.serialize(serializer),
            part => return part.to_value().serialize(serializer),
        };
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", kind)?;
        map.serialize_entry(field, text)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Content::from_value(value).map_err(D::Error::custom)
    }
}

/// One structured content part.
///
/// Text and thinking are typed because counting and rendering need their text;
/// everything else (images, redacted thinking, provider-specific blocks) is
/// [`Part::Other`] and travels as the exact JSON object it was.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    /// `{"type": "text", "text": ...}` plus any other fields (the Responses API's
    /// `input_text` and `output_text` parts too, their `type` kept among the extras).
    Text {
        /// The text.
        text: String,
        /// Every other field of the part (`cache_control`, `citations`, ...).
        extras: Map<String, Value>,
    },
    /// `{"type": "thinking", "thinking": ...}` (Anthropic extended thinking) plus any
    /// other fields (`signature`).
    Thinking {
        /// The model's reasoning text.
        thinking: String,
        /// Every other field of the part.
        extras: Map<String, Value>,
    },
    /// Where an Anthropic `tool_use` block sat among an assistant turn's content blocks;
    /// the call itself lives in [`crate::message::Message::tool_calls`]. Other formats
    /// drop this marker on export.
    ToolUse {
        /// The id of the tool call that stood here.
        id: String,
    },
    /// Any other part, verbatim.
    Other(Value),
}

impl Part {
    /// A plain text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text {
            text: text.into(),
            extras: Map::new(),
        }
    }

    /// The part's `type` string.
    pub fn kind(&self) -> &str {
        match self {
            Part::Text { extras, .. } => extras.get("type").and_then(Value::as_str).unwrap_or("text"),
            Part::Thinking { .. } => "thinking",
            Part::ToolUse { .. } => "tool_use",
            Part::Other(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The text of a text or thinking part.
    pub fn text_ref(&self) -> Option<&str> {
        match self {
            Part::Text { text, .. } => Some(text),
            Part::Thinking { thinking, .. } => Some(thinking),
            Part::ToolUse { .. } | Part::Other(_) => None,
        }
    }

    /// The part's size in chars (see [`Content::chars`]).
    pub fn chars(&self) -> usize {
        match self {
            Part::Text { text, .. } => text.chars().count(),
            Part::Thinking { thinking, .. } => thinking.chars().count(),
            Part::ToolUse { .. } => 0,
            Part::Other(value) => super::media::other_part_chars(value),
        }
    }

    /// The part as a wire JSON object.
    pub fn to_value(&self) -> Value {
        match self {
            Part::Text { text, extras } => typed_object("text", "text", text, extras),
            Part::Thinking { thinking, extras } => typed_object("thinking", "thinking", thinking, extras),
            Part::ToolUse { id } => {
                let mut object = Map::new();
                object.insert("type".into(), Value::String("tool_use".into()));
                object.insert("id".into(), Value::String(id.clone()));
                Value::Object(object)
            }
            Part::Other(value) => value.clone(),
        }
    }

    /// A part from a wire JSON object. A `text` or `thinking` part whose text field is
    /// not a string is kept as [`Part::Other`], so nothing is lost. The exact shape
    /// [`Part::to_value`] gives a tool-use placeholder (`{"type": "tool_use", "id": ...}`
    /// and nothing else; a real `tool_use` block always has `name` and `input`) reads back
    /// as [`Part::ToolUse`], so a message's native serde form round-trips (the session
    /// transcript relies on it).
    ///
    /// ```
    /// use llm_compactor::message::Part;
    /// let placeholder = Part::ToolUse { id: "tu_1".into() };
    /// assert_eq!(Part::from_value(placeholder.to_value()), Ok(placeholder));
    /// ```
    ///
    /// # Errors
    /// The value is not a JSON object.
    pub fn from_value(value: Value) -> Result<Self, String> {
        let Value::Object(mut object) = value else {
            return Err(format!("a content part must be an object, not {}", kind_of(&value)));
        };
        let kind = object.get("type").and_then(Value::as_str).map(str::to_owned);
        if kind.as_deref() == Some("tool_use")
            && object.len() == 2
            && let Some(Value::String(id)) = object.get("id")
        {
            return Ok(Part::ToolUse { id: id.clone() });
        }
        // The Responses API's `input_text` / `output_text` parts are text too (counted and
        // rendered as text); their `type` stays among the extras, so it is written back.
        let typed_field = match kind.as_deref() {
            Some("text" | "input_text" | "output_text") => Some("text"),
            Some("thinking") => Some("thinking"),
            _ => None,
        };
        if let Some(field) = typed_field
            && matches!(object.get(field), Some(Value::String(_)))
        {
            let Some(Value::String(text)) = object.shift_remove(field) else {
                unreachable!("checked just above")
            };
            if kind.as_deref() == Some(field) {
                object.shift_remove("type");
            }
            return Ok(if field == "text" {
                Part::Text { text, extras: object }
            } else {
                Part::Thinking {
                    thinking: text,
                    extras: object,
                }
            });
        }
        Ok(Part::Other(Value::Object(object)))
    }
}

fn typed_object(kind: &str, field: &str, text: &str, extras: &Map<String, Value>) -> Value {
    let mut object = Map::new();
    object.insert("type".into(), Value::String(kind.into()));
    object.insert(field.into(), Value::String(text.into()));
    for (key, value) in extras {
        object.insert(key.clone(), value.clone());
    }
    Value::Object(object)
}

/// A short name for a JSON value's kind, for error messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
