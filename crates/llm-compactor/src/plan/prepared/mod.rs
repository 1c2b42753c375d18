//! The check of a prepared compaction: may a pass computed in the background over a
//! frozen snapshot still be installed, and how.
//!
//! A prepared pass summarizes the conversation as it was when it started; by the time
//! a request reaches the trigger, the agent has moved on. Installing the old summary
//! blindly would tell the model that a fixed error is still open, that a deleted file
//! exists, or that an old request is the current one. So before anything is installed
//! the core answers three questions, each a pure function of its arguments:
//!
//! 1. [`check`]: is the snapshot still an exact prefix of the conversation (digest),
//!    and which facts of the summary's ledger did the messages since the snapshot
//!    change? The verdict is install, amend (the ledger lines that changed are marked,
//!    [`amend_summary`]) or discard (the conversation was edited, or the summary's
//!    prose names a fact that changed), with its reasons.
//! 2. [`plan_install`]: the replacement plus every message since the snapshot, with
//!    the same validation every pass gets (pairs, sticky messages, budget). When the new
//!    messages push it over the goal, fat tool results among them (outside the recent
//!    window) are elided in the same install, so the prompt cache breaks once, not
//!    twice; when even that stays over the ceiling, it says that an inline pass is
//!    needed.
//!
//! No I/O, no clock: the async shell (the `ContextManager`, the proxy) measures the
//! session's pace and asks [`start_at`] *when* to start ([`next_step`] what to do before a
//! request); the rest decides *whether* and *what* to install.

mod amend;
mod check;
mod install;
mod pace;
mod step;

use serde::{Deserialize, Serialize};

pub use amend::{CHANGED_HEADING, amend_summary};
pub use check::{Change, Check, DiscardReason, Verdict, check, check_with_digest};
pub use install::{InstallPlan, InstallRules, Installed, plan_install};
pub use pace::{PACE_WINDOW, Pace, StartRule, start_at};
pub use step::{PrepareStep, PrepareView, next_step, prepare_at};

use super::elision::Elision;
use crate::message::Message;

/// The frozen conversation a prepared pass ran over: how many messages it had and the
/// chained digest of them ([`crate::message::conversation_digest`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Messages in the snapshot.
    pub len: usize,
    /// The digest of those messages (ids ignored).
    pub digest: String,
}

impl Snapshot {
    /// The snapshot of `messages`.
    pub fn of(messages: &[Message]) -> Snapshot {
        Snapshot {
            len: messages.len(),
            digest: crate::message::conversation_digest(messages),
        }
    }
}

/// What a prepared pass produced over its snapshot, in the snapshot's positions.
#[derive(Clone, Copy, Debug)]
pub struct Replacement<'a> {
    /// The conversation the pass handed back for the snapshot.
    pub messages: &'a [Message],
    /// The whole content of the inserted summary message (header included); empty for
    /// an elision-only pass.
    pub summary: &'a str,
    /// The last snapshot index the summary replaced; `None` for an elision-only pass.
    pub cut: Option<usize>,
    /// The stubs (and recent-window cuts) the pass applied, by snapshot index.
    pub elisions: &'a [Elision],
    /// True when the pass had to repair its input (its indices then refer to the
    /// repaired snapshot, which a longer conversation may no longer repair the same
    /// way): such a result is never installed.
    pub repaired: bool,
    /// True when the pass fell back to the hard trim (the summarizer failed): a
    /// prepared pass has time to try again, so such a result is never installed.
    pub fallback: bool,
}
