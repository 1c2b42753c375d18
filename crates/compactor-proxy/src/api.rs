//! The three compacted APIs: how their requests are read, keyed and written back, and
//! where their responses report usage.
//!
//! Every API goes through the library's own importers and exporters
//! ([`llm_compactor::format::Document`] for chat completions and Messages,
//! [`ResponsesRequest`] for the Responses API), so a request the proxy does not change
//! is written back as it came, and the messages the engine sees are the ones `compactor
//! compact` would see for the same file.

use axum::http::HeaderMap;
use llm_compactor::Message;
use llm_compactor::format::responses::{ResponsesError, ResponsesRequest};
use llm_compactor::format::{Document, Format};
use llm_compactor::message::canonical_json;
use llm_compactor::plan::binding;
use llm_compactor::plan::breakpoints::{strip_marks, unmarked};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::identity::{Identity, SessionFrom, identify_with};

/// Which API a request speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
    /// `POST /v1/responses` (OpenAI's Responses API, its `input` items).
    Responses,
}

impl Api {
    /// The library's format of the route's conversation (`None` for the Responses API,
    /// which has its own codec).
    pub fn format(self) -> Option<Format> {
        match self {
            Api::OpenAi => Some(Format::OpenAi),
            Api::Anthropic => Some(Format::Anthropic),
            Api::Responses => None,
        }
    }

    /// The route's name in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "chat_completions",
            Api::Anthropic => "messages",
            Api::Responses => "responses",
        }
    }
}

/// A request's conversation and every other field, in the codec of its API.
pub enum Wire {
    /// Chat completions or Messages.
    Document(Document),
    /// A Responses API request.
    Responses(ResponsesRequest),
}

impl Wire {
    /// The conversation.
    pub fn messages(&self) -> &[Message] {
        match self {
            Wire::Document(document) => document.messages(),
            Wire::Responses(request) => request.messages(),
        }
    }

    /// The request with `messages` instead, as JSON; the messages are handed back (the
    /// caller keeps them: no copy of the conversation per rewritten request).
    pub fn to_value(&self, messages: Vec<Message>) -> (Value, Vec<Message>) {
        match self {
            Wire::Document(document) => {
                let document = document.with_messages(messages);
                (document.to_value(), document.into_messages())
            }
            Wire::Responses(request) => {
                let request = request.with_messages(messages);
                (request.to_value(), request.into_messages())
            }
        }
    }
}

/// Why a request body is not compacted.
#[derive(Debug)]
pub enum ParseError {
    /// Malformed for this API: a 400 (chat completions and Messages).
    Invalid(String),
    /// Well-formed but not modelled (a Responses request that continues a server-side
    /// conversation, or holds items the codec does not model, such as
    /// `item_reference`): forwarded unchanged.
    Unsupported(String),
}

/// A parsed request: the conversation, the model, and whether it streams.
pub struct Request {
    /// The conversation and every other top-level field.
    pub wire: Wire,
    /// The `model` field (empty when absent).
    pub model: String,
    /// `"stream": true`.
    pub stream: bool,
    /// Which session the request belongs to, and which tier said so.
    pub identity: Identity,
    /// A Messages request that turns thinking on (its signed blocks are bound to their
    /// prefix on models with preserved thinking).
    pub thinking: bool,
    /// The client itself asked for invalid thinking blocks to be dropped.
    pub drop_block: bool,
    /// A Messages request with thinking on whose own `context_management` leaves room
    /// for the provider's tool-result clearing in place of our aging stubs
    /// (`llm_compactor::format::context_management::may_clear_tool_uses`).
    pub may_clear_on_server: bool,
}

/// Reads a request body of `api`.
///
/// # Errors
/// [`ParseError::Invalid`]: the problem in words (invalid JSON, not a conversation), for
/// a 400; a Responses request that is malformed or not modelled is
/// [`ParseError::Unsupported`] (the upstream answers it as it would without us).
#[cfg(test)]
pub fn parse(api: Api, body: &[u8], headers: &HeaderMap, session_from: &[SessionFrom]) -> Result<Request, ParseError> {
    parse_value(api, read_json(api, body)?, headers, session_from)
}

fn invalid(api: Api, problem: String) -> ParseError {
    match api {
        Api::Responses => ParseError::Unsupported(problem),
        _ => ParseError::Invalid(problem),
    }
}

/// A request body of `api` read as a JSON object: read once per request, then asked for
/// its `context_management`, parsed ([`parse_value`]) and (Messages) kept for the
/// breakpoints of the forwarded request.
///
/// # Errors
/// As [`parse_value`], for a body that is not JSON or not an object.
pub fn read_json(api: Api, body: &[u8]) -> Result<Value, ParseError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| invalid(api, format!("request body is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(invalid(api, "request body must be a JSON object".to_owned()));
    }
    Ok(value)
}

/// Reads a request of `api` from its body's JSON ([`read_json`]).
///
/// # Errors
/// [`ParseError::Invalid`]: the problem in words (not a conversation), for a 400; a
/// Responses request that is malformed or not modelled is [`ParseError::Unsupported`]
/// (the upstream answers it as it would without us).
pub fn parse_value(
    api: Api,
    value: Value,
    headers: &HeaderMap,
    session_from: &[SessionFrom],
) -> Result<Request, ParseError> {
    let invalid = |problem: String| invalid(api, problem);
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let stream = value.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let (thinking, drop_block) = match api {
        Api::Anthropic => (binding::thinking_enabled(&value), binding::asks_drop_block(&value)),
        _ => (false, false),
    };
    let may_clear_on_server = thinking && llm_compactor::format::context_management::may_clear_tool_uses(&value);
    // The digest is worked out only for a request no client identity names.
    let identity = identify_with(headers, &value, session_from, || derived_key(api, &model, &value));
    let document = |value, format| {
        Document::from_value(value, Some(format), "request")
            .map(Wire::Document)
            .map_err(|e| invalid(e.to_string()))
    };
    let wire = match api {
        Api::OpenAi => document(value, Format::OpenAi)?,
        Api::Anthropic => {
            let mut wire = document(value, Format::Anthropic)?;
            // Breakpoints are where the client wants its cache this time, not what was
            // said: a mark that moved must not read as an edited history (see
            // `strip_marks`). The forwarded request gets the client's current ones back.
            if let Wire::Document(document) = &mut wire {
                strip_marks(document.messages_mut());
            }
            wire
        }
        Api::Responses => Wire::Responses(ResponsesRequest::from_value(value, "request").map_err(|e| match e {
            ResponsesError::Unsupported(why) => ParseError::Unsupported(why),
            ResponsesError::Invalid(e) => invalid(e.to_string()),
        })?),
    };
    Ok(Request {
        wire,
        model,
        stream,
        identity,
        thinking,
        drop_block,
        may_clear_on_server,
    })
}

/// The session key of a request without `x-compactor-session`: a digest of the model,
/// the system prompt and the first user message — what stays the same across the rounds
/// of one agent run and differs between runs.
fn derived_key(api: Api, model: &str, value: &Value) -> String {
    let messages = match api {
        Api::Responses => value.get("input").and_then(Value::as_array),
        _ => value.get("messages").and_then(Value::as_array),
    };
    let system = match api {
        Api::Anthropic => value.get("system").cloned().unwrap_or(Value::Null),
        Api::Responses => value.get("instructions").cloned().unwrap_or(Value::Null),
        Api::OpenAi => messages
            .and_then(|m| {
                m.iter()
                    .find(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")))
            })
            .and_then(|m| m.get("content").cloned())
            .unwrap_or(Value::Null),
    };
    let first_user = messages
        .and_then(|m| m.iter().find(|m| m.get("role").and_then(Value::as_str) == Some("user")))
        .and_then(|m| m.get("content").cloned())
        .or_else(|| value.get("input").filter(|input| input.is_string()).cloned())
        .unwrap_or(Value::Null);
    // A client's cache marks move between requests (the first user message is the last
    // one, and marked, only in the first round): they are no part of the identity.
    let (system, first_user) = match api {
        Api::Anthropic => (unmarked(&system), unmarked(&first_user)),
        _ => (system, first_user),
    };
    let mut hasher = Sha256::new();
    for part in [model.to_owned(), canonical_json(&system), canonical_json(&first_user)] {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    format!("auto-{}", &hex::encode(hasher.finalize())[..24])
}

/// The usage object a response (or one of its stream's events) carries, whichever API's
/// shape: `usage`, Anthropic's `message.usage`, the Responses API's `response.usage`.
pub fn usage_of(value: &Value) -> Option<&serde_json::Map<String, Value>> {
    [&value["usage"], &value["message"]["usage"], &value["response"]["usage"]]
        .into_iter()
        .find_map(Value::as_object)
}

/// The prompt tokens a response object reports (OpenAI `usage.prompt_tokens`; the
/// Responses API's `usage.input_tokens`, cached ones included, at the top of a response
/// or in its stream's `response.completed` event; Anthropic `usage.input_tokens` plus
/// cache reads and writes, which are prompt tokens too).
pub fn prompt_tokens(api: Api, value: &Value) -> Option<u64> {
    let usage = usage_of(value)?;
    let field = |name: &str| usage.get(name).and_then(Value::as_u64);
    match api {
        Api::OpenAi => field("prompt_tokens"),
        Api::Responses => field("input_tokens"),
        Api::Anthropic => {
            let cached: u64 = ["cache_read_input_tokens", "cache_creation_input_tokens"]
                .iter()
                .filter_map(|k| field(k))
                .sum();
            Some(field("input_tokens")? + cached)
        }
    }
}

/// True when an upstream error response says the prompt did not fit the context window.
pub fn is_context_length_error(status: u16, body: &[u8]) -> bool {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = value.get("error").unwrap_or(&value);
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str));
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| String::from_utf8_lossy(body).into_owned(), str::to_owned);
    llm_compactor::backend::http::is_context_length_exceeded(status, code, &message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_keys_follow_model_system_and_first_user_message() {
        let a = br#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"}]}"#;
        let b = br#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"u"},{"role":"assistant","content":"x"}]}"#;
        let c = br#"{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"v"}]}"#;
        let key = |body: &[u8]| {
            parse(Api::OpenAi, body, &HeaderMap::new(), &[])
                .map(|r| r.identity.key)
                .ok()
                .unwrap()
        };
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
    }

    #[test]
    fn responses_usage_is_read_from_the_response_and_from_its_completed_event() {
        let v = serde_json::json!({"object":"response","usage":{"input_tokens":42,"output_tokens":3}});
        assert_eq!(prompt_tokens(Api::Responses, &v), Some(42));
        let done = serde_json::json!({"type":"response.completed","response":{"usage":{"input_tokens":9}}});
        assert_eq!(prompt_tokens(Api::Responses, &done), Some(9));
        let created = serde_json::json!({"type":"response.created","response":{"usage":null}});
        assert_eq!(prompt_tokens(Api::Responses, &created), None);
    }

    #[test]
    fn a_responses_session_is_keyed_by_its_instructions_and_first_user_input() {
        let key = |body: &[u8]| {
            parse(Api::Responses, body, &HeaderMap::new(), &[])
                .map(|r| r.identity.key)
                .ok()
                .unwrap()
        };
        let a = br#"{"model":"m","instructions":"s","input":[{"role":"user","content":"u"}]}"#;
        let b = br#"{"model":"m","instructions":"s","input":[{"role":"user","content":"u"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]}"#;
        let c = br#"{"model":"m","instructions":"t","input":[{"role":"user","content":"u"}]}"#;
        let d = br#"{"model":"m","instructions":"s","input":"u"}"#;
        let e = br#"{"model":"m","instructions":"s","input":"v"}"#;
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
        assert_ne!(key(d), key(e));
        // Malformed or unmodelled: forwarded, never a 400 of ours.
        for body in [
            &b"{"[..],
            br#"{"input":"x","previous_response_id":"r"}"#,
            br#"{"input":[{"type":"item_reference","id":"i"}]}"#,
        ] {
            assert!(matches!(
                parse(Api::Responses, body, &HeaderMap::new(), &[]),
                Err(ParseError::Unsupported(_))
            ));
        }
        assert!(matches!(
            parse(Api::OpenAi, b"{", &HeaderMap::new(), &[]),
            Err(ParseError::Invalid(_))
        ));
    }

    #[test]
    fn anthropic_usage_counts_cache_tokens() {
        let v = serde_json::json!({"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":3}});
        assert_eq!(prompt_tokens(Api::Anthropic, &v), Some(100));
        let start = serde_json::json!({"type":"message_start","message":{"usage":{"input_tokens":7}}});
        assert_eq!(prompt_tokens(Api::Anthropic, &start), Some(7));
    }

    /// A client that marks its last message marks the first user message in the first
    /// round only (it is the last one then): the derived session key must not change.
    #[test]
    fn a_moving_mark_does_not_change_the_derived_session() {
        let mark = serde_json::json!({"type": "ephemeral"});
        let first = serde_json::json!({"model": "m", "system": [{"type": "text", "text": "rules", "cache_control": mark}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "fix the bug", "cache_control": mark}]}]});
        let second = serde_json::json!({"model": "m", "system": [{"type": "text", "text": "rules"}],
            "messages": [{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": "on it"},
                {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": mark}]}]});
        let key = |v: &Value| {
            let body = serde_json::to_vec(v).unwrap();
            parse(Api::Anthropic, &body, &HeaderMap::new(), &[])
                .unwrap()
                .identity
                .key
        };
        assert_eq!(key(&first), key(&second));
        let other = serde_json::json!({"model": "m", "system": "rules", "messages": [{"role": "user", "content": "another task"}]});
        assert_ne!(key(&first), key(&other));
    }
}
