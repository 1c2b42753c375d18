//! [`RequestCounter`]: the complete-request adapter.
//!
//! What must fit a backend's window is the whole request: the conversation, the tool
//! declarations it carries and the runtime context sent beside it. The compactor only
//! knows conversations, so an agent loop that asks for a compaction against one
//! backend's room passes this adapter as the per-call counter override: the compactor
//! supplies each candidate conversation, the adapter keeps that backend's tools and
//! context attached, and every before/after/acceptance count is in that backend's units.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::count::TokenCounter;
use crate::message::Message;

/// Counts a conversation as the complete request it will be sent in:
/// `count_messages(m) = inner.count_request(m, tools, context)`.
///
/// ```
/// use std::sync::Arc;
/// use llm_compactor::count::{HeuristicCounter, RequestCounter, TokenCounter};
/// use llm_compactor::Message;
///
/// let tools = vec![serde_json::json!({"name": "fs_read"})];
/// let adapter = RequestCounter::new(Arc::new(HeuristicCounter), tools.clone(), "cwd: /repo");
/// let conversation = [Message::user("read lib.rs")];
/// assert_eq!(
///     adapter.count_messages(&conversation),
///     HeuristicCounter.count_request(&conversation, &tools, "cwd: /repo"),
/// );
/// ```
pub struct RequestCounter {
    inner: Arc<dyn TokenCounter>,
    tools: Vec<Value>,
    context: String,
    /// `inner.count_request_overhead(tools, context)`, for an additive inner counter
    /// (counted once: the declarations do not change between candidates).
    overhead: OnceLock<usize>,
}

impl std::fmt::Debug for RequestCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestCounter")
            .field("inner", &self.inner.name())
            .field("tools", &self.tools.len())
            .field("context_chars", &self.context.chars().count())
            .finish()
    }
}

impl RequestCounter {
    /// An adapter counting with `inner` and attaching `tools` and `context`.
    pub fn new(inner: Arc<dyn TokenCounter>, tools: Vec<Value>, context: impl Into<String>) -> Self {
        RequestCounter {
            inner,
            tools,
            context: context.into(),
            overhead: OnceLock::new(),
        }
    }

    /// The wrapped counter.
    pub fn inner(&self) -> &Arc<dyn TokenCounter> {
        &self.inner
    }

    /// The tool declarations attached to every count.
    pub fn tools(&self) -> &[Value] {
        &self.tools
    }

    /// The runtime context attached to every count.
    pub fn context(&self) -> &str {
        &self.context
    }

    fn overhead(&self) -> usize {
        *self
            .overhead
            .get_or_init(|| self.inner.count_request_overhead(&self.tools, &self.context))
    }
}

impl TokenCounter for RequestCounter {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn count_text(&self, text: &str) -> usize {
        self.inner.count_text(text)
    }

    fn count_message(&self, message: &Message) -> usize {
        self.inner.count_message(message)
    }

    fn count_messages(&self, messages: &[Message]) -> usize {
        if self.inner.additive() {
            self.inner.count_messages(messages) + self.overhead()
        } else {
            self.inner.count_request(messages, &self.tools, &self.context)
        }
    }

    /// A request through the adapter carries its tools and context plus the given ones.
    fn count_request(&self, messages: &[Message], tools: &[Value], context: &str) -> usize {
        if tools.is_empty() && context.is_empty() {
            return self.count_messages(messages);
        }
        let all_tools: Vec<Value> = self.tools.iter().chain(tools).cloned().collect();
        let all_context = match (self.context.is_empty(), context.is_empty()) {
            (_, true) => self.context.clone(),
            (true, false) => context.to_owned(),
            (false, false) => format!("{}\n{}", self.context, context),
        };
        self.inner.count_request(messages, &all_tools, &all_context)
    }

    fn count_request_overhead(&self, tools: &[Value], context: &str) -> usize {
        self.inner.count_request_overhead(tools, context)
    }

    /// Not additive: every conversation count includes the request's overhead once.
    fn additive(&self) -> bool {
        false
    }
}
