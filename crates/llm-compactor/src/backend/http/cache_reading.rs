//! A summary request that reads the agent's own prompt cache.
//!
//! The usual summary request sends the replaced middle as a new prompt under a
//! summarizer system prompt: every token of it is billed at the full input rate, often
//! the most expensive uncached request of a session. When the summarizer is the agent's
//! own model behind the same provider, there is a cheaper request: the agent's last
//! request *unchanged* (model, system, tools, messages, cache key) plus one trailing user
//! message carrying the summary instruction. The provider has just cached that prefix for
//! the agent, so it bills it as cache reads (goose measured 87-92% of the summary's input
//! billed that way).
//!
//! How it is used: the caller puts the agent's request in the pass's context
//! ([`AgentRequest::pass_context`], or [`PassContext::with`] beside other values) and
//! hands it to the pass: [`CompactOptions::pass`](crate::CompactOptions::pass), or the
//! request's [`RequestShape::pass`](crate::session::RequestShape::pass) for a
//! `ContextManager`, which carries it into its background pass (the proxy does it for
//! the pass a request triggers). An [`HttpBackend`] whose protocol matches then sends
//! [`cache_reading_body`] instead of its ordinary request, and does not chunk (the agent's
//! request already fits the model). A pass without one is unchanged.
//!
//! What each provider needs for the prefix to be read from the cache (see
//! `docs/prepared-compaction.md` for the sources):
//! - **Anthropic** caches the prefix up to each `cache_control` breakpoint, rendered in
//!   the order tools, system, messages; a later request reads it when everything up to
//!   that breakpoint is byte-identical (the lookup also tries the block boundaries up to
//!   20 blocks before each breakpoint). Changing `tool_choice`, the `thinking`
//!   parameters, or adding/removing images invalidates the cached messages. So the body
//!   keeps `model`, `system`, `tools`, `tool_choice`, `thinking`, `metadata` and every
//!   message with its breakpoints as the agent sent them; the instruction is one more
//!   user message *after* the agent's last breakpoint (consecutive user turns are
//!   merged by the API), and no breakpoint of ours is added (writing a cache entry for a
//!   one-off summary costs 1.25x and is never read). `max_tokens` and `stream` do not
//!   enter the prefix: they become the summary's budget (plus the agent's thinking
//!   budget when thinking is on, which `max_tokens` must exceed) and `false`.
//! - **OpenAI** caches prompts of 1024 tokens or more automatically, by exact prefix, in
//!   128-token increments; `prompt_cache_key` (and the older `user`) route requests to
//!   the same cache and must stay the same. Tools and messages are part of the prefix;
//!   `max_tokens`/`max_completion_tokens`, `stream`, `n` are not. So the body keeps every
//!   field but those and appends one user message.
//! - Neither can summarize when the agent forces a tool call (`tool_choice` `any`/`tool`,
//!   `required`/a named function): changing it would invalidate the cache and keeping it
//!   would make the model call a tool, so such a request gets the ordinary summary
//!   request ([`cache_reading_body`] returns `None`).

use serde_json::{Value, json};

use super::client::HttpBackend;
use super::wire::{MaxTokensField, Protocol};
use crate::summarize::{PassContext, SummaryReply, SummaryRequest};

/// The agent's last request, as its provider received it.
#[derive(Clone, PartialEq)]
pub struct AgentRequest {
    /// The wire protocol of `body` (an OpenAI chat-completions or an Anthropic Messages
    /// body); only a backend of the same protocol reads it.
    pub protocol: Protocol,
    /// The request body.
    pub body: Value,
}

impl std::fmt::Debug for AgentRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body is the agent's conversation: never in a log line.
        let messages = self.body.get("messages").and_then(Value::as_array).map_or(0, Vec::len);
        f.debug_struct("AgentRequest")
            .field("protocol", &self.protocol)
            .field("messages", &messages)
            .finish_non_exhaustive()
    }
}

impl AgentRequest {
    /// A pass context holding this request: what a pass whose summary may read the
    /// agent's cache is handed.
    pub fn pass_context(self) -> PassContext {
        PassContext::new().with(self)
    }
}

/// The trailing instruction of a cache-reading summary request: the summarizer's
/// system text (tighten note and focus included), and where the conversation is.
pub fn cache_reading_instruction(system: &str) -> String {
    format!(
        "{system}\n\nThe conversation to summarize is everything above this message. Do not call any tool: \
         answer with the summary text only."
    )
}

/// The agent's request with one trailing user message carrying `instruction`, answered
/// in at most `max_output_tokens` tokens (see the module docs for what is kept and
/// why); `None` when the agent forces a tool call or the body has no message list.
///
/// ```
/// use llm_compactor::backend::http::{cache_reading_body, AgentRequest, MaxTokensField, Protocol};
/// use serde_json::json;
/// let agent = AgentRequest { protocol: Protocol::OpenAi, body: json!({
///     "model": "gpt-5", "stream": true, "prompt_cache_key": "s1", "max_completion_tokens": 8000,
///     "tools": [{"type": "function", "function": {"name": "bash"}}],
///     "messages": [{"role": "system", "content": "You code."}, {"role": "user", "content": "Fix it."}]}) };
/// let body = cache_reading_body(&agent, "Summarize.", 2048, MaxTokensField::MaxTokens).unwrap();
/// assert_eq!(body["messages"].as_array().unwrap()[..2], agent.body["messages"].as_array().unwrap()[..]);
/// assert_eq!(body["messages"][2], json!({"role": "user", "content": "Summarize."}));
/// assert_eq!((&body["prompt_cache_key"], &body["tools"]), (&agent.body["prompt_cache_key"], &agent.body["tools"]));
/// assert_eq!((&body["stream"], &body["max_completion_tokens"]), (&json!(false), &json!(2048)));
/// ```
pub fn cache_reading_body(
    request: &AgentRequest,
    instruction: &str,
    max_output_tokens: u32,
    field: MaxTokensField,
) -> Option<Value> {
    let mut body = request.body.clone();
    let object = body.as_object_mut()?;
    let forced = match (request.protocol, object.get("tool_choice")) {
        (Protocol::Anthropic, Some(choice)) => matches!(choice["type"].as_str(), Some("any" | "tool")),
        (Protocol::OpenAi, Some(Value::String(choice))) => choice == "required",
        (Protocol::OpenAi, Some(Value::Object(choice))) => {
            choice.contains_key("function") || choice.contains_key("name")
        }
        _ => false,
    };
    if forced {
        return None;
    }
    object.insert("stream".into(), Value::Bool(false));
    object.remove("stream_options");
    match request.protocol {
        Protocol::Anthropic => {
            let thinking = object
                .get("thinking")
                .filter(|t| t["type"] == "enabled")
                .and_then(|t| t["budget_tokens"].as_u64())
                .unwrap_or(0);
            object.insert("max_tokens".into(), json!(thinking + u64::from(max_output_tokens)));
            let messages = object.get_mut("messages")?.as_array_mut()?;
            messages.push(json!({"role": "user", "content": [{"type": "text", "text": instruction}]}));
        }
        Protocol::OpenAi => {
            object.remove("n");
            let reasoning = object.contains_key("reasoning_effort");
            let name = if object.contains_key("max_completion_tokens") {
                "max_completion_tokens"
            } else if object.contains_key("max_tokens") {
                "max_tokens"
            } else {
                match field {
                    MaxTokensField::MaxTokens => "max_tokens",
                    MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                }
            };
            // A reasoning model spends its budget on reasoning first: keep the agent's
            // (larger) budget for it.
            let agent = object.get(name).and_then(Value::as_u64).unwrap_or(0);
            let budget = if reasoning {
                agent.max(u64::from(max_output_tokens))
            } else {
                u64::from(max_output_tokens)
            };
            object.insert(name.into(), json!(budget));
            let messages = object.get_mut("messages")?.as_array_mut()?;
            messages.push(json!({"role": "user", "content": instruction}));
        }
    }
    Some(body)
}

impl HttpBackend {
    /// The agent request of `pass`, when it is of this backend's protocol.
    pub(super) fn agent_request_in<'p>(&self, pass: &'p PassContext) -> Option<&'p AgentRequest> {
        pass.get::<AgentRequest>().filter(|r| r.protocol == self.protocol())
    }

    /// The cache-reading summary of `request`, when `pass` holds an agent request of
    /// this protocol that does not force a tool call; `None` otherwise (the caller sends
    /// the ordinary request).
    pub(super) async fn summarize_in_cache(
        &self,
        request: &SummaryRequest,
        pass: &PassContext,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Result<SummaryReply, crate::summarize::SummarizerError>> {
        let agent = self.agent_request_in(pass)?;
        let instruction = cache_reading_instruction(&request.system);
        let body = cache_reading_body(agent, &instruction, request.max_output_tokens, self.max_tokens_field())?;
        tracing::debug!(model = %self.model(), "summary request reading the agent's prompt cache");
        Some(self.chat_body(&body, cancel).await.map(|reply| SummaryReply {
            text: reply.text,
            stop: reply.stop,
            usage: reply.usage,
        }))
    }
}
