//! # compactor-report
//!
//! What compaction did to a session, as one self-contained HTML page: the tokens of every
//! request with the budget, trigger and target lines and a marker at every pass (inline
//! SVG); a table of the passes with their receipts; for each pass its summary by ledger
//! section, the stubs with the text they replaced, and the conversation's shape before
//! and after; totals of tokens sent against what would have been sent, and an estimate of
//! the cost saved.
//!
//! The page loads nothing (no script, no font, no stylesheet from anywhere; a
//! Content-Security-Policy says so to the browser), so it opens offline from a `file://`
//! URL. Every text from the conversation is HTML-escaped by the template engine, and long
//! texts are folded (`<details>`) and cut to a cap, so a 10,000-message session stays
//! usable.
//!
//! Used by `compactor report SESSION.jsonl` and `compactor proxy report`, and by the
//! proxy's opt-in inspector (`--ui`). Building the report ([`build`]) is pure: it reads
//! transcript lines, replays them and counts; rendering ([`render`]) only formats.
//!
//! ```
//! use compactor_report::{ReportOptions, report_of_jsonl, render};
//! let jsonl = concat!(
//!     r#"{"id":"m","payload":{"created_by":"test"},"ts":"2025-01-01T00:00:00.000000Z","type":"session-meta","v":1}"#, "\n",
//!     r#"{"id":"a","payload":{"role":"user","content":"Fix the build."},"ts":"2025-01-01T00:00:00.000000Z","type":"message","v":1}"#, "\n",
//! );
//! let report = report_of_jsonl("run.jsonl", jsonl.as_bytes(), &ReportOptions::default()).unwrap();
//! assert_eq!(report.totals.requests, 1);
//! let html = render(&report);
//! assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
//! ```

#![forbid(unsafe_code)]

pub mod chart;
mod model;
mod options;
mod page;
mod shape;
mod text;
mod walk;

use std::path::Path;

use llm_compactor::session::{SessionError, Transcript};

pub use model::{
    Limits, PassKind, PassView, QuotedMessage, RequestPoint, Segment, SessionReport, StubView, SummarySection, Totals,
};
pub use options::{DEFAULT_MAX_LISTED, DEFAULT_MAX_SEGMENTS, DEFAULT_MAX_TEXT_CHARS, ReportOptions};
pub use page::{SessionRow, render_index, render_with};
pub use text::{recorded_usage, usage_from};
pub use walk::build;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The transcript could not be read (it names the file and the line).
    #[error(transparent)]
    Transcript(#[from] SessionError),
    /// A line that does not replay.
    #[error("line {line}: {problem}")]
    Replay {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// The report of a transcript read from `path`.
///
/// # Errors
/// The file cannot be read or is not a transcript ([`ReportError::Transcript`] names the
/// file and the line).
pub fn report_of_file(path: &Path, options: &ReportOptions) -> Result<SessionReport, ReportError> {
    let transcript = Transcript::read(path)?;
    build(transcript.entries(), options)
}

/// The report of transcript bytes (`name` names them in errors).
///
/// # Errors
/// As [`report_of_file`].
pub fn report_of_jsonl(name: &str, bytes: &[u8], options: &ReportOptions) -> Result<SessionReport, ReportError> {
    let transcript = Transcript::parse(Path::new(name), bytes)?;
    build(transcript.entries(), options)
}

/// The report of a transcript already read (from a file, bytes, or a store's events:
/// [`Transcript::from_store`]).
pub fn report_of_transcript(transcript: &Transcript, options: &ReportOptions) -> Result<SessionReport, ReportError> {
    build(transcript.entries(), options)
}

/// The report as one self-contained HTML page.
pub fn render(report: &SessionReport) -> String {
    render_with(report, None)
}
