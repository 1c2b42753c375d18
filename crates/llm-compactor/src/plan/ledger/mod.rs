//! The artifact ledger: what the replaced messages *did*, extracted verbatim, no model.
//!
//! Summaries fail most on the artifact trail (which files were touched, which commands
//! ran, which errors are still open) and on the user's last request. A language model
//! paraphrases, drops and sometimes invents those; a deterministic extraction cannot
//! invent anything and costs microseconds. So the compactor appends the ledger to every
//! summary it writes, and the ledger alone is the summary of last resort before the hard
//! trim (and of `--summarizer ledger`).
//!
//! [`extract`] reads the messages (mini-swe-agent bash blocks and `<returncode>`
//! observations, OpenAI/Anthropic tool calls with any tool name, OpenHands' editor
//! commands, and the server-side tools a provider ran within a turn: Anthropic's code
//! execution and MCP blocks, the Responses API's `mcp_call` and `code_interpreter_call`);
//! [`render`] writes fixed sections under a size cap, cutting the oldest facts first.
//! Both are pure.

mod call_args;
mod carry;
mod chatter;
mod command;
mod extract;
mod hosted;
mod marks;
mod pin_rules;
mod pins;
mod render;
mod repeats;
pub(crate) mod scan;
mod sections;
mod sized;
mod supersede;

use serde::{Deserialize, Serialize};

pub use carry::{ImportanceTier, changes_something, parse_rendered};
pub use chatter::{instructions_kept, is_chatter, request_kept};
pub use extract::extract;
pub use marks::{SUPERSEDED, split_count, split_superseded};
pub use pin_rules::{PinMatcher, PinRuleError, PinRules};
pub use pins::split_pinned;
pub use render::{history_fits, render, render_user_first};
pub use repeats::push_repeated;
pub use sections::{LEDGER_HEADING, SECTION_TITLES};
pub use sized::{ledger_room, sized_ledgers};
pub use supersede::supersedes;

/// One file the replaced messages touched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFact {
    /// The path, verbatim.
    pub path: String,
    /// What was done to it (`read`, `edit`, `write`, `run`, `mention`, ...), first seen first.
    pub operations: Vec<String>,
    /// Order of the last message that named it (for newest-first cutting).
    pub last_seen: usize,
    /// The handle of the message this fact comes from (its last run, read, edit or
    /// showing), when the ledger names handles (see [`LedgerRules::handles`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// One command that ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandFact {
    /// The command's head, verbatim (capped, `…` when cut), newlines shown as `⏎`; a
    /// heredoc's body left out (` ⏎ …`).
    pub command: String,
    /// Its exit status, when its result showed one.
    pub exit: Option<i64>,
    /// How many times it ran.
    pub runs: usize,
    /// Order of its last run.
    pub last_seen: usize,
    /// The handle of the message this fact comes from (its last run, read, edit or
    /// showing), when the ledger names handles (see [`LedgerRules::handles`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// One error or failing test seen in a result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorFact {
    /// The error line, verbatim (capped).
    pub text: String,
    /// False once a later result shows it fixed.
    pub open: bool,
    /// The command whose result showed it, when known.
    pub command: Option<String>,
    /// Order of the message that last showed it.
    pub last_seen: usize,
    /// The handle of the message this fact comes from (its last run, read, edit or
    /// showing), when the ledger names handles (see [`LedgerRules::handles`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle: Option<String>,
}

/// Everything [`extract`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// The user's last message among the replaced ones, verbatim (capped).
    pub last_user: Option<String>,
    /// The user's earlier messages, one line each (capped), oldest first; a message
    /// said more than once is one line, at its newest position, ending in its count
    /// (` (×3)`, see [`split_count`]); one a later message replaced ends in
    /// [`SUPERSEDED`] (see [`supersedes`]).
    pub earlier_users: Vec<String>,
    /// The instruction files injected into user turns (`<system-reminder>` blocks,
    /// AGENTS.md / CLAUDE.md, see [`split_pinned`]), verbatim (capped), oldest first, each
    /// once (with its count when injected again): the ledger's highest tier.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<String>,
    /// Files, oldest first.
    pub files: Vec<FileFact>,
    /// Commands, deduplicated, oldest first (newest last).
    pub commands: Vec<CommandFact>,
    /// Errors and failing tests, oldest first.
    pub errors: Vec<ErrorFact>,
    /// Identifiers the agent named in its own turns (functions, classes, URLs), oldest
    /// first, bounded.
    pub identifiers: Vec<String>,
    /// The handles of the first and the last message ever replaced (this pass's and, carried
    /// forward, every earlier pass's), when the ledger names handles: the range
    /// `#first..#last` expands to every one of them, so that what the cap cut is still
    /// named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub originals: Option<(String, String)>,
}

impl Ledger {
    /// True when nothing was found.
    pub fn is_empty(&self) -> bool {
        self.last_user.is_none()
            && self.earlier_users.is_empty()
            && self.pinned.is_empty()
            && self.files.is_empty()
            && self.commands.is_empty()
            && self.errors.is_empty()
            && self.identifiers.is_empty()
    }

    /// The errors still open, oldest first.
    pub fn open_errors(&self) -> impl Iterator<Item = &ErrorFact> {
        self.errors.iter().filter(|e| e.open)
    }
}

/// The caps of extraction (all in chars).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerRules {
    /// The last user message is kept verbatim up to this many chars. Default 2000.
    pub last_user_chars: usize,
    /// Each earlier user message is kept as one line of at most this. Default 160.
    pub earlier_user_chars: usize,
    /// Each pinned instruction block is kept verbatim up to this many chars. Default 4000.
    #[serde(default = "default_pinned_chars")]
    pub pinned_chars: usize,
    /// A command is shown up to this many chars (its head: see the renderer). Default
    /// 100: the program and its arguments, not a heredoc's body.
    pub command_chars: usize,
    /// An error line is kept up to this many chars. Default 200.
    pub error_chars: usize,
    /// At most this many identifiers (the newest). Default 40.
    pub max_identifiers: usize,
    /// Name, on each fact's line, the handle of the message it comes from (see
    /// [`crate::plan::handle_of`]), so that the original can be expanded. Default off:
    /// the ledger's text is then exactly what it was before handles existed.
    #[serde(default)]
    pub handles: bool,
    /// The pins the user configures (by pattern, tool name, message id): such messages
    /// are kept whole in the "Pinned instructions" section. Default none.
    #[serde(default, skip_serializing_if = "PinRules::is_empty")]
    pub pins: PinRules,
}

fn default_pinned_chars() -> usize {
    4000
}

impl Default for LedgerRules {
    fn default() -> Self {
        LedgerRules {
            last_user_chars: 2000,
            earlier_user_chars: 160,
            pinned_chars: default_pinned_chars(),
            command_chars: 100,
            error_chars: 200,
            max_identifiers: 40,
            handles: false,
            pins: PinRules::default(),
        }
    }
}

/// How a compactor uses the ledger: its size in the summary and the grounding gate's
/// thresholds. Set with `Compactor::with_ledger`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LedgerPolicy {
    /// The most tokens the ledger may add to a summary (part of the summary budget;
    /// rendered at about three chars a token, and halved until the summary fits). A pass
    /// gives it less when its target leaves less room (see [`sized_ledgers`]).
    /// Default 2048, the default output budget of a model summary: chosen by a sweep
    /// with `compactor eval` on 61 real runs (512: 27% probe recall, 1024: 48%, 2048:
    /// 80%, uncapped: 99%; see BENCHMARKS.md). The handles the lines name with expansion
    /// on (`[#0123456789]`, and the originals' range) are not counted: a ledger keeps the
    /// same facts with or without them, and is that much longer with them.
    pub max_tokens: usize,
    /// The extraction caps.
    pub rules: LedgerRules,
    /// The grounding gate's thresholds.
    pub grounding: crate::plan::grounding::GroundingRules,
}

impl Default for LedgerPolicy {
    fn default() -> Self {
        LedgerPolicy {
            max_tokens: 2048,
            rules: LedgerRules::default(),
            grounding: crate::plan::grounding::GroundingRules::default(),
        }
    }
}

/// Chars a ledger of `tokens` tokens may take: three a token, a conservative rate for
/// code and paths under real tokenizers.
pub fn chars_for_tokens(tokens: usize) -> usize {
    tokens.saturating_mul(3)
}

/// The text the grounding gate checks identifiers against: every message's text, the
/// strings of its other parts that a reader can use (what a hosted tool returned, a
/// reasoning summary: the summarizer reads them too; not media data or encrypted
/// members), tool names and raw arguments, newline-separated.
pub fn source_text(messages: &[crate::message::Message]) -> String {
    let mut out = String::new();
    for message in messages {
        out.push_str(&message.text());
        out.push('\n');
        if let crate::message::Content::Parts(parts) = &message.content {
            for part in parts {
                if let crate::message::Part::Other(value) = part {
                    push_strings(&crate::message::media::readable_view(value), &mut out);
                }
            }
        }
        for call in &message.tool_calls {
            out.push_str(&call.name);
            out.push('\n');
            out.push_str(&call.arguments);
            out.push('\n');
            // JSON-escaped arguments hide `\n` and `\"`: add the decoded strings too.
            if let Ok(serde_json::Value::Object(args)) = serde_json::from_str(&call.arguments) {
                for value in args.values() {
                    if let serde_json::Value::String(s) = value {
                        out.push_str(s);
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

/// Every non-empty string in `value`, each on its own line.
fn push_strings(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(text) if !text.is_empty() => {
            out.push_str(text);
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| push_strings(item, out)),
        serde_json::Value::Object(members) => members.values().for_each(|member| push_strings(member, out)),
        _ => {}
    }
}
