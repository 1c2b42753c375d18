//! The cache-reading summary request of a Responses API round (`--summarizer upstream`).
//!
//! The library's cache-reading request covers chat completions and Messages; the
//! Responses API is the proxy's own route, so its form is here. As for chat completions
//! (OpenAI caches by exact prefix, tools and input items included; `prompt_cache_key`
//! routes to the same cache), the body is the agent's request unchanged but for what is
//! not part of the prefix: one more user input item carrying the instruction, `stream`
//! false, `max_output_tokens` the summary's budget (the agent's, when larger, for a
//! reasoning model), `store` false (the summary is not one of the user's stored
//! responses), no `background`. A request that forces a tool call gets `None` (the
//! ordinary request is sent instead).

use std::time::Duration;

use llm_compactor::Usage;
use llm_compactor::backend::http::{cache_reading_instruction, is_context_length_exceeded};
use llm_compactor::summarize::{FailureKind, StopReason, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::client_key::ClientAuth;

/// The most of an answer read (a summary is a few KB).
const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The most of a server's error message kept.
const MAX_MESSAGE_CHARS: usize = 500;

/// The agent's Responses request with one trailing user item carrying `instruction`,
/// answered in at most `max_output_tokens`; `None` when it forces a tool call or has no
/// usable `input`.
pub(crate) fn responses_body(agent: &Value, instruction: &str, max_output_tokens: u32) -> Option<Value> {
    let mut body = agent.clone();
    let object = body.as_object_mut()?;
    let forced = match object.get("tool_choice") {
        Some(Value::String(choice)) => choice == "required",
        Some(Value::Object(choice)) => {
            !(choice.get("type") == Some(&json!("allowed_tools")) && choice.get("mode") != Some(&json!("required")))
        }
        _ => false,
    };
    if forced {
        return None;
    }
    object.insert("stream".into(), Value::Bool(false));
    object.insert("store".into(), Value::Bool(false));
    object.remove("stream_options");
    object.remove("background");
    let reasoning = object.get("reasoning").is_some_and(|r| !r.is_null());
    let agent_budget = object.get("max_output_tokens").and_then(Value::as_u64).unwrap_or(0);
    let budget = if reasoning {
        agent_budget.max(u64::from(max_output_tokens))
    } else {
        u64::from(max_output_tokens)
    };
    object.insert("max_output_tokens".into(), json!(budget));
    let item = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": instruction}]});
    match object.get_mut("input")? {
        Value::String(text) => {
            let first = json!({"role": "user", "content": std::mem::take(text)});
            object.insert("input".into(), json!([first, item]));
        }
        Value::Array(items) => items.push(item),
        _ => return None,
    }
    Some(body)
}

/// The summary text, stop reason and usage of a Responses answer.
pub(crate) fn decode(answer: &Value) -> Result<SummaryReply, SummarizerError> {
    let Some(output) = answer.get("output").and_then(Value::as_array) else {
        return Err(SummarizerError::new(
            FailureKind::Parse,
            "a Responses answer without `output`",
        ));
    };
    let text: String = output
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter(|part| part["type"] == "output_text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    let usage = &answer["usage"];
    let usage = Usage {
        input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: usage["input_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
        ..Usage::default()
    };
    if text.trim().is_empty() {
        return Err(
            SummarizerError::new(FailureKind::Empty, "the Responses answer has no output text").with_usage(usage),
        );
    }
    let stop = if answer["status"] == "incomplete" {
        StopReason::Truncated
    } else {
        StopReason::Complete
    };
    Ok(SummaryReply::new(text, stop, usage))
}

/// Posts the cache-reading summary request of `agent` to `base/v1/responses` with
/// `key` as the bearer token; `None` when the request cannot take that form.
pub(crate) async fn summarize(
    client: &reqwest::Client,
    base: &str,
    agent: &Value,
    request: &SummaryRequest,
    auth: &ClientAuth,
    cancel: &CancellationToken,
) -> Option<Result<SummaryReply, SummarizerError>> {
    let instruction = cache_reading_instruction(&request.system);
    let body = responses_body(agent, &instruction, request.max_output_tokens)?;
    tracing::debug!("summary request reading the agent's prompt cache (Responses)");
    let scrub = |message: &str| auth.redact(message).chars().take(MAX_MESSAGE_CHARS).collect::<String>();
    let post = async {
        let mut call = client.post(format!("{base}/v1/responses")).json(&body);
        // The client's own headers as it sent them; else its key as a bearer token.
        if auth.headers.is_empty() {
            if let Some(key) = &auth.key {
                call = call.bearer_auth(key.expose());
            }
        }
        for (name, value) in auth.headers.iter() {
            call = call.header(*name, value.expose());
        }
        let mut response = call.send().await.map_err(|e| transport(&e))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| transport(&e))? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(SummarizerError::new(FailureKind::Parse, "the answer is too large"));
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| SummarizerError::new(FailureKind::Parse, format!("the answer is not JSON: {e}")))?;
        if (200..300).contains(&status) {
            return decode(&answer);
        }
        let message = answer["error"]["message"].as_str().unwrap_or("no message");
        let code = answer["error"]["code"].as_str();
        let kind = if is_context_length_exceeded(status, code, message) {
            FailureKind::ContextLengthExceeded { status: Some(status) }
        } else {
            FailureKind::Http { status }
        };
        let mut error = SummarizerError::new(kind, scrub(message));
        if let Some(wait) = retry_after {
            error = error.with_retry_after(wait);
        }
        Err(error)
    };
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "cancelled while waiting for the upstream")),
        outcome = post => outcome,
    };
    Some(outcome.map_err(|mut e| {
        e.message = scrub(&e.message);
        e
    }))
}

fn transport(error: &reqwest::Error) -> SummarizerError {
    let kind = if error.is_timeout() {
        FailureKind::Timeout
    } else if error.is_connect() {
        FailureKind::Connect
    } else {
        FailureKind::Other
    };
    // Without the URL: it is the upstream's, and says nothing the operator lacks.
    SummarizerError::new(kind, without_url(error))
}

/// The error's text without its URL.
fn without_url(error: &reqwest::Error) -> String {
    let text = error.to_string();
    match error.url() {
        Some(url) => text.replace(url.as_str(), "the upstream"),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_agents_request_plus_one_item() {
        let agent = json!({"model": "gpt-5", "stream": true, "prompt_cache_key": "k", "instructions": "Be terse.",
            "tools": [{"type": "function", "name": "bash"}], "max_output_tokens": 9000,
            "input": [{"role": "user", "content": "Fix it."}]});
        let body = responses_body(&agent, "Summarize.", 2048).unwrap();
        assert_eq!(body["input"][0], agent["input"][0]);
        assert_eq!(body["input"][1]["content"][0]["text"], "Summarize.");
        for field in ["model", "prompt_cache_key", "instructions", "tools"] {
            assert_eq!(body[field], agent[field], "{field}");
        }
        assert_eq!(
            (&body["stream"], &body["store"], &body["max_output_tokens"]),
            (&json!(false), &json!(false), &json!(2048))
        );
        let string = responses_body(&json!({"model": "m", "input": "hi"}), "S.", 10).unwrap();
        assert_eq!(string["input"][0], json!({"role": "user", "content": "hi"}));
        let reasoning = responses_body(
            &json!({"model": "o", "reasoning": {"effort": "high"}, "max_output_tokens": 9000, "input": []}),
            "S.",
            10,
        )
        .unwrap();
        assert_eq!(reasoning["max_output_tokens"], 9000);
        for forced in [json!("required"), json!({"type": "function", "name": "bash"})] {
            assert!(responses_body(&json!({"model": "m", "tool_choice": forced, "input": []}), "S.", 10).is_none());
        }
        assert!(responses_body(&json!({"model": "m", "tool_choice": "auto", "input": []}), "S.", 10).is_some());
    }

    #[test]
    fn the_answer_gives_text_stop_and_cached_tokens() {
        let answer = json!({"status": "completed", "output": [
            {"type": "reasoning", "summary": []},
            {"type": "message", "content": [{"type": "output_text", "text": "## Goals\nfix"}]}],
            "usage": {"input_tokens": 100, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 90}}});
        let reply = decode(&answer).unwrap();
        assert_eq!(
            (reply.text.as_str(), reply.stop),
            ("## Goals\nfix", StopReason::Complete)
        );
        assert_eq!((reply.usage.input_tokens, reply.usage.cache_read_tokens), (100, 90));
        let empty = decode(&json!({"status": "completed", "output": []})).unwrap_err();
        assert_eq!(empty.kind, FailureKind::Empty);
        assert_eq!(decode(&json!({})).unwrap_err().kind, FailureKind::Parse);
    }
}
