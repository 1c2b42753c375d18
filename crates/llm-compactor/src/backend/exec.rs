//! [`ExecSummarizer`]: any command as a summarizer.
//!
//! The command runs through `sh -c` with the instruction in `COMPACTOR_SYSTEM_PROMPT`,
//! the output budget in `COMPACTOR_MAX_TOKENS` and the transcript on stdin; whatever it
//! prints on stdout is the summary. That makes every CLI model runner (`llm`, `ollama
//! run`, a script around `curl`) a summarizer without code. A command that cannot run
//! (exit 126 or 127) is a configuration problem and aborts at once; any other failure,
//! a timeout or an empty answer is worth another try.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use crate::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use crate::usage::Usage;

/// The environment variable that carries the instruction.
pub const SYSTEM_PROMPT_ENV: &str = "COMPACTOR_SYSTEM_PROMPT";
/// The environment variable that carries the output budget in tokens.
pub const MAX_TOKENS_ENV: &str = "COMPACTOR_MAX_TOKENS";

/// Most chars of a failing command's stderr kept in the error message.
const STDERR_KEEP: usize = 500;

/// A summarizer that runs a shell command.
///
/// ```no_run
/// use std::time::Duration;
/// use llm_compactor::backend::ExecSummarizer;
/// let summarizer = ExecSummarizer::new("llm -m gpt-4o-mini -s \"$COMPACTOR_SYSTEM_PROMPT\"")
///     .with_timeout(Duration::from_secs(120));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecSummarizer {
    command: String,
    timeout: Option<Duration>,
    input_room: Option<usize>,
}

impl ExecSummarizer {
    /// A summarizer running `command` with `sh -c`, without a timeout.
    pub fn new(command: impl Into<String>) -> Self {
        ExecSummarizer {
            command: command.into(),
            timeout: None,
            input_room: None,
        }
    }

    /// The same summarizer, killing the command after `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The same summarizer, declaring how many input tokens one request may carry (the
    /// compactor chunks the transcript to fit).
    pub fn with_input_room(mut self, tokens: usize) -> Self {
        self.input_room = Some(tokens);
        self
    }

    /// The command.
    pub fn command(&self) -> &str {
        &self.command
    }

    async fn run(&self, request: SummaryRequest) -> Result<SummaryReply, SummarizerError> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&self.command)
            .env(SYSTEM_PROMPT_ENV, &request.system)
            .env(MAX_TOKENS_ENV, request.max_output_tokens.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SummarizerError::new(FailureKind::Unavailable, format!("cannot start sh: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            let transcript = request.transcript.into_bytes();
            // A command that does not read its stdin is fine: ignore a broken pipe.
            tokio::spawn(async move {
                let _ = stdin.write_all(&transcript).await;
                let _ = stdin.shutdown().await;
            });
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(|e| SummarizerError::new(FailureKind::Other, format!("waiting for the command: {e}")))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr: String = stderr.trim().chars().take(STDERR_KEEP).collect();
        if !output.status.success() {
            let code = output.status.code();
            let kind = match code {
                Some(126 | 127) => FailureKind::Unavailable,
                _ => FailureKind::Other,
            };
            let status = code.map_or_else(|| "killed by a signal".to_owned(), |c| format!("exit status {c}"));
            return Err(SummarizerError::new(
                kind,
                format!("summarizer command failed ({status}): {stderr}"),
            ));
        }
        let text = String::from_utf8(output.stdout)
            .map_err(|_| SummarizerError::new(FailureKind::Parse, "the command's output is not UTF-8"))?;
        if text.trim().is_empty() {
            return Err(SummarizerError::new(FailureKind::Empty, "the command printed nothing"));
        }
        Ok(SummaryReply {
            text: text.trim().to_owned(),
            stop: StopReason::Complete,
            usage: Usage::default(),
        })
    }
}

#[async_trait]
impl Summarizer for ExecSummarizer {
    fn name(&self) -> &str {
        "exec"
    }

    fn input_room(&self) -> Option<usize> {
        self.input_room
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let run = async {
            match self.timeout {
                None => self.run(request).await,
                Some(timeout) => tokio::time::timeout(timeout, self.run(request))
                    .await
                    .unwrap_or_else(|_| {
                        Err(SummarizerError::new(
                            FailureKind::Timeout,
                            format!("the command did not finish within {timeout:?}"),
                        ))
                    }),
            }
        };
        // Dropping the running future drops the child, which kills it (kill_on_drop).
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "cancelled")),
            outcome = run => outcome,
        }
    }
}
