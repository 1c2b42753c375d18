//! What a report shows, as data: built by [`crate::build`], drawn by [`crate::chart`],
//! laid out by [`crate::page`].
//!
//! Every number here comes from the transcript (a pass's recorded tokens, receipt and
//! summarizer usage; the billed usage an assistant turn carries) or from counting the
//! replayed conversation with the report's counter; nothing is estimated without saying
//! so (the cost saved is labelled an estimate, in base-input-token units).

use llm_compactor::Usage;
use llm_compactor::plan::CostReceipt;
use serde::Serialize;

/// One request of the session: the conversation as it stood when an assistant turn was
/// asked for (or, last, as the next request would carry it).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestPoint {
    /// 1-based request number.
    pub number: usize,
    /// The transcript line of the assistant turn it produced (0 for the pending request
    /// at the end).
    pub line: usize,
    /// Tokens of the conversation sent, by the report's counter.
    pub tokens: usize,
    /// Tokens the same request would have carried had nothing ever been compacted.
    pub uncompacted: usize,
    /// What the provider billed, when the assistant turn recorded it.
    pub usage: Option<Usage>,
}

impl RequestPoint {
    /// The share of the billed prompt read from the provider's cache, when usage was
    /// recorded (0.0 ..= 1.0).
    pub fn cache_read_share(&self) -> Option<f64> {
        let usage = self.usage?;
        (usage.input_tokens > 0).then(|| usage.cache_read_tokens as f64 / usage.input_tokens as f64)
    }
}

/// What kind of pass a group of transcript lines is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PassKind {
    /// A summary replaced the middle.
    Compaction,
    /// The summarizer gave no accepted summary: the middle was dropped (a hard trim).
    HardTrim,
    /// Only tool results were stubbed (an elision epoch).
    Elision,
    /// Only a broken conversation was made valid.
    Repair,
}

impl PassKind {
    /// Its name on the page.
    pub fn label(self) -> &'static str {
        match self {
            PassKind::Compaction => "compaction",
            PassKind::HardTrim => "hard trim",
            PassKind::Elision => "elision epoch",
            PassKind::Repair => "repair",
        }
    }

    /// Its CSS class and chart series.
    pub fn class(self) -> &'static str {
        match self {
            PassKind::Compaction => "compaction",
            PassKind::HardTrim => "hard-trim",
            PassKind::Elision => "elision",
            PassKind::Repair => "repair",
        }
    }
}

/// A message as the report quotes it: its role, where it was, and its text (cut to the
/// report's cap, with how much was cut).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct QuotedMessage {
    /// Its id in the transcript.
    pub id: String,
    /// `user`, `assistant`, `tool`, `system`, ...
    pub role: String,
    /// Its position in the conversation just before the pass (0-based).
    pub position: usize,
    /// Tokens, by the report's counter.
    pub tokens: usize,
    /// The text (tool calls as `name(arguments)` lines), at most the report's cap.
    pub text: String,
    /// Chars left out of `text`.
    pub cut_chars: usize,
}

/// A tool result a pass stubbed: the stub, and what it replaced.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StubView {
    /// The stub text now in its place.
    pub stub: String,
    /// The result as it was.
    pub original: QuotedMessage,
}

/// One section of a summary (`### Files touched` and its lines); the text before the
/// first heading is a section without a title.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SummarySection {
    /// The heading's text, without its `#`s.
    pub title: String,
    /// The section's lines.
    pub body: String,
    /// Chars left out of `body`.
    pub cut_chars: usize,
}

/// A run of neighbouring messages of one role and fate, in a shape view.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Segment {
    /// The role.
    pub role: String,
    /// What the pass did to them: `kept`, `replaced`, `stubbed`, `summary`, `added`.
    pub fate: &'static str,
    /// How many messages.
    pub messages: usize,
    /// Their tokens.
    pub tokens: usize,
}

/// One pass: the lines it wrote, what they did, and what they cost.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PassView {
    /// 1-based pass number.
    pub number: usize,
    /// The transcript line of its first record.
    pub line: usize,
    /// Its timestamp, as written.
    pub ts: String,
    /// How many requests came before it (it happened before request `after_requests + 1`).
    pub after_requests: usize,
    /// What it was.
    pub kind: PassKind,
    /// Tokens before (recorded on a compaction line, else counted).
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Messages a summary or trim replaced.
    pub messages_replaced: usize,
    /// Tool results stubbed.
    pub elisions: usize,
    /// Orphan results dropped plus synthetic answers added.
    pub repairs: usize,
    /// A hard trim.
    pub fallback: bool,
    /// Even the best result did not fit.
    pub exhausted: bool,
    /// The recorded cost receipt.
    pub receipt: Option<CostReceipt>,
    /// What the summarizer was billed (failed calls included).
    pub summarizer_usage: Usage,
    /// The summarizer the pass asked, when the transcript names it.
    pub summarizer: Option<String>,
    /// Its requests, in order, as words ("summary accepted", "tighten failed (timeout)").
    pub attempts: Vec<String>,
    /// The summary, by section (empty unless the pass summarized).
    pub summary: Vec<SummarySection>,
    /// The summary's size in chars.
    pub summary_chars: usize,
    /// Stubs and what they replaced (at most the report's cap).
    pub stubs: Vec<StubView>,
    /// Stubs beyond the cap.
    pub stubs_omitted: usize,
    /// The messages the pass replaced (at most the report's cap).
    pub replaced: Vec<QuotedMessage>,
    /// Replaced messages beyond the cap.
    pub replaced_omitted: usize,
    /// The conversation's shape before the pass.
    pub shape_before: Vec<Segment>,
    /// And after it.
    pub shape_after: Vec<Segment>,
}

impl PassView {
    /// The summarizer cell: its name and how many requests it took, or "not recorded"
    /// for a transcript written before passes named them.
    pub fn summarizer_cell(&self) -> String {
        match (&self.summarizer, self.attempts.len()) {
            (None, 0) => "not recorded".to_owned(),
            (name, n) => {
                let failed = self.attempts.iter().filter(|a| a.contains("failed")).count();
                let name = name.as_deref().unwrap_or("summarizer");
                let plural = if n == 1 { "" } else { "s" };
                if failed > 0 {
                    format!("{name} · {n} request{plural} ({failed} failed)")
                } else {
                    format!("{name} · {n} request{plural}")
                }
            }
        }
    }

    /// Tokens the pass removed.
    pub fn tokens_shed(&self) -> usize {
        self.tokens_before.saturating_sub(self.tokens_after)
    }
}

/// The session's totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Totals {
    /// Requests.
    pub requests: usize,
    /// Passes of each kind.
    pub compactions: usize,
    /// Hard trims.
    pub hard_trims: usize,
    /// Elision epochs.
    pub elision_epochs: usize,
    /// Repair-only passes.
    pub repairs: usize,
    /// Tokens sent over all requests.
    pub tokens_sent: u64,
    /// What they would have been without compaction.
    pub tokens_uncompacted: u64,
    /// The summarizer's billed usage over all passes.
    pub summarizer_usage: Usage,
    /// Estimated cost saved, in base-input-token units (how: [`crate::build`]).
    pub cost_saved: f64,
    /// Requests that recorded billed usage.
    pub requests_with_usage: usize,
    /// Billed prompt tokens over those requests.
    pub billed_input: u64,
    /// Of which read from the cache.
    pub billed_cache_read: u64,
}

impl Totals {
    /// Tokens compaction kept out of the requests.
    pub fn tokens_saved(&self) -> u64 {
        self.tokens_uncompacted.saturating_sub(self.tokens_sent)
    }

    /// The share of the billed prompt read from the cache, when any usage was recorded.
    pub fn cache_read_share(&self) -> Option<f64> {
        (self.billed_input > 0).then(|| self.billed_cache_read as f64 / self.billed_input as f64)
    }
}

/// The budget, trigger and target lines of the chart, when known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Limits {
    /// The context budget.
    pub budget: Option<usize>,
    /// The trigger (a pass runs above it).
    pub trigger: Option<usize>,
    /// What a pass aims at.
    pub target: Option<usize>,
}

/// Everything a report shows about one session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SessionReport {
    /// The page title (a file name or a session key).
    pub title: String,
    /// What wrote the transcript.
    pub created_by: String,
    /// Complete transcript lines.
    pub lines: usize,
    /// Messages in the conversation now.
    pub messages_now: usize,
    /// Messages ever appended.
    pub messages_appended: usize,
    /// The counter the report counted with.
    pub counter: String,
    /// The pricing preset of the cost estimate.
    pub pricing: String,
    /// The chart's horizontal lines.
    pub limits: Limits,
    /// Every request, in order.
    pub requests: Vec<RequestPoint>,
    /// Every pass, in order.
    pub passes: Vec<PassView>,
    /// The totals.
    pub totals: Totals,
    /// The conversation's shape now.
    pub shape_now: Vec<Segment>,
}
