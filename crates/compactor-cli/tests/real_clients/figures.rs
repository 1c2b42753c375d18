//! The figures of one real-client run and the goals they are judged by: what the
//! model received (rounds, tokens against the budget, refusals, cache marks, thinking
//! blocks), and through the proxy its passes, transcripts, replay and latency. Every goal
//! is judged and every miss reported with its numbers, so that one run tells the whole
//! story instead of stopping at the first broken promise.

use std::path::Path;

use llm_compactor::Message;
use llm_compactor::format::responses::ResponsesRequest;
use serde_json::Value;

use super::model::{self, Received, Turn};
use super::{Client, MAX_LATENCY_MS, Run, label, proxy, rules};

/// The figures of a run.
#[derive(Default)]
pub struct Figures {
    exit: Option<i32>,
    rounds_done: usize,
    finished: bool,
    lost: usize,
    requests: usize,
    max_bytes: usize,
    max_tokens: usize,
    over_budget: usize,
    refused: usize,
    first_refusal: Option<String>,
    max_marks: usize,
    over_marks: usize,
    thinking: usize,
    invalid_thinking: usize,
    dropped_thinking: usize,
    cleared: usize,
    requests_with_invalid: usize,
    unopened_loops: usize,
    newest_cut: usize,
    pub seconds: f64,
    model_seconds: f64,
    // Through the proxy only.
    proxied: bool,
    compactions: u64,
    elisions: u64,
    summaries: usize,
    trims: usize,
    elision_epochs: usize,
    transcripts: Vec<String>,
    replay: Option<String>,
    breaks: usize,
    latency_ms: f64,
    latency_count: u64,
    starts_over: usize,
    prepared: Vec<(String, u64)>,
    native_served: u64,
    native_resolved: u64,
}

impl Figures {
    pub fn of(run: &Run, output: &std::process::Output, received: &[Received]) -> Figures {
        let budget = run.budget.unwrap_or(usize::MAX);
        let refusals: Vec<&Received> = received.iter().filter(|r| r.status >= 400).collect();
        Figures {
            exit: output.status.code(),
            rounds_done: received
                .iter()
                .filter_map(|r| match r.turn {
                    Some(Turn::Call(n)) => Some(n - 1),
                    Some(Turn::Final) => Some(run.rounds),
                    _ => None,
                })
                .max()
                .unwrap_or(0),
            finished: received.iter().any(|r| r.turn == Some(Turn::Final))
                && String::from_utf8_lossy(&output.stdout).contains(model::FINAL),
            lost: received.iter().filter(|r| r.turn == Some(Turn::Lost)).count(),
            requests: received.len(),
            max_bytes: received.iter().map(|r| r.bytes.len()).max().unwrap_or(0),
            max_tokens: received.iter().map(|r| r.tokens).max().unwrap_or(0),
            over_budget: received.iter().filter(|r| r.tokens > budget).count(),
            refused: refusals.len(),
            first_refusal: refusals.first().and_then(|r| r.error.clone()),
            max_marks: received.iter().map(|r| r.marks).max().unwrap_or(0),
            over_marks: received.iter().filter(|r| r.marks > rules::MAX_BREAKPOINTS).count(),
            thinking: received.iter().map(|r| r.thinking).sum(),
            invalid_thinking: received.iter().map(|r| r.invalid_thinking).sum(),
            dropped_thinking: received.iter().map(|r| r.dropped_thinking).sum(),
            cleared: received.iter().map(|r| r.cleared).sum(),
            requests_with_invalid: received.iter().filter(|r| r.invalid_thinking > 0).count(),
            unopened_loops: received.iter().filter(|r| r.unopened_loop).count(),
            newest_cut: received.iter().filter(|r| r.newest_cut).count(),
            model_seconds: received.iter().map(|r| r.judged_in.as_secs_f64()).sum(),
            ..Figures::default()
        }
    }

    pub fn through_proxy(
        &mut self,
        run: &Run,
        metrics: &proxy::Metrics,
        store: &str,
        dir: &Path,
        received: &[Received],
        log: &[String],
    ) {
        self.proxied = true;
        self.compactions = metrics.compactions;
        self.elisions = metrics.elisions;
        self.latency_ms = metrics.latency_mean_ms;
        self.latency_count = metrics.latency_count;
        self.prepared = metrics.prepared.clone();
        self.native_served = metrics.native_served;
        self.native_resolved = metrics.native_resolved;
        self.starts_over = log.iter().filter(|l| l.contains("starts over")).count();
        self.transcripts = proxy::sessions(store);
        // The client's session: the root transcript (not a `~` continuation) with the most
        // lines (a side request, such as a title, makes a session of its own).
        let mut root = (0, 0);
        for (n, session) in self.transcripts.iter().enumerate() {
            let file = proxy::export(store, session, dir, n);
            let (summaries, trims, epochs) = proxy::passes(&file);
            self.summaries += summaries;
            self.trims += trims;
            self.elision_epochs += epochs;
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if !session.contains('~') && lines > root.1 {
                root = (n, lines);
            }
        }
        // The agent's own requests: those with tools (side requests are other conversations).
        let agent: Vec<&Received> = received
            .iter()
            .filter(|r| r.body["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect();
        self.breaks = agent
            .windows(2)
            .filter(|pair| {
                let (prev, next) = (wire(run.client, pair[0]), wire(run.client, pair[1]));
                next.len() < prev.len() || next[..prev.len()] != prev[..]
            })
            .count();
        if let (Some(session), Some(last)) = (self.transcripts.get(root.0), agent.last().copied()) {
            let file = proxy::export(store, session, dir, 1000);
            self.replay = replay_difference(run.client, &file, last);
            // Where the session continued (`proxy-continued`), the current transcript too.
            let continued = proxy::continued(&file);
            if let (Some(_), Some(current)) = (&self.replay, continued.last()) {
                let file = proxy::export(store, current, dir, 1001);
                let current = replay_difference(run.client, &file, last).unwrap_or_else(|| "equal".to_owned());
                self.replay = self.replay.take().map(|root| {
                    format!(
                        "{root}; the current transcript, after {} continuations: {current}",
                        continued.len()
                    )
                });
            }
        } else {
            self.replay = Some("no session or no request to compare".to_owned());
        }
    }

    /// The goals missed, in words with their figures.
    pub fn missed(&self, run: &Run) -> Vec<String> {
        let mut missed = Vec::new();
        let mut goal = |ok: bool, what: String| {
            if !ok {
                missed.push(what);
            }
        };
        goal(
            self.exit == Some(0),
            format!("the client exits 0 (exit {:?})", self.exit),
        );
        goal(
            self.finished && self.rounds_done == run.rounds,
            format!(
                "all {} rounds and the final answer ({} rounds done, {} lost counts)",
                run.rounds, self.rounds_done, self.lost
            ),
        );
        goal(
            self.refused == 0,
            format!(
                "no request refused: {} refused, first: {:?}",
                self.refused, self.first_refusal
            ),
        );
        goal(
            self.newest_cut == 0,
            format!(
                "the newest tool result is read whole: cut in {} requests",
                self.newest_cut
            ),
        );
        goal(
            self.over_marks == 0,
            format!(
                "at most 4 cache marks: {} requests over, max {}",
                self.over_marks, self.max_marks
            ),
        );
        if run.enforce_thinking {
            // Blocks the model drops at the request's asking (`drop_block`, the documented
            // remedy after a summary) are not refusals; any other invalid block is.
            goal(
                self.invalid_thinking == self.dropped_thinking && self.unopened_loops == 0,
                format!(
                    "thinking stays bound: {} invalid blocks ({} dropped at the request's asking) in {} requests, {} loops without their thinking",
                    self.invalid_thinking, self.dropped_thinking, self.requests_with_invalid, self.unopened_loops
                ),
            );
        }
        let Some(budget) = run.budget else { return missed };
        goal(
            self.over_budget == 0,
            format!(
                "every request within {budget}: {} over, max {}",
                self.over_budget, self.max_tokens
            ),
        );
        if run.summary {
            goal(
                self.summaries >= 1,
                format!(
                    "at least one summary pass: {} (compactions {})",
                    self.summaries, self.compactions
                ),
            );
        } else {
            // Aging alone may keep a run inside its budget (the cost policy's cheapest
            // epoch): at least one pass, of any kind.
            goal(
                self.compactions >= 1,
                format!("at least one pass: {} compactions", self.compactions),
            );
        }
        if run.remote_compaction.is_some() {
            goal(
                self.native_served >= 3 && self.native_resolved >= self.native_served - 1,
                format!(
                    "the client's own compaction crossed at least 3 times, each item sent back and opened: {} served, {} opened",
                    self.native_served, self.native_resolved
                ),
            );
        }
        // One transcript per conversation the client holds: none continued in a fork
        // (`KEY~xxxxxxxx`). A client's side conversation (opencode's title request: another
        // system prompt, no tools) is a session of its own.
        let forks = self.transcripts.iter().filter(|k| k.contains('~')).count();
        goal(
            forks == 0 && self.starts_over == 0,
            format!(
                "one transcript per client conversation: {} forks ({} logged starts over): {:?}",
                forks, self.starts_over, self.transcripts
            ),
        );
        goal(
            self.replay.is_none(),
            format!(
                "export + replay is the last request: {}",
                self.replay.clone().unwrap_or_default()
            ),
        );
        goal(
            self.breaks as u64 <= self.compactions,
            format!(
                "every prefix break lines up with a pass: {} breaks, {} passes",
                self.breaks, self.compactions
            ),
        );
        goal(
            self.latency_ms <= MAX_LATENCY_MS || !proxy::optimized(),
            format!(
                "added latency ≤ {MAX_LATENCY_MS} ms mean: {:.2} ms over {}",
                self.latency_ms, self.latency_count
            ),
        );
        missed
    }

    pub fn line(&self, run: &Run) -> String {
        let budget = run.budget.map_or_else(|| "no budget".to_owned(), |b| b.to_string());
        let mut line = format!(
            "real-client {}: {:.0} s (model {:.1} s), exit {:?}, rounds {}/{}{}, requests {} (largest {} KB), max {} tokens / {budget} ({} over), \
             marks max {} ({} over 4), refused {}, newest result cut in {}, thinking {} blocks ({} invalid in {} requests, {} of them dropped, {} unopened loops), {} results cleared by the server",
            label(run),
            self.seconds,
            self.model_seconds,
            self.exit,
            self.rounds_done,
            run.rounds,
            if self.finished { " + final" } else { "" },
            self.requests,
            self.max_bytes / 1024,
            self.max_tokens,
            self.over_budget,
            self.max_marks,
            self.over_marks,
            self.refused,
            self.newest_cut,
            self.thinking,
            self.invalid_thinking,
            self.requests_with_invalid,
            self.dropped_thinking,
            self.unopened_loops,
            self.cleared,
        );
        if self.proxied {
            line += &format!(
                ", passes {} (summaries {}, trims {}, elision epochs {}, {} results stubbed), prepared {:?}, transcripts {} ({} starts over), \
                 replay {}, prefix breaks {}, latency {:.2} ms mean over {}{}",
                self.compactions,
                self.summaries,
                self.trims,
                self.elision_epochs,
                self.elisions,
                self.prepared.iter().filter(|(_, n)| *n > 0).collect::<Vec<_>>(),
                self.transcripts.len(),
                self.starts_over,
                if self.replay.is_none() { "equal" } else { "DIFFERS" },
                self.breaks,
                self.latency_ms,
                self.latency_count,
                if proxy::optimized() {
                    ""
                } else {
                    " (unoptimized proxy: not judged; see COMPACTOR_PROXY_BIN)"
                },
            );
            if run.remote_compaction.is_some() {
                line += &format!(
                    ", client compactions served {} (items opened {})",
                    self.native_served, self.native_resolved
                );
            }
        }
        line
    }
}

/// A request's conversation as it went on the wire, without the request-only cache marks.
fn wire(client: Client, received: &Received) -> Vec<Value> {
    let field = if client == Client::Codex { "input" } else { "messages" };
    received.body[field]
        .as_array()
        .map(|items| items.iter().map(unmarked).collect())
        .unwrap_or_default()
}

/// `value` without `cache_control` anywhere.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// How the replay of `file` differs from what `last` carried (`None`: it does not).
/// Anthropic: the `messages` byte for byte (compact JSON, key order kept) modulo cache
/// marks; Responses (no replay format of its own): the library's messages.
fn replay_difference(client: Client, file: &Path, last: &Received) -> Option<String> {
    if client == Client::Codex {
        proxy::replay(file, "openai");
        let text = std::fs::read(file).unwrap();
        let transcript = llm_compactor::session::Transcript::parse(file, &text).unwrap();
        let replayed: Vec<Message> = transcript
            .messages()
            .iter()
            .map(|m| Message { id: None, ..m.clone() })
            .collect();
        let sent = ResponsesRequest::from_value(last.body.clone(), "upstream")
            .unwrap()
            .into_messages();
        return (replayed != sent).then(|| format!("{} messages replayed, {} sent", replayed.len(), sent.len()));
    }
    // Where the request asked the server to clear its oldest tool results (in place of
    // the proxy's stubs, under preserved thinking), the two are compared as the model
    // read them: the transcript holds our stubs where the request holds the client's
    // bytes, and the server replaces both with its placeholder.
    let as_read = |mut body: Value| {
        if let Some(management) = last.body.get("context_management") {
            body["context_management"] = management.clone();
            llm_compactor::format::context_management::cleared_by_provider(&mut body, "[cleared]");
        }
        body
    };
    let replayed = wire(
        client,
        &Received {
            body: as_read(proxy::replay(file, "anthropic")),
            ..last.clone()
        },
    );
    let sent = wire(
        client,
        &Received {
            body: as_read(last.body.clone()),
            ..last.clone()
        },
    );
    let at = (0..replayed.len().max(sent.len())).find(|&i| {
        let text = |items: &[Value]| items.get(i).map(|v| serde_json::to_string(v).unwrap());
        text(&replayed) != text(&sent)
    })?;
    let show = |items: &[Value]| {
        items.get(at).map_or_else(
            || "(none)".to_owned(),
            |v| head(&serde_json::to_string(v).unwrap(), 300).to_owned(),
        )
    };
    Some(format!(
        "{} messages replayed, {} sent; first difference at message {at}: replayed {} / sent {}",
        replayed.len(),
        sent.len(),
        show(&replayed),
        show(&sent)
    ))
}

/// The first `max` bytes of `text`, cut at a character boundary.
fn head(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
