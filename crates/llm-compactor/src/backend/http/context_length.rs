//! Recognising a "your prompt does not fit the model's window" answer.
//!
//! Every server says it differently, and usually with a plain 400. An agent loop needs to
//! tell it apart from other 400s: it is the one failure that a compaction fixes. So the
//! backends report it as [`crate::summarize::FailureKind::ContextLengthExceeded`], and this
//! module holds the list of codes and phrasings we know (case-insensitive substrings).

/// Error codes / types that mean the request exceeded the context window.
const CODES: &[&str] = &[
    "context_length_exceeded",   // OpenAI, Azure, OpenRouter, LiteLLM
    "exceed_context_size_error", // llama.cpp server
    "request_too_large",         // Anthropic 413
    "string_above_max_length",   // OpenAI, one message too long
];

/// Phrases servers put in the message.
const PHRASES: &[&str] = &[
    "maximum context length",                             // OpenAI, vLLM, OpenRouter
    "context length exceeded",                            // generic
    "context_length_exceeded",                            // in-message codes (LiteLLM)
    "prompt is too long",                                 // Anthropic
    "input length and `max_tokens` exceed context limit", // Anthropic
    "exceed context limit",                               // Anthropic variants
    "exceeds the available context size",                 // llama.cpp server
    "exceeds the context size",                           // llama.cpp variants
    "exceeds the context length",                         // Ollama, LM Studio
    "exceeds maximum context",                            // generic
    "input length exceeds",                               // Ollama
    "greater than the context length",                    // LM Studio / llama.cpp
    "longer than the maximum model length",               // vLLM (prompt alone)
    "longer than the model's context length",             // vLLM newer
    "too many tokens",                                    // Mistral, generic
    "reduce the length of the messages",                  // OpenAI
    "context window",                                     // "exceeds the context window" (several)
    "prompt too long",                                    // generic
    "context length of only",                             // LM Studio
];

/// True when an error answer (its status, error code/type and message) says the request
/// was too big for the model's context window.
///
/// Only client errors (4xx) qualify: a 500 that happens to mention a context window is
/// still a server fault.
///
/// ```
/// use llm_compactor::backend::http::is_context_length_exceeded;
/// assert!(is_context_length_exceeded(400, Some("context_length_exceeded"), "whatever"));
/// assert!(is_context_length_exceeded(400, None, "prompt is too long: 210000 tokens > 200000 maximum"));
/// assert!(!is_context_length_exceeded(400, None, "model not found"));
/// assert!(!is_context_length_exceeded(500, None, "maximum context length"));
/// ```
pub fn is_context_length_exceeded(status: u16, code: Option<&str>, message: &str) -> bool {
    if !(400..500).contains(&status) {
        return false;
    }
    if let Some(code) = code {
        let code = code.to_ascii_lowercase();
        if CODES.iter().any(|known| code.contains(known)) {
            return true;
        }
    }
    let message = message.to_lowercase();
    // TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096" (too generic without its
    // subject: "max_tokens must be <= 8192" is an ordinary bad request).
    PHRASES.iter().any(|phrase| message.contains(phrase))
        || (message.contains("must be <=") && message.contains("`inputs` tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_each_family() {
        let cases = [
            (
                400,
                None,
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
            ),
            (400, None, "prompt is too long: 208310 tokens > 200000 maximum"),
            (
                400,
                None,
                "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
            ),
            (
                400,
                None,
                "the request exceeds the available context size, try increasing it",
            ),
            (400, Some("exceed_context_size_error"), "boom"),
            (
                400,
                None,
                "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
            ),
            (
                400,
                None,
                "The decoder prompt (length 9000) is longer than the maximum model length of 8192.",
            ),
            (
                400,
                None,
                "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`",
            ),
            (400, None, "input length exceeds the context length"),
            (400, None, "Too many tokens: the prompt has 40000 tokens"),
            (
                413,
                Some("request_too_large"),
                "Request exceeds the maximum allowed number of bytes.",
            ),
            (
                422,
                None,
                "Trying to keep the first 9000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input",
            ),
        ];
        for (status, code, message) in cases {
            assert!(
                is_context_length_exceeded(status, code, message),
                "{status} {code:?} {message}"
            );
        }
    }

    #[test]
    fn ignores_other_errors() {
        assert!(!is_context_length_exceeded(
            400,
            Some("invalid_request_error"),
            "max_tokens must be <= 8192"
        ));
        assert!(!is_context_length_exceeded(
            401,
            Some("invalid_api_key"),
            "Incorrect API key provided"
        ));
        assert!(!is_context_length_exceeded(503, None, "prompt is too long"));
        assert!(!is_context_length_exceeded(
            404,
            None,
            "The model `gpt-9` does not exist"
        ));
    }
}
