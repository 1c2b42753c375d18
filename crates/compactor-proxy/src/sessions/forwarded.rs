//! [`Prepared`]: what a round hands the route to forward, and what it did to get there.

use std::sync::Arc;

use llm_compactor::count::CalibratedCounter;
use llm_compactor::message::Message;
use serde_json::Value;

use super::PassDone;

/// What to send upstream for one request.
pub struct Prepared {
    /// The body to forward.
    pub body: bytes::Bytes,
    /// `body` as JSON when the round rewrote it (the wire options read it rather than
    /// parse the body again); `None` when it goes as the client sent it. A rewritten
    /// Messages body is left empty (not written yet) unless a preparation may read it:
    /// [`crate::outgoing::finish`] writes it from this, with the client's breakpoints.
    pub json: Option<Value>,
    /// The conversation it carries (for calibration from the reported usage).
    pub messages: Vec<Message>,
    /// The session's calibrated counter.
    pub counter: Arc<CalibratedCounter>,
    /// The transcript key this round was recorded under.
    pub store_key: String,
    /// Tokens the rewrite removed from the client's request (0: sent as the client did).
    pub removed: usize,
    /// The pass whose rewrite the body carries (`store key/generation`), if any.
    pub pass: Option<String>,
    /// What the pass this round ran did (none when the round ran none; traced).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub done: Option<PassDone>,
    /// The body carries thinking blocks a pass invalidated, on a model that checks
    /// them: it must ask the provider to drop them (`drop_block`).
    pub needs_drop_block: bool,
    /// The body carries the client's own bytes for the oldest stubbed results: it must ask
    /// the provider to clear every tool result but the latest this many tool uses
    /// (`clear_tool_uses`).
    pub clear_keep: Option<usize>,
}
