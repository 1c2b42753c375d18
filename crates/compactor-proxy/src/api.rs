//! The two compacted APIs: how their requests are read, keyed and written back, and
//! where their responses report usage.
//!
//! Both APIs go through the library's own importers and exporters
//! ([`llm_compactor::format::Document`]), so a request the proxy does not change is
//! written back as it came, and the messages the engine sees are the ones `compactor
//! compact` would see for the same file.

use llm_compactor::format::{Document, Format};
use llm_compactor::message::canonical_json;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Which API a request speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST /v1/chat/completions`.
    OpenAi,
    /// `POST /v1/messages`.
    Anthropic,
}

impl Api {
    /// The library's wire format for this API.
    pub fn format(self) -> Format {
        match self {
            Api::OpenAi => Format::OpenAi,
            Api::Anthropic => Format::Anthropic,
        }
    }

    /// The route's name in logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "chat_completions",
            Api::Anthropic => "messages",
        }
    }
}

/// A parsed request: the document, the model, and whether it streams.
pub struct Request {
    /// The conversation and every other top-level field.
    pub document: Document,
    /// The `model` field (empty when absent).
    pub model: String,
    /// `"stream": true`.
    pub stream: bool,
    /// The session key when the client did not name one.
    pub derived_key: String,
}

/// Reads a request body of `api`.
///
/// # Errors
/// The problem in words (invalid JSON, not a conversation), for a 400.
pub fn parse(api: Api, body: &[u8]) -> Result<Request, String> {
    let value: Value = serde_json::from_slice(body).map_err(|e| format!("request body is not JSON: {e}"))?;
    if !value.is_object() {
        return Err("request body must be a JSON object".to_owned());
    }
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let stream = value.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let derived_key = derived_key(api, &model, &value);
    let document = Document::from_value(value, Some(api.format()), "request").map_err(|e| e.to_string())?;
    Ok(Request {
        document,
        model,
        stream,
        derived_key,
    })
}

/// The session key of a request without `x-compactor-session`: a digest of the model,
/// the system prompt and the first user message — what stays the same across the rounds
/// of one agent run and differs between runs.
fn derived_key(api: Api, model: &str, value: &Value) -> String {
    let messages = value.get("messages").and_then(Value::as_array);
    let system = match api {
        Api::Anthropic => value.get("system").cloned().unwrap_or(Value::Null),
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
        .unwrap_or(Value::Null);
    let mut hasher = Sha256::new();
    for part in [model.to_owned(), canonical_json(&system), canonical_json(&first_user)] {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    format!("auto-{}", &hex::encode(hasher.finalize())[..24])
}

/// The prompt tokens a response object reports (OpenAI `usage.prompt_tokens`; Anthropic
/// `usage.input_tokens` plus cache reads and writes, which are prompt tokens too).
pub fn prompt_tokens(api: Api, value: &Value) -> Option<u64> {
    match api {
        Api::OpenAi => value.get("usage")?.get("prompt_tokens")?.as_u64(),
        Api::Anthropic => {
            let usage = value
                .get("usage")
                .or_else(|| value.get("message").and_then(|m| m.get("usage")))?;
            let input = usage.get("input_tokens")?.as_u64()?;
            let cached = ["cache_read_input_tokens", "cache_creation_input_tokens"]
                .iter()
                .filter_map(|k| usage.get(*k).and_then(Value::as_u64))
                .sum::<u64>();
            Some(input + cached)
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
        let key = |body: &[u8]| parse(Api::OpenAi, body).unwrap().derived_key;
        assert_eq!(key(a), key(b));
        assert_ne!(key(a), key(c));
    }

    #[test]
    fn anthropic_usage_counts_cache_tokens() {
        let v = serde_json::json!({"usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":3}});
        assert_eq!(prompt_tokens(Api::Anthropic, &v), Some(100));
        let start = serde_json::json!({"type":"message_start","message":{"usage":{"input_tokens":7}}});
        assert_eq!(prompt_tokens(Api::Anthropic, &start), Some(7));
    }
}
