//! What one transcript line says: the payload types and [`Record`].
//!
//! Payload fields are declared in sorted order so that, like the envelope, every line of
//! our own making has sorted keys. A message payload is the message in its native serde
//! form (field order and `extras` order kept), because replay must give back the same
//! bytes that the live conversation had.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::Message;
use crate::plan::CostReceipt;
use crate::usage::Usage;

/// The envelope format version this crate writes and reads (the `v` of every line,
/// beside its `type`): a word of the line format, read by both the envelope's writer
/// and the hand-written message line.
pub const VERSION: u64 = 1;

/// Envelope type of the first line.
pub const TYPE_META: &str = "session-meta";
/// Envelope type of a message line.
pub const TYPE_MESSAGE: &str = "message";
/// Envelope type of a compaction line.
pub const TYPE_COMPACTION: &str = "compaction";
/// Envelope type of an elision line.
pub const TYPE_ELISION: &str = "elision";
/// Envelope type of a repair line (a broken conversation made valid).
pub const TYPE_REPAIR: &str = "repair";

/// The `session-meta` extra that names the wire format the conversation came in
/// (`openai`, `anthropic`, `mini-swe-agent`): a transcript is exported back in it, with
/// every field the format keeps (an Anthropic `tool_result`'s `is_error`, say).
pub const SOURCE_FORMAT_KEY: &str = "source_format";

/// The payload of the `session-meta` line that opens every transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionMeta {
    /// What wrote the transcript (`llm-compactor 0.1.0`).
    pub created_by: String,
    /// Anything the caller wants to remember beside the conversation (model, task, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl Default for SessionMeta {
    fn default() -> Self {
        SessionMeta {
            created_by: concat!("llm-compactor ", env!("CARGO_PKG_VERSION")).to_owned(),
            extra: Map::new(),
        }
    }
}

/// The payload of a `compaction` line: the middle up to `replaces_through_id` was replaced
/// by one summary message (role user, content `summary`) whose id is the line's own id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompactionRecord {
    /// Every summarizer request the pass made, failed ones included (absent in
    /// transcripts written before attempts were recorded; replay never reads it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<crate::compactor::Attempt>,
    /// How many messages the summary replaced (or the hard trim dropped).
    #[serde(default)]
    pub dropped: usize,
    /// True when the even the best result did not fit.
    #[serde(default)]
    pub exhausted: bool,
    /// True for a hard trim (the summarizer could not produce an accepted summary).
    pub fallback: bool,
    /// The pass's cost receipt (what it did to the prompt cache and its expected net
    /// cost); absent in transcripts written before receipts were recorded, and replay
    /// never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<CostReceipt>,
    /// The id of the last message the summary replaces: every non-sticky message up to
    /// and including it is gone.
    pub replaces_through_id: String,
    /// The whole content of the summary message (header included).
    pub summary: String,
    /// The name of the summarizer the pass asked, when it asked one (absent in older
    /// transcripts; replay never reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Tokens after the pass.
    pub tokens_after: usize,
    /// Tokens before the pass.
    pub tokens_before: usize,
    /// What the summarizer was billed for the pass, failed calls included.
    #[serde(default)]
    pub usage: Usage,
}

impl CompactionRecord {
    /// A compaction line replacing the middle through `replaces_through_id` by `summary`
    /// (the summary message's whole content); every other field empty, zero or false,
    /// for the caller to set.
    pub fn new(replaces_through_id: impl Into<String>, summary: impl Into<String>) -> Self {
        CompactionRecord {
            attempts: Vec::new(),
            dropped: 0,
            exhausted: false,
            fallback: false,
            receipt: None,
            replaces_through_id: replaces_through_id.into(),
            summary: summary.into(),
            summarizer: None,
            tokens_after: 0,
            tokens_before: 0,
            usage: Usage::default(),
        }
    }
}

/// One stubbed tool result of an `elision` line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElisionItem {
    /// The id of the message whose content was replaced.
    pub id: String,
    /// The stub text that is now its whole content.
    pub stub: String,
}

impl ElisionItem {
    /// The message `id`'s content replaced by `stub`.
    pub fn new(id: impl Into<String>, stub: impl Into<String>) -> ElisionItem {
        ElisionItem {
            id: id.into(),
            stub: stub.into(),
        }
    }
}

/// The payload of an `elision` line: tool results stubbed in place by one pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElisionRecord {
    /// The stubbed results, applied in order.
    pub items: Vec<ElisionItem>,
    /// The cost receipt of an elision-only pass (an elision epoch); a pass that also
    /// summarized carries its receipt on its compaction line instead. Absent in older
    /// transcripts; replay never reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<CostReceipt>,
}

impl ElisionRecord {
    /// An elision line for these stubs, without a receipt.
    pub fn new(items: Vec<ElisionItem>) -> Self {
        ElisionRecord { items, receipt: None }
    }
}

/// One synthetic answer of a `repair` line: a tool result for a call that was never
/// answered. Its message id is the repair line's id, a dot, and its position in
/// `answers` (`"<line id>.0"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SyntheticAnswerItem {
    /// The id of the message it is placed right after.
    pub after: String,
    /// Its whole content.
    pub content: String,
    /// The id of the call it answers.
    pub tool_call_id: String,
}

impl SyntheticAnswerItem {
    /// A synthetic answer `content` to the call `tool_call_id`, placed right after the
    /// message `after`.
    pub fn new(after: impl Into<String>, content: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        SyntheticAnswerItem {
            after: after.into(),
            content: content.into(),
            tool_call_id: tool_call_id.into(),
        }
    }
}

/// The payload of a `repair` line: how a compaction pass made a broken conversation valid
/// before compacting it (see [`crate::plan::plan_repairs`]). Written before the pass's
/// elision and compaction lines; replay drops the `dropped` messages, then inserts the
/// answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RepairRecord {
    /// Synthetic answers, in order.
    #[serde(default)]
    pub answers: Vec<SyntheticAnswerItem>,
    /// The ids of orphan tool results dropped.
    #[serde(default)]
    pub dropped: Vec<String>,
}

/// The id of the `k`-th synthetic answer of the repair line `line_id`.
pub fn synthetic_answer_id(line_id: &str, k: usize) -> String {
    format!("{line_id}.{k}")
}

/// One transcript line, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Record {
    /// The opening line.
    Meta(SessionMeta),
    /// A message appended to the conversation (its `id` is the envelope id).
    Message(Message),
    /// A summarizing (or hard-trimming) compaction.
    Compaction(CompactionRecord),
    /// Tool results stubbed in place.
    Elision(ElisionRecord),
    /// A broken conversation made valid.
    Repair(RepairRecord),
    /// A line of a type this version does not know: kept, and skipped by replay.
    Unknown {
        /// The envelope type.
        kind: String,
        /// The payload, verbatim.
        payload: Value,
    },
}

impl Record {
    /// The envelope type of this record.
    pub fn kind(&self) -> &str {
        match self {
            Record::Meta(_) => TYPE_META,
            Record::Message(_) => TYPE_MESSAGE,
            Record::Compaction(_) => TYPE_COMPACTION,
            Record::Elision(_) => TYPE_ELISION,
            Record::Repair(_) => TYPE_REPAIR,
            Record::Unknown { kind, .. } => kind,
        }
    }
}

/// One line of a loaded transcript.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Entry {
    /// The 1-based line number in the file.
    pub line: usize,
    /// The envelope id.
    pub id: String,
    /// The envelope timestamp, as written.
    pub ts: String,
    /// What the line says.
    pub record: Record,
}
