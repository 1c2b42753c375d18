//! A binding's messages in and out: the library's codecs, and the shape a caller gave.
//!
//! The Python and Node bindings share this module (one rule for both). A caller hands
//! over what its SDK produced: a list of OpenAI chat messages, a
//! list of Anthropic Messages turns (with the `system` prompt beside it, as the SDK takes
//! it), a list of Responses API input items, or a whole request object. The library reads
//! each through its own lossless codec ([`Document`], [`ResponsesRequest`]); this module
//! only wraps a bare list into the request object the codec reads, and unwraps the
//! written-back object into a list again, so that the caller gets back the shape it gave.

use super::responses::{ResponsesError, ResponsesRequest};
use super::{Document, Format, FormatError, detect};
use crate::message::Message;
use serde_json::{Map, Value};

/// The name errors give the caller's input.
const SOURCE: &str = "messages";

/// A wire format the binding reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// One of the library's document formats.
    Document(Format),
    /// OpenAI Responses API input items (or a whole request).
    Responses,
}

impl WireFormat {
    /// The format's name, as the bindings spell it.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Document(format) => format.name(),
            WireFormat::Responses => "responses",
        }
    }
}

/// A format name from a binding's caller: `auto` (`None`), a document format, or `responses`.
pub fn parse_format(name: &str) -> Result<Option<WireFormat>, String> {
    match name.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(None),
        "responses" => Ok(Some(WireFormat::Responses)),
        other => other
            .parse::<Format>()
            .map(|f| Some(WireFormat::Document(f)))
            .map_err(|_| {
                format!("unknown format `{name}` (expected auto, openai, anthropic, responses or mini-swe-agent)")
            }),
    }
}

/// What was read, and how to write messages back in the caller's shape.
#[derive(Clone, Debug)]
pub struct Wire {
    /// The caller gave a bare list (not a request object).
    bare_list: bool,
    body: Body,
}

#[derive(Clone, Debug)]
enum Body {
    Document(Document),
    Responses(ResponsesRequest),
}

/// Input that cannot be read: the message index (in the caller's list) when one message
/// is at fault, and the problem.
#[derive(Clone, Debug)]
pub struct WireError {
    /// The message index, when the problem is in one message.
    pub index: Option<usize>,
    /// What is wrong.
    pub problem: String,
    /// The input is well-formed but uses parts the codec does not model.
    pub unsupported: bool,
}

impl From<FormatError> for WireError {
    fn from(error: FormatError) -> Self {
        WireError {
            index: error.index,
            problem: error.problem,
            unsupported: false,
        }
    }
}

impl WireError {
    fn whole(problem: impl Into<String>) -> Self {
        WireError {
            index: None,
            problem: problem.into(),
            unsupported: false,
        }
    }
}

/// The format of `value` when the caller said `auto`: a list with any item carrying a
/// top-level `type` is Responses items (chat messages and Messages turns have none); an
/// object with `input` and no `messages` is a Responses request; else the library's
/// detection, over a list wrapped as `{messages}` (and `system` when given). The list is
/// moved into the wrapper and back, never copied.
fn detect_format(value: Value, system: bool) -> Result<(WireFormat, Value), WireError> {
    let responses = match &value {
        Value::Array(items) => items.iter().any(|item| item.get("type").is_some_and(Value::is_string)),
        Value::Object(object) => object.contains_key("input") && !object.contains_key("messages"),
        _ => false,
    };
    if responses {
        return Ok((WireFormat::Responses, value));
    }
    let format = match value {
        Value::Array(_) => {
            let probe = wrap_messages(value, system.then_some(Value::Null));
            let format = detect(&probe);
            let Value::Object(mut object) = probe else {
                unreachable!("wrap_messages builds an object")
            };
            let list = object.remove("messages").unwrap_or(Value::Array(Vec::new()));
            return format
                .map(|f| (WireFormat::Document(f), list))
                .map_err(|e| WireError::whole(e.problem));
        }
        ref other => detect(other),
    };
    format
        .map(|f| (WireFormat::Document(f), value))
        .map_err(|e| WireError::whole(e.problem))
}

fn wrap_messages(list: Value, system: Option<Value>) -> Value {
    let mut object = Map::new();
    if let Some(system) = system {
        object.insert("system".into(), system);
    }
    object.insert("messages".into(), list);
    Value::Object(object)
}

/// Reads the caller's `value` (a list or a request object) in `format` (`None`: detect),
/// with Anthropic's `system` beside a bare list of turns.
pub fn read(
    value: Value,
    format: Option<WireFormat>,
    system: Option<Value>,
) -> Result<(Vec<Message>, Wire), WireError> {
    let (format, value) = match format {
        Some(format) => (format, value),
        None => detect_format(value, system.is_some())?,
    };
    let bare_list = value.is_array();
    if system.is_some() && !(bare_list && format == WireFormat::Document(Format::Anthropic)) {
        return Err(WireError::whole(
            "`system` goes with a list of Anthropic Messages turns (a request object carries its own)",
        ));
    }
    match format {
        WireFormat::Responses => {
            let request = if bare_list {
                let mut object = Map::new();
                object.insert("input".into(), value);
                Value::Object(object)
            } else {
                value
            };
            let request = ResponsesRequest::from_value(request, SOURCE).map_err(|e| match e {
                ResponsesError::Unsupported(problem) => WireError {
                    index: None,
                    problem,
                    unsupported: true,
                },
                ResponsesError::Invalid(error) => error.into(),
            })?;
            let envelope = request.with_messages(Vec::new());
            Ok((
                request.into_messages(),
                Wire {
                    bare_list,
                    body: Body::Responses(envelope),
                },
            ))
        }
        WireFormat::Document(Format::Anthropic) if bare_list => {
            let document = Document::from_value(wrap_messages(value, system), Some(Format::Anthropic), SOURCE)?;
            Ok(split(document, bare_list))
        }
        WireFormat::Document(format) => {
            let document = Document::from_value(value, Some(format), SOURCE)?;
            Ok(split(document, bare_list))
        }
    }
}

/// The messages, and the document's envelope to write them back in (the messages are
/// moved out, not copied).
fn split(document: Document, bare_list: bool) -> (Vec<Message>, Wire) {
    let envelope = document.with_messages(Vec::new());
    (
        document.into_messages(),
        Wire {
            bare_list,
            body: Body::Document(envelope),
        },
    )
}

impl Wire {
    /// An empty conversation of `format`, to write messages in (a session's replay).
    pub fn empty(format: WireFormat) -> Wire {
        let body = match format {
            WireFormat::Responses => Body::Responses(
                ResponsesRequest::from_value(serde_json::json!({ "input": [] }), SOURCE)
                    .expect("an empty Responses request is readable"),
            ),
            WireFormat::Document(format) => Body::Document(Document::from_messages(format, Vec::new())),
        };
        Wire { bare_list: true, body }
    }

    /// The format read.
    pub fn format(&self) -> WireFormat {
        match &self.body {
            Body::Document(document) => WireFormat::Document(document.format()),
            Body::Responses(_) => WireFormat::Responses,
        }
    }

    /// `messages` written back in the caller's format: the list, and the whole request
    /// object when the caller gave one (`None` for a bare list; Anthropic's `system`
    /// stays where it was: it is sticky).
    pub fn write(&self, messages: Vec<Message>) -> (Value, Option<Value>) {
        let (value, key) = match &self.body {
            Body::Document(document) => (document.with_messages(messages).to_value(), "messages"),
            Body::Responses(request) => (request.with_messages(messages).to_value(), "input"),
        };
        match value {
            // An OpenAI document read from a bare list writes a bare list.
            Value::Array(_) => (value, None),
            Value::Object(mut object) if self.bare_list => {
                (object.remove(key).unwrap_or(Value::Array(Vec::new())), None)
            }
            Value::Object(object) => {
                let list = object.get(key).cloned().unwrap_or(Value::Array(Vec::new()));
                (list, Some(Value::Object(object)))
            }
            other => (Value::Array(Vec::new()), Some(other)),
        }
    }

    /// [`Wire::write`]'s list alone.
    pub fn write_list(&self, messages: Vec<Message>) -> Value {
        self.write(messages).0
    }
}
