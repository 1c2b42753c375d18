//! A minimal but real tool-using agent loop on top of [`ContextManager`].
//!
//! It talks to any OpenAI-compatible chat-completions server, gives the model two tools
//! (`shell` and `read_file`), and keeps the conversation inside the context window with
//! the compactor (observation aging on), recording everything in a session transcript
//! that replays to the conversation it ended with.
//!
//! ```text
//! cargo run --example agent_loop -- \
//!     --base-url http://127.0.0.1:8080/v1 --model my-model --session run.jsonl \
//!     "Find out why the build fails"
//! ```
//!
//! `--base-url`, `--model` and `--api-key` fall back to `OPENAI_BASE_URL`, `OPENAI_MODEL`
//! and `OPENAI_API_KEY`. Running it again with the same `--session` resumes the run.
//!
//! The loop lives in [`run_agent`] (not in `main`) so that the integration test
//! `tests/session_agent_loop.rs` compiles this very file as a module and drives the same
//! code against a scripted server on 127.0.0.1.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use llm_compactor::Usage;
use llm_compactor::compactor::{Compactor, CompactorConfig};
use llm_compactor::count::{CalibratedCounter, TokenCounter};
use llm_compactor::message::{Content, Message, ToolCall};
use llm_compactor::session::{
    BackendRoom, CompactionReason, ContextEvent, ContextManager, ManagerError, RequestShape, Session, SessionOptions,
};
use llm_compactor::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Everything the agent needs to run.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The server's base URL, up to and including `/v1`.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// A bearer token, if the server wants one.
    pub api_key: Option<String>,
    /// The session transcript (created, or resumed when it exists).
    pub session: PathBuf,
    /// Where the tools run.
    pub workdir: PathBuf,
    /// The task.
    pub task: String,
    /// The model's context window in tokens.
    pub window: usize,
    /// Tokens reserved for each answer.
    pub completion_reserve: usize,
    /// The compactor's settings.
    pub compactor: CompactorConfig,
    /// At most this many model requests.
    pub max_rounds: usize,
}

/// How the run ended.
#[derive(Clone, Debug)]
pub struct AgentOutcome {
    /// The conversation it ended with (every message with its transcript id).
    pub messages: Vec<Message>,
    /// The model's final answer (empty if the run hit `max_rounds`).
    pub answer: String,
    /// Model requests made.
    pub rounds: usize,
    /// Passes that ran, by reason, with whether they summarized or only elided.
    pub passes: Vec<(CompactionReason, usize, usize)>,
}

/// What stopped the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The context manager (transcript, compactor, or an exhausted context).
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// The session could not be opened.
    #[error(transparent)]
    Session(#[from] llm_compactor::session::SessionError),
    /// The model server failed.
    #[error("model request failed: {0}")]
    Chat(ChatError),
}

/// A failed chat-completions request.
#[derive(Debug)]
pub struct ChatError {
    /// The HTTP status, if the server answered.
    pub status: Option<u16>,
    /// The error text.
    pub message: String,
    /// The server said the request exceeds the model's context window.
    pub context_length_exceeded: bool,
}

impl std::fmt::Display for ChatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => write!(f, "HTTP {status}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// A small OpenAI chat-completions client (tool calls and usage included).
#[derive(Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    base_url: String,
    model: String,
    api_key: Option<String>,
}

/// One answer of the model.
pub struct ChatReply {
    /// The assistant message.
    pub message: Message,
    /// What the request was billed.
    pub usage: Option<Usage>,
    /// `finish_reason`.
    pub finish_reason: String,
}

impl ChatClient {
    /// A client for `base_url` (ending in `/v1`).
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Self {
        ChatClient {
            http: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            model: model.to_owned(),
            api_key,
        }
    }

    /// One chat completion.
    pub async fn complete(
        &self,
        messages: &[Value],
        tools: &[Value],
        max_tokens: Option<u32>,
    ) -> Result<ChatReply, ChatError> {
        let mut body = json!({ "model": self.model, "messages": messages });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools.to_vec());
        }
        if let Some(max) = max_tokens {
            body["max_tokens"] = json!(max);
        }
        let mut request = self
            .http
            .post(format!("{}/chat/completions", self.base_url))
            .json(&body);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let failed = |status: Option<u16>, message: String| ChatError {
            context_length_exceeded: status == Some(400)
                && (message.contains("context_length_exceeded") || message.contains("maximum context length")),
            status,
            message,
        };
        let response = request.send().await.map_err(|e| failed(None, e.to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| failed(Some(status.as_u16()), e.to_string()))?;
        if !status.is_success() {
            return Err(failed(Some(status.as_u16()), text));
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| failed(None, format!("bad JSON: {e}")))?;
        let choice = &value["choices"][0];
        let wire = &choice["message"];
        let mut message = Message::assistant("");
        message.content = match &wire["content"] {
            Value::String(text) => Content::Text(text.clone()),
            _ => Content::Null,
        };
        message.tool_calls = wire["tool_calls"]
            .as_array()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        ToolCall::new(
                            c["id"].as_str().unwrap_or_default(),
                            c["function"]["name"].as_str().unwrap_or_default(),
                            c["function"]["arguments"].as_str().unwrap_or("{}"),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let usage = value.get("usage").map(|u| Usage {
            input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
            output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
            cache_read_tokens: u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
            cache_write_tokens: 0,
        });
        Ok(ChatReply {
            message,
            usage,
            finish_reason: choice["finish_reason"].as_str().unwrap_or("stop").to_owned(),
        })
    }
}

/// A message as the OpenAI chat wire carries it.
pub fn to_openai(message: &Message) -> Value {
    let mut wire = json!({ "role": message.role.as_str() });
    if !message.content.is_absent() {
        wire["content"] = message.content.to_value();
    }
    if !message.tool_calls.is_empty() {
        wire["tool_calls"] = message
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if let Some(id) = &message.tool_call_id {
        wire["tool_call_id"] = json!(id);
    }
    if let Some(name) = &message.name {
        wire["name"] = json!(name);
    }
    wire
}

/// The summarizer: the same server, no tools.
struct ChatSummarizer(ChatClient);

#[async_trait]
impl Summarizer for ChatSummarizer {
    fn name(&self) -> &str {
        "chat"
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let messages = [
            json!({"role": "system", "content": request.system}),
            json!({"role": "user", "content": request.transcript}),
        ];
        let call = self.0.complete(&messages, &[], Some(request.max_output_tokens));
        let reply = tokio::select! {
            reply = call => reply,
            () = cancel.cancelled() => return Err(SummarizerError::new(FailureKind::Cancelled, "cancelled")),
        };
        match reply {
            Ok(reply) => Ok(SummaryReply::new(
                reply.message.text(),
                if reply.finish_reason == "length" {
                    StopReason::Truncated
                } else {
                    StopReason::Complete
                },
                reply.usage.unwrap_or_default(),
            )),
            Err(e) => {
                let kind = match e.status {
                    Some(status) => FailureKind::Http { status },
                    None => FailureKind::Connect,
                };
                Err(SummarizerError::new(kind, e.message))
            }
        }
    }
}

/// The two tools the model gets.
pub fn tool_declarations() -> Vec<Value> {
    vec![
        json!({"type": "function", "function": {
            "name": "shell",
            "description": "Run a shell command in the working directory; returns its exit status and output.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
        }}),
        json!({"type": "function", "function": {
            "name": "read_file",
            "description": "Read a text file, relative to the working directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
        }}),
    ]
}

/// Runs one tool call; failures are reported to the model as text, never raised.
pub async fn run_tool(workdir: &Path, call: &ToolCall) -> String {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    match call.name.as_str() {
        "read_file" => {
            let Some(path) = args["path"].as_str() else {
                return "error: read_file needs a \"path\"".to_owned();
            };
            match tokio::fs::read_to_string(workdir.join(path)).await {
                Ok(text) => text,
                Err(e) => format!("error: {path}: {e}"),
            }
        }
        "shell" => {
            let Some(command) = args["command"].as_str() else {
                return "error: shell needs a \"command\"".to_owned();
            };
            match tokio::process::Command::new("sh")
                .arg("-c")
                .arg(command)
                .current_dir(workdir)
                .output()
                .await
            {
                Ok(out) => format!(
                    "exit status: {}\n{}{}",
                    out.status.code().map_or_else(|| "killed".to_owned(), |c| c.to_string()),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
                Err(e) => format!("error: {e}"),
            }
        }
        other => format!("error: no tool named {other:?}"),
    }
}

/// The agent loop.
///
/// # Errors
/// A model request that failed for a reason other than context length, a transcript that
/// could not be written, or a context that no compaction can make fit (the transcript is
/// written first).
pub async fn run_agent(config: &AgentConfig) -> Result<AgentOutcome, AgentError> {
    let client = ChatClient::new(&config.base_url, &config.model, config.api_key.clone());
    // One calibrated counter, shared: the compactor proves with it, the manager counts
    // with it, and every billed response recalibrates it.
    let calibrated = Arc::new(CalibratedCounter::new());
    let counter: Arc<dyn TokenCounter> = calibrated.clone();
    let compactor =
        Compactor::new(config.compactor.clone(), counter).with_summarizer(Arc::new(ChatSummarizer(client.clone())));
    let session = if config.session.exists() {
        Session::open(&config.session, SessionOptions::new())?.0
    } else {
        Session::create(&config.session, SessionOptions::new())?
    };
    let passes = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = passes.clone();
    let mut manager = ContextManager::new(Arc::new(compactor), session)
        .with_room(BackendRoom {
            window: config.window,
            completion_reserve: config.completion_reserve,
            safety_margin: config.window / 50,
        })
        .with_usage_recorder(calibrated)
        .with_observer(Arc::new(move |event: &ContextEvent| {
            if let ContextEvent::CompactionDone {
                reason,
                dropped,
                elided,
                ..
            } = event
            {
                if let Ok(mut passes) = seen.lock() {
                    passes.push((*reason, *dropped, *elided));
                }
            }
        }));
    if manager.messages().is_empty() {
        manager.push(Message::system(
            "You are a careful agent. Use the tools to inspect the working directory, then answer.",
        ))?;
        manager.push(Message::user(config.task.clone()))?;
    }
    manager.begin_run();
    let tools = tool_declarations();
    let shape = RequestShape::new().with_tools(&tools).with_context("");
    let cancel = CancellationToken::new();
    let rounds = AtomicUsize::new(0);
    let mut answer = String::new();
    while rounds.load(Ordering::Relaxed) < config.max_rounds {
        // Borrowed: the manager keeps the one conversation, a round copies nothing but
        // the wire form it sends.
        let mut wire: Vec<Value> = manager
            .prepare_borrowed(shape, cancel.clone())
            .await?
            .messages
            .iter()
            .map(to_openai)
            .collect();
        let reply = loop {
            rounds.fetch_add(1, Ordering::Relaxed);
            match client
                .complete(&wire, &tools, Some(config.completion_reserve as u32))
                .await
            {
                Ok(reply) => break reply,
                Err(e) if e.context_length_exceeded => {
                    let prepared = manager.on_context_length_exceeded(shape, cancel.clone()).await?;
                    wire = prepared.messages.iter().map(to_openai).collect();
                }
                Err(e) => return Err(AgentError::Chat(e)),
            }
        };
        let calls = reply.message.tool_calls.clone();
        let text = reply.message.text();
        manager.record_response(reply.usage, &config.model, [reply.message])?;
        if calls.is_empty() {
            answer = text;
            break;
        }
        for call in &calls {
            let output = run_tool(&config.workdir, call).await;
            manager.push(Message::tool(call.id.clone(), output))?;
        }
    }
    let passes = passes.lock().map(|p| p.clone()).unwrap_or_default();
    Ok(AgentOutcome {
        messages: manager.messages().to_vec(),
        answer,
        rounds: rounds.load(Ordering::Relaxed),
        passes,
    })
}

fn arg_or_env(args: &mut Vec<String>, flag: &str, env: &str) -> Option<String> {
    if let Some(at) = args.iter().position(|a| a == flag)
        && at + 1 < args.len()
    {
        let value = args.remove(at + 1);
        args.remove(at);
        return Some(value);
    }
    std::env::var(env).ok()
}

#[tokio::main]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let base_url =
        arg_or_env(&mut args, "--base-url", "OPENAI_BASE_URL").unwrap_or_else(|| "http://127.0.0.1:8080/v1".into());
    let model = arg_or_env(&mut args, "--model", "OPENAI_MODEL").unwrap_or_else(|| "default".into());
    let api_key = arg_or_env(&mut args, "--api-key", "OPENAI_API_KEY");
    let session = arg_or_env(&mut args, "--session", "AGENT_SESSION").unwrap_or_else(|| "agent-session.jsonl".into());
    let window: usize = arg_or_env(&mut args, "--window", "AGENT_WINDOW")
        .and_then(|w| w.parse().ok())
        .unwrap_or(32_000);
    let task = args.join(" ");
    if task.is_empty() {
        eprintln!("usage: agent_loop [--base-url URL] [--model M] [--api-key K] [--session FILE] [--window N] TASK");
        std::process::exit(2);
    }
    let compactor = match CompactorConfig::builder(window).age_observations(true).build() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("agent_loop: {e}");
            std::process::exit(2);
        }
    };
    let config = AgentConfig {
        base_url,
        model,
        api_key,
        session: PathBuf::from(session),
        workdir: PathBuf::from("."),
        task,
        window,
        completion_reserve: 4_096,
        compactor,
        max_rounds: 50,
    };
    match run_agent(&config).await {
        Ok(outcome) => {
            println!("{}", outcome.answer);
            eprintln!(
                "agent_loop: {} rounds, {} passes, {} messages in {}",
                outcome.rounds,
                outcome.passes.len(),
                outcome.messages.len(),
                config.session.display()
            );
        }
        Err(e) => {
            eprintln!("agent_loop: {e}");
            std::process::exit(1);
        }
    }
}
