//! Shared support for the engine tests: a scripted summarizer (a real implementation of
//! the trait that answers from a queue and records every request), a counting spy, and
//! conversation builders.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use llm_compactor::{Message, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

/// One scripted answer.
pub type Answer = Result<SummaryReply, SummarizerError>;

/// A reply of `text` billed 10 in / 5 out.
pub fn reply(text: &str) -> Answer {
    Ok(SummaryReply {
        text: text.to_owned(),
        stop: StopReason::Complete,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    })
}

/// A truncated reply.
pub fn truncated(text: &str) -> Answer {
    Ok(SummaryReply {
        text: text.to_owned(),
        stop: StopReason::Truncated,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    })
}

/// An HTTP failure billed 3 input tokens.
pub fn http(status: u16) -> Answer {
    Err(
        SummarizerError::new(FailureKind::Http { status }, format!("status {status}")).with_usage(Usage {
            input_tokens: 3,
            ..Usage::default()
        }),
    )
}

/// Answers from a queue (then a fixed fallback), recording every request.
pub struct Scripted {
    answers: Mutex<VecDeque<Answer>>,
    fallback: Answer,
    room: Option<usize>,
    pub requests: Mutex<Vec<SummaryRequest>>,
    /// Cancels this token when a call arrives (to test cancellation mid-pass).
    cancel_on_call: Option<CancellationToken>,
}

impl Scripted {
    pub fn new(answers: Vec<Answer>) -> Arc<Scripted> {
        Arc::new(Scripted::build(answers))
    }

    pub fn build(answers: Vec<Answer>) -> Scripted {
        Scripted {
            answers: Mutex::new(answers.into()),
            fallback: Err(SummarizerError::new(FailureKind::Other, "script exhausted")),
            room: None,
            requests: Mutex::new(Vec::new()),
            cancel_on_call: None,
        }
    }

    pub fn always(answer: Answer) -> Arc<Scripted> {
        let mut s = Scripted::build(Vec::new());
        s.fallback = answer;
        Arc::new(s)
    }

    pub fn with_room(mut self, room: usize) -> Self {
        self.room = Some(room);
        self
    }

    pub fn with_fallback(mut self, answer: Answer) -> Self {
        self.fallback = answer;
        self
    }

    pub fn cancelling(mut self, token: CancellationToken) -> Self {
        self.cancel_on_call = Some(token);
        self
    }

    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn request(&self, i: usize) -> SummaryRequest {
        self.requests.lock().unwrap()[i].clone()
    }
}

#[async_trait]
impl Summarizer for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn input_room(&self) -> Option<usize> {
        self.room
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        _cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        self.requests.lock().unwrap().push(request);
        if let Some(token) = &self.cancel_on_call {
            token.cancel();
        }
        let next = self.answers.lock().unwrap().pop_front();
        next.unwrap_or_else(|| self.fallback.clone())
    }
}

/// The heuristic counter, counting how often it is asked.
#[derive(Default)]
pub struct Spy {
    pub calls: AtomicUsize,
}

impl Spy {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl TokenCounter for Spy {
    fn name(&self) -> &str {
        "spy"
    }
    fn count_text(&self, text: &str) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        HeuristicCounter.count_text(text)
    }
    fn count_message(&self, message: &Message) -> usize {
        HeuristicCounter.count_message(message)
    }
    fn count_messages(&self, messages: &[Message]) -> usize {
        self.calls.fetch_add(1, Ordering::SeqCst);
        messages.iter().map(|m| HeuristicCounter.count_message(m)).sum()
    }
}

/// An assistant turn calling `tool` with `args`, and its result of `size` chars.
pub fn round(id: &str, tool: &str, args: &str, size: usize) -> Vec<Message> {
    vec![
        Message::assistant(format!("calling {tool}")).with_tool_calls(vec![ToolCall::new(id, tool, args)]),
        Message::tool(id, "r".repeat(size)),
    ]
}

/// A system prompt, a user task, then `rounds` tool rounds with results of `size`
/// chars, then a final user message.
pub fn conversation(rounds: usize, size: usize) -> Vec<Message> {
    let mut messages = vec![
        Message::system("You are a coding agent."),
        Message::user("Fix the bug."),
    ];
    for i in 0..rounds {
        messages.extend(round(
            &format!("c{i}"),
            "fs_read",
            &format!("{{\"path\":\"f{i}.rs\"}}"),
            size,
        ));
    }
    messages.push(Message::user("Continue."));
    messages
}

/// Heuristic tokens of a conversation.
pub fn tokens(messages: &[Message]) -> usize {
    HeuristicCounter.count_messages(messages)
}
