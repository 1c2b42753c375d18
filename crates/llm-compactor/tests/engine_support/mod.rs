//! Shared support for the engine tests: a scripted summarizer (a real implementation of
//! the trait that answers from a queue and records every request), a counting spy, and
//! conversation builders.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use llm_compactor::count::{HeuristicCounter, TokenCounter};
use llm_compactor::plan;
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use llm_compactor::{CompactOptions, CompactionResult, Compactor, CompactorConfig, Message, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

/// One scripted answer.
pub type Answer = Result<SummaryReply, SummarizerError>;

/// A reply of `text` billed 10 in / 5 out.
pub fn reply(text: &str) -> Answer {
    Ok(SummaryReply::new(
        text.to_owned(),
        StopReason::Complete,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    ))
}

/// A truncated reply.
pub fn truncated(text: &str) -> Answer {
    Ok(SummaryReply::new(
        text.to_owned(),
        StopReason::Truncated,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    ))
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

/// A counter whose count is exactly the content chars (no per-message overhead), so a
/// test can put a conversation at any count it likes.
#[derive(Default)]
pub struct Chars;

impl TokenCounter for Chars {
    fn name(&self) -> &str {
        "chars"
    }
    fn count_text(&self, text: &str) -> usize {
        text.chars().count()
    }
    fn count_message(&self, message: &Message) -> usize {
        message.content.chars()
    }
}

/// A configuration of `budget` tokens keeping the last 3 messages, aging off: these
/// tests exercise the summarizing path, the spec's default (aging became the library's
/// default in issue 12; the aging tests turn it on themselves).
pub fn config(budget: usize) -> CompactorConfig {
    CompactorConfig::builder(budget)
        .keep_recent(3)
        .age_observations(false)
        .build()
        .unwrap()
}

/// A heuristic-counting compactor over [`config`], with `summarizer` when given.
pub fn compactor(budget: usize, summarizer: Option<Arc<Scripted>>) -> Compactor {
    let c = Compactor::new(config(budget), Arc::new(HeuristicCounter));
    match summarizer {
        Some(s) => c.with_summarizer(s),
        None => c,
    }
}

/// The replay contract: sticky <= cut, the inserted message, everything after the cut,
/// after the elisions.
pub fn replay(input: &[Message], result: &CompactionResult) -> Vec<Message> {
    let repaired = plan::apply_repairs(input, &result.repairs);
    let elided: Vec<Message> = plan::apply_elisions(&repaired, &result.elisions);
    if result.cut_index < 0 {
        return elided;
    }
    let cut = result.cut_index as usize;
    // Pinned: sticky messages and the answers of a sticky turn (issue 10 item 20).
    let pins = plan::pinned(&elided[..=cut], &plan::Pairs::build(&elided[..=cut]));
    let mut out: Vec<Message> = elided[..=cut]
        .iter()
        .zip(pins)
        .filter(|(_, pin)| *pin)
        .map(|(m, _)| m.clone())
        .collect();
    out.push(Message::user(result.summary.clone()));
    out.extend(elided[cut + 1..].iter().cloned());
    out
}

/// Validates a pass's result against the conversation the pass ran over (the input
/// with its repairs and its recent-window cuts applied), with the recent window as the
/// pass fitted it: since issue 10 item 22 the window may shrink to its token cap, so it
/// starts after the cut and after every stub at the latest.
pub fn validate_pass(input: &[Message], result: &CompactionResult, keep_recent: usize) -> Result<(), plan::Violation> {
    let repaired = plan::apply_repairs(input, &result.repairs);
    let is_cut = |index: usize| result.truncations.iter().any(|t| t.index == index);
    let cuts: Vec<_> = result.elisions.iter().filter(|e| is_cut(e.index)).cloned().collect();
    let base = plan::apply_elisions(&repaired, &cuts);
    let mut start = plan::layout(&base, keep_recent).recent_start;
    if let Ok(cut) = usize::try_from(result.cut_index) {
        start = start.max(cut + 1);
    }
    for e in result.elisions.iter().filter(|e| !is_cut(e.index)) {
        start = start.max(e.index + 1);
    }
    plan::validate(&base, &result.messages, start.min(base.len()))
}

/// A result of a [`config`] compactor: it honours the replay contract, is valid, and
/// its token counts are the heuristic counts of its input and output.
pub fn check(input: &[Message], result: &CompactionResult) {
    assert_eq!(replay(input, result), result.messages, "replay contract");
    // The recent window may have shrunk to its token cap (issue 10 item 22): everything
    // after the cut is kept verbatim.
    validate_pass(input, result, 3).expect("valid result");
    assert_eq!(tokens(&result.messages), result.tokens_after);
    assert_eq!(tokens(input), result.tokens_before);
}

/// One pass of a heuristic-counting compactor over `config` with `summarizer`, with the
/// default options.
pub async fn compact_once(config: CompactorConfig, summarizer: Arc<Scripted>, input: &[Message]) -> CompactionResult {
    Compactor::new(config, Arc::new(HeuristicCounter))
        .with_summarizer(summarizer)
        .compact(input, CompactOptions::default())
        .await
        .unwrap()
}

/// No orphan result and no unanswered call, except the calls of a trailing turn that
/// only its own answers follow (pending): what a provider accepts.
pub fn provider_valid(messages: &[Message]) -> Result<(), String> {
    let pairs = plan::Pairs::build(messages);
    let mut answered = std::collections::HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        if m.is_tool_result() {
            if pairs.asker(i).is_none() {
                return Err(format!("message {i}: orphan result"));
            }
            answered.insert(m.tool_call_id.clone().unwrap_or_default());
        }
    }
    for (i, m) in messages.iter().enumerate() {
        let pending = messages[i + 1..].iter().all(Message::is_tool_result);
        for call in &m.tool_calls {
            if !pending && !answered.contains(&call.id) {
                return Err(format!("message {i}: call {} unanswered", call.id));
            }
        }
    }
    Ok(())
}

/// `compact` on a current-thread runtime with a paused clock (retries back off instantly).
pub fn run(compactor: &Compactor, input: &[Message]) -> Result<CompactionResult, llm_compactor::CompactError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(compactor.compact(input, CompactOptions::default()))
}
