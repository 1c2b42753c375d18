//! [`ExecSummarizer`]: any command as a summarizer.
//!
//! The command runs through `sh -c` with the instruction in `COMPACTOR_SYSTEM_PROMPT`,
//! the output budget in `COMPACTOR_MAX_TOKENS` and the transcript on stdin; whatever it
//! prints on stdout is the summary. That makes every CLI model runner (`llm`, `ollama
//! run`, a script around `curl`) a summarizer without code. A command that cannot run
//! (exit 126 or 127) is a configuration problem and aborts at once; any other failure,
//! a timeout or an empty answer is worth another try.
//!
//! A command is an untrusted neighbour, so every call is bounded:
//! - a timeout, [`DEFAULT_TIMEOUT`] (300 s) unless [`ExecSummarizer::with_timeout`] says
//!   otherwise;
//! - stdout is read incrementally and capped at the output budget × 16 bytes, at least
//!   1 MiB ([`stdout_cap`]); a command printing more fails the call (it is not a
//!   summary) instead of filling memory;
//! - stderr is drained as it comes and only its last [`STDERR_KEEP_BYTES`] (64 KiB) are
//!   kept (its last 500 chars go into the error message);
//! - the command is the leader of its own process group, and the whole group is killed
//!   when the call ends for any reason (finished, timed out, over the cap, cancelled by
//!   Ctrl-C or SIGTERM, or the future dropped), so no grandchild outlives it;
//! - the call ends when the command itself exits: a background grandchild that still
//!   holds stdout does not keep it waiting (what is already in the pipe is read within
//!   [`DRAIN_GRACE`]).

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::process_group::ProcessGroup;
use crate::summarize::{FailureKind, StopReason, Summarizer, SummarizerError, SummaryReply, SummaryRequest};
use crate::usage::Usage;

/// The environment variable that carries the instruction.
pub const SYSTEM_PROMPT_ENV: &str = "COMPACTOR_SYSTEM_PROMPT";
/// The environment variable that carries the output budget in tokens.
pub const MAX_TOKENS_ENV: &str = "COMPACTOR_MAX_TOKENS";

/// The timeout of a call unless [`ExecSummarizer::with_timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes of stdout allowed per token of output budget.
pub const STDOUT_BYTES_PER_TOKEN: usize = 16;
/// The least stdout cap, whatever the output budget.
pub const MIN_STDOUT_CAP: usize = 1024 * 1024;
/// The most bytes of stderr kept (the last ones).
pub const STDERR_KEEP_BYTES: usize = 64 * 1024;
/// After the command exits (and its group is killed), how long what is left in its
/// pipes is still read. Bounded because a grandchild that escaped the group (its own
/// `setsid`) may hold them open forever.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Most chars of a failing command's stderr kept in the error message.
const STDERR_KEEP: usize = 500;
/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 16 * 1024;

/// The stdout cap of a request with this output budget: `max_output_tokens` ×
/// [`STDOUT_BYTES_PER_TOKEN`], at least [`MIN_STDOUT_CAP`].
///
/// ```
/// use llm_compactor::backend::exec::{stdout_cap, MIN_STDOUT_CAP};
/// assert_eq!(stdout_cap(512), MIN_STDOUT_CAP);
/// assert_eq!(stdout_cap(1_000_000), 16_000_000);
/// ```
pub fn stdout_cap(max_output_tokens: u32) -> usize {
    (max_output_tokens as usize)
        .saturating_mul(STDOUT_BYTES_PER_TOKEN)
        .max(MIN_STDOUT_CAP)
}

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
    timeout: Duration,
    input_room: Option<usize>,
}

impl ExecSummarizer {
    /// A summarizer running `command` with `sh -c`, with the [`DEFAULT_TIMEOUT`].
    pub fn new(command: impl Into<String>) -> Self {
        ExecSummarizer {
            command: command.into(),
            timeout: DEFAULT_TIMEOUT,
            input_room: None,
        }
    }

    /// The same summarizer, killing the command (and its process group) after `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
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

    /// The timeout of one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    async fn run(&self, request: SummaryRequest) -> Result<SummaryReply, SummarizerError> {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&self.command)
            .env(SYSTEM_PROMPT_ENV, &request.system)
            .env(MAX_TOKENS_ENV, request.max_output_tokens.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command
            .spawn()
            .map_err(|e| SummarizerError::new(FailureKind::Unavailable, format!("cannot start sh: {e}")))?;
        // Dropped on every way out of this function (and of the future): kills the group.
        let mut group = ProcessGroup::led_by(&child);
        if let Some(mut stdin) = child.stdin.take() {
            let transcript = request.transcript.into_bytes();
            // A command that does not read its stdin is fine: ignore a broken pipe. The
            // task ends when the pipe closes, at the latest when the group is killed.
            tokio::spawn(async move {
                let _ = stdin.write_all(&transcript).await;
                let _ = stdin.shutdown().await;
            });
        }
        let cap = stdout_cap(request.max_output_tokens);
        let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let status = {
            let read_out = read_capped(stdout.as_mut(), &mut out, cap);
            let read_err = read_tail(stderr.as_mut(), &mut err, STDERR_KEEP_BYTES);
            tokio::pin!(read_out, read_err);
            let (mut out_done, mut err_done) = (false, false);
            let waited = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    within = &mut read_out, if !out_done => {
                        out_done = true;
                        if !within {
                            return Err(SummarizerError::new(
                                FailureKind::Parse,
                                format!("the command printed more than {cap} bytes (the cap is the output budget x {STDOUT_BYTES_PER_TOKEN}, at least 1 MiB)"),
                            ));
                        }
                    }
                    () = &mut read_err, if !err_done => err_done = true,
                }
            };
            // The command has exited: whatever it left running goes, which closes the
            // pipes, and what is already in them is read.
            group.kill();
            let drain = async {
                let out_ok = if out_done { true } else { read_out.await };
                if !err_done {
                    read_err.await;
                }
                out_ok
            };
            match tokio::time::timeout(DRAIN_GRACE, drain).await {
                Ok(false) => {
                    return Err(SummarizerError::new(
                        FailureKind::Parse,
                        format!("the command printed more than {cap} bytes"),
                    ));
                }
                Ok(true) => {}
                Err(_) => tracing::warn!("the summarizer command's pipes stayed open after it exited; read what came"),
            }
            waited.map_err(|e| SummarizerError::new(FailureKind::Other, format!("waiting for the command: {e}")))?
        };
        let stderr = String::from_utf8_lossy(&err);
        let stderr = last_chars(stderr.trim(), STDERR_KEEP);
        if !status.success() {
            let code = status.code();
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
        let text = String::from_utf8(out)
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

/// Reads `pipe` to its end into `out`; false (and stops reading) once more than `cap`
/// bytes came. A read error ends the output.
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<&mut R>, out: &mut Vec<u8>, cap: usize) -> bool {
    let Some(pipe) = pipe else { return true };
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => return true,
            Ok(n) => {
                if out.len() + n > cap {
                    return false;
                }
                out.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Reads `pipe` to its end, keeping only its last `keep` bytes in `out`.
async fn read_tail<R: AsyncRead + Unpin>(pipe: Option<&mut R>, out: &mut Vec<u8>, keep: usize) {
    let Some(pipe) = pipe else { return };
    let mut chunk = vec![0; READ_CHUNK];
    loop {
        let n = pipe.read(&mut chunk).await.unwrap_or(0);
        out.extend_from_slice(&chunk[..n]);
        // Amortized: trim when twice over, and once at the end.
        if out.len() > 2 * keep || (n == 0 && out.len() > keep) {
            out.drain(..out.len() - keep);
        }
        if n == 0 {
            return;
        }
    }
}

/// The last `n` chars of `text`, with `…` in front when cut.
fn last_chars(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - n).collect();
    format!("…{tail}")
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
        let timeout = self.timeout;
        let run = async {
            tokio::time::timeout(timeout, self.run(request))
                .await
                .unwrap_or_else(|_| {
                    Err(SummarizerError::new(
                        FailureKind::Timeout,
                        format!("the command did not finish within {timeout:?}"),
                    ))
                })
        };
        // Dropping the running future drops the child and the group guard, which kill
        // the command and everything it started.
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(SummarizerError::new(FailureKind::Cancelled, "cancelled")),
            outcome = run => outcome,
        }
    }
}
