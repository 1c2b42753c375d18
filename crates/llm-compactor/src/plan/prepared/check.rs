//! [`check`]: the verdict on a prepared result, given what happened since its snapshot.

use serde::{Deserialize, Serialize};

use super::{Replacement, Snapshot};
use crate::message::Message;
use crate::plan::ledger::scan::{is_code_identifier, is_path, tokens, trim_token};
use crate::plan::ledger::{LEDGER_HEADING, LedgerRules, extract};
use crate::plan::{Pairs, SUMMARY_HEADER, pinned};

/// A fact of the summary's ledger that the messages since the snapshot changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum Change {
    /// An error the summary lists as open has since passed.
    ErrorResolved {
        /// The error line, as the ledger has it.
        text: String,
    },
    /// A file the summary names has since been edited, rewritten or deleted.
    FileChanged {
        /// The path, as the ledger has it.
        path: String,
        /// What was done to it since (`edit`, `write`, `delete`).
        operation: String,
    },
    /// The user asked something newer than the summary's last request.
    NewerRequest {
        /// The newer request, as the ledger renders it (capped).
        request: String,
    },
}

impl Change {
    /// The change in words, for events and the transcript.
    pub fn describe(&self) -> String {
        match self {
            Change::ErrorResolved { text } => format!("error resolved since: {text}"),
            Change::FileChanged { path, operation } => format!("file {path}: {operation} since"),
            Change::NewerRequest { .. } => "a newer user request since".to_owned(),
        }
    }
}

/// Why a prepared result cannot be installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum DiscardReason {
    /// The conversation is shorter than the snapshot (history was rewound or compacted).
    Shorter {
        /// Messages in the snapshot.
        snapshot: usize,
        /// Messages now.
        now: usize,
    },
    /// The snapshot is no longer an exact prefix of the conversation (an edit, another
    /// compaction).
    PrefixChanged,
    /// The pass repaired its input; its indices do not carry over.
    Repaired,
    /// The pass ended in the hard trim (its summarizer failed): there is still time to
    /// prepare again, or to run the pass inline, before anything is dropped unsummarized.
    Fallback,
    /// The summary's own prose names a fact that changed: amending the ledger would
    /// leave the prose saying the opposite.
    ProseDepends {
        /// The change.
        change: Change,
        /// The word of the prose that names it.
        named: String,
    },
}

impl DiscardReason {
    /// The reason in words.
    pub fn describe(&self) -> String {
        match self {
            DiscardReason::Shorter { snapshot, now } => {
                format!("the conversation has {now} messages, fewer than the snapshot's {snapshot}")
            }
            DiscardReason::PrefixChanged => "the snapshot is no longer a prefix of the conversation".into(),
            DiscardReason::Repaired => "the prepared pass repaired its input".into(),
            DiscardReason::Fallback => "the prepared pass ended in the hard trim".into(),
            DiscardReason::ProseDepends { change, named } => {
                format!("the summary's prose names `{named}` ({})", change.describe())
            }
        }
    }
}

/// What to do with a prepared result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Install it as it is.
    Install,
    /// Install it with these ledger lines amended ([`super::amend_summary`]).
    Amend {
        /// What changed.
        changes: Vec<Change>,
    },
    /// Do not install it.
    Discard {
        /// Why (at least one reason).
        reasons: Vec<DiscardReason>,
    },
}

impl Verdict {
    /// True unless the verdict is a discard.
    pub fn installable(&self) -> bool {
        !matches!(self, Verdict::Discard { .. })
    }
}

/// A verdict with the messages since the snapshot it was taken over.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Check {
    /// The verdict.
    pub verdict: Verdict,
    /// Messages appended since the snapshot (0 on a discard for a changed prefix).
    pub since: usize,
}

/// [`check_with_digest`], computing the digest of the current prefix itself.
pub fn check(replacement: &Replacement<'_>, snapshot: &Snapshot, current: &[Message], rules: &LedgerRules) -> Check {
    let digest = (current.len() >= snapshot.len).then(|| crate::message::conversation_digest(&current[..snapshot.len]));
    check_with_digest(replacement, snapshot, current, digest.as_deref(), rules)
}

/// The verdict on `replacement` (computed over `snapshot`) now that the conversation is
/// `current`, whose first `snapshot.len` messages have the digest `prefix_digest` (the
/// caller usually has it cached: [`crate::Conversation::prefix_digest`]).
///
/// Discard when the conversation is shorter, its prefix changed, or the pass repaired
/// its input; else compare the ledger of the replaced messages with the ledger of the
/// replaced messages *and* the messages since: an error open then and resolved now, a
/// file edited, rewritten or deleted since, a newer user request. A change the summary's
/// prose (the part before its ledger) names is a discard; the others are amendments.
///
/// ```
/// use llm_compactor::message::Message;
/// use llm_compactor::plan::prepared::{check, Replacement, Snapshot, Verdict};
/// use llm_compactor::plan::ledger::LedgerRules;
/// let snapshot_messages = vec![Message::user("a"), Message::assistant("b")];
/// let snapshot = Snapshot::of(&snapshot_messages);
/// let replacement = Replacement { messages: &snapshot_messages, summary: "", cut: None, elisions: &[], repaired: false, fallback: false };
/// let mut now = snapshot_messages.clone();
/// now.push(Message::user("c"));
/// assert_eq!(check(&replacement, &snapshot, &now, &LedgerRules::default()).verdict, Verdict::Install);
/// now[0] = Message::user("edited");
/// assert!(!check(&replacement, &snapshot, &now, &LedgerRules::default()).verdict.installable());
/// ```
pub fn check_with_digest(
    replacement: &Replacement<'_>,
    snapshot: &Snapshot,
    current: &[Message],
    prefix_digest: Option<&str>,
    rules: &LedgerRules,
) -> Check {
    let discard = |reason: DiscardReason| Check {
        verdict: Verdict::Discard { reasons: vec![reason] },
        since: 0,
    };
    if current.len() < snapshot.len {
        return discard(DiscardReason::Shorter {
            snapshot: snapshot.len,
            now: current.len(),
        });
    }
    if prefix_digest != Some(snapshot.digest.as_str()) {
        return discard(DiscardReason::PrefixChanged);
    }
    if replacement.repaired {
        return discard(DiscardReason::Repaired);
    }
    if replacement.fallback {
        return discard(DiscardReason::Fallback);
    }
    let since = current.len() - snapshot.len;
    let Some(cut) = replacement.cut.filter(|c| *c < snapshot.len) else {
        // Elision-only: no prose and no ledger to be wrong.
        return Check {
            verdict: Verdict::Install,
            since,
        };
    };
    let changes = changes(current, cut, snapshot.len, rules);
    let prose = prose_of(replacement.summary);
    let reasons: Vec<DiscardReason> = changes
        .iter()
        .filter_map(|change| {
            named_in(&prose, change).map(|named| DiscardReason::ProseDepends {
                change: change.clone(),
                named,
            })
        })
        .collect();
    let verdict = if !reasons.is_empty() {
        Verdict::Discard { reasons }
    } else if changes.is_empty() {
        Verdict::Install
    } else {
        Verdict::Amend { changes }
    };
    Check { verdict, since }
}

/// The ledger facts of the replaced messages (`0..=cut`, pins excepted) that the
/// messages from `snapshot_len` on changed.
fn changes(current: &[Message], cut: usize, snapshot_len: usize, rules: &LedgerRules) -> Vec<Change> {
    let head = &current[..=cut];
    let pins = pinned(head, &Pairs::build(head));
    let replaced: Vec<usize> = (0..=cut).filter(|i| !pins[*i]).collect();
    let new: Vec<usize> = (snapshot_len..current.len()).collect();
    if new.is_empty() {
        return Vec::new();
    }
    let before = extract(current, &replaced, rules);
    let both: Vec<usize> = replaced.iter().copied().chain(new.iter().copied()).collect();
    let after = extract(current, &both, rules);
    let since = extract(current, &new, rules);
    let mut out = Vec::new();
    for error in before.errors.iter().filter(|e| e.open) {
        let resolved = after.errors.iter().any(|e| e.text == error.text && !e.open);
        if resolved {
            out.push(Change::ErrorResolved {
                text: error.text.clone(),
            });
        }
    }
    for file in &before.files {
        let touched = since.files.iter().find(|f| f.path == file.path).and_then(|f| {
            ["delete", "write", "edit"]
                .into_iter()
                .find(|op| f.operations.iter().any(|o| o == op))
        });
        if let Some(operation) = touched {
            out.push(Change::FileChanged {
                path: file.path.clone(),
                operation: operation.to_owned(),
            });
        }
    }
    if let (Some(old), Some(new)) = (&before.last_user, &since.last_user)
        && old != new
    {
        out.push(Change::NewerRequest { request: new.clone() });
    }
    out
}

/// The model-written part of a summary's content: after the header, before the ledger.
pub(super) fn prose_of(summary: &str) -> String {
    let body = summary.strip_prefix(SUMMARY_HEADER).unwrap_or(summary);
    let end = body.find(LEDGER_HEADING).unwrap_or(body.len());
    body[..end].to_owned()
}

/// The word of `prose` that names `change`, if any: a path (or its file name), or a
/// code identifier of the error line. A newer request is never a discard: it is kept
/// verbatim after the summary, and the amendment says the summary's request is older.
fn named_in(prose: &str, change: &Change) -> Option<String> {
    let words: Vec<String> = match change {
        Change::NewerRequest { .. } => return None,
        Change::FileChanged { path, .. } => {
            let mut words = vec![path.clone()];
            if let Some(name) = path.rsplit('/').next().filter(|n| *n != path && is_path(n)) {
                words.push(name.to_owned());
            }
            words
        }
        Change::ErrorResolved { text } => {
            let mut words: Vec<String> = tokens(text)
                .map(trim_token)
                .filter(|t| is_path(t) || is_code_identifier(t))
                .map(str::to_owned)
                .collect();
            words.push(text.clone());
            words
        }
    };
    let prose_tokens: Vec<&str> = tokens(prose).map(trim_token).collect();
    words.into_iter().find(|w| {
        if w.contains(char::is_whitespace) {
            return prose.contains(w.as_str());
        }
        prose_tokens.iter().any(|t| {
            *t == w
                || t.strip_suffix(w.as_str())
                    .is_some_and(|head| head.ends_with('/') || head.ends_with("::"))
                || t.strip_prefix(w.as_str())
                    .is_some_and(|tail| tail.starts_with("::") || tail.starts_with('('))
        })
    })
}
