//! Turning what went wrong on the wire into a [`SummarizerError`] of the right
//! [`FailureKind`]. The kind is a fact (a status, a timeout, a refused connection); what it
//! means for the compactor is decided by [`FailureKind::class`] alone.

use serde_json::Value;

use super::context_length::is_context_length_exceeded;
use super::secret::{Secret, cut_scrubbed};
use crate::summarize::{FailureKind, SummarizerError};

/// The most characters of an error message we keep (after the key is scrubbed).
const MAX_MESSAGE_CHARS: usize = 500;

/// A transport failure: no complete answer came back.
pub(super) fn transport_error(error: &reqwest::Error) -> SummarizerError {
    // A connect timeout is both `is_connect` and `is_timeout`: the connection never
    // completed, which is what matters.
    // A redirect the policy refused (another origin, too many) is a configuration
    // problem that no retry heals.
    let kind = if error.is_redirect() {
        FailureKind::Unavailable
    } else if error.is_connect() {
        FailureKind::Connect
    } else if error.is_timeout() {
        FailureKind::Timeout
    } else {
        FailureKind::Other
    };
    SummarizerError::new(kind, error_chain(error))
}

fn error_chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A non-2xx answer: `Http { status }`, or `ContextLengthExceeded` when the server says
/// the prompt does not fit.
pub(super) fn error_from_status(status: u16, reason: Option<&str>, body: &[u8]) -> SummarizerError {
    let (codes, text) = error_text(body);
    let kind = if is_context_length_exceeded(status, Some(&codes), &text) {
        FailureKind::ContextLengthExceeded { status: Some(status) }
    } else {
        FailureKind::Http { status }
    };
    let head = match reason {
        Some(reason) => format!("HTTP {status} {reason}"),
        None => format!("HTTP {status}"),
    };
    let message = if text.is_empty() {
        head
    } else {
        format!("{head}: {text}")
    };
    SummarizerError::new(kind, message)
}

/// The error codes/types (space-separated) and the human text of an error body, in the
/// shapes servers use: `{"error": {"message", "code", "type"}}` (OpenAI, Anthropic,
/// llama.cpp), `{"error": "text"}` (Ollama), `{"message", "code", "type"}` (vLLM),
/// `{"detail": ...}` (FastAPI servers); anything else is taken as plain text.
pub(super) fn error_text(body: &[u8]) -> (String, String) {
    let raw = String::from_utf8_lossy(body);
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return (String::new(), trim(&raw));
    };
    let object = match value.get("error") {
        Some(Value::String(text)) => return (String::new(), trim(text)),
        Some(error @ Value::Object(_)) => error,
        _ => &value,
    };
    let mut codes = Vec::new();
    for field in ["code", "type"] {
        match object.get(field) {
            Some(Value::String(code)) => codes.push(code.clone()),
            Some(Value::Number(code)) => codes.push(code.to_string()),
            _ => {}
        }
    }
    let text = match (object.get("message"), value.get("detail")) {
        (Some(Value::String(message)), _) => message.clone(),
        (_, Some(Value::String(detail))) => detail.clone(),
        (_, Some(detail)) => detail.to_string(),
        _ => raw.into_owned(),
    };
    (codes.join(" "), trim(&text))
}

/// Whitespace-trimmed only: the cut to [`MAX_MESSAGE_CHARS`] happens once, on the
/// whole message, after the key has been scrubbed from it ([`display`]), so a key
/// straddling the cut cannot leave a prefix behind.
pub(super) fn trim(text: &str) -> String {
    text.trim().to_owned()
}

/// An error message ready to show: the key scrubbed first, then cut to
/// [`MAX_MESSAGE_CHARS`] chars (any key prefix of 8+ chars left at the cut scrubbed too).
pub(super) fn display(message: &str, key: Option<&Secret>) -> String {
    match key {
        Some(key) => key.redact_cut(message, MAX_MESSAGE_CHARS),
        None => cut_scrubbed(message, "", MAX_MESSAGE_CHARS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_error_shape() {
        let openai = br#"{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            error_text(openai),
            (
                "context_length_exceeded invalid_request_error".to_owned(),
                "This model's maximum context length is 8192 tokens".to_owned()
            )
        );
        let anthropic = br#"{"type":"error","error":{"type":"rate_limit_error","message":"  slow down  "}}"#;
        assert_eq!(
            error_text(anthropic),
            ("rate_limit_error".to_owned(), "slow down".to_owned())
        );
        assert_eq!(
            error_text(br#"{"error":"model 'x' not found"}"#).1,
            "model 'x' not found"
        );
        let vllm = br#"{"object":"error","message":"bad","type":"BadRequestError","code":400}"#;
        assert_eq!(error_text(vllm), ("400 BadRequestError".to_owned(), "bad".to_owned()));
        assert_eq!(error_text(br#"{"detail":"Not Found"}"#).1, "Not Found");
        assert_eq!(error_text(b"<html>bad gateway</html>\n").1, "<html>bad gateway</html>");
        let long = "x".repeat(2_000);
        assert_eq!(
            display(&error_text(long.as_bytes()).1, None).chars().count(),
            MAX_MESSAGE_CHARS + 1
        );
    }

    #[test]
    fn classifies_statuses() {
        let error = error_from_status(429, Some("Too Many Requests"), b"");
        assert_eq!(error.kind, FailureKind::Http { status: 429 });
        assert_eq!(error.message, "HTTP 429 Too Many Requests");
        let error = error_from_status(
            400,
            Some("Bad Request"),
            br#"{"error":{"message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#,
        );
        assert_eq!(error.kind, FailureKind::ContextLengthExceeded { status: Some(400) });
    }
}
