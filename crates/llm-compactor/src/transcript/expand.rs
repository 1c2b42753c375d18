//! Expansion: the original messages behind a handle a summary or a stub names.
//!
//! Nothing a pass replaces is deleted: every message stays in the transcript as it was
//! appended (a compaction or an elision is a separate record). A handle
//! ([`crate::plan::handle_of`]) names one of them, and expanding it returns it, as
//! recorded, with the results that answer it when it is a call
//! ([`crate::plan::expansion_unit`]).
//!
//! A handle resolves only among the messages of the transcript it is asked of: a
//! guessed handle, or one of another session, is "not found" — never another session's
//! content. What expansion returns is what the transcript holds (which never holds more
//! than the client sent), and nothing of it is logged: only counts reach tracing.
//!
//! The lookup is pure (messages in, an expansion or the tool's answer out); reading the
//! session's file for it ([`crate::session::Session::expand`],
//! [`crate::session::ContextManager::answer_expand`]) is the shell's.

use serde::Serialize;
use serde_json::{Value, json};

use super::load::Transcript;
use super::record::Record;
use crate::count::TokenCounter;
use crate::message::Message;
use crate::plan::resolve_request;
use crate::summarize::render_message;

/// The name of the expansion tool the [`crate::session::ContextManager`] (and the proxy, with
/// `--expand-tool`) offers the model.
pub const EXPAND_TOOL_NAME: &str = "compactor_expand";

/// What one handle expands to.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Expansion {
    /// The handle asked for.
    pub handle: String,
    /// The original messages, in transcript order, each with its id: the message the
    /// handle names and the results answering it (more than one message named only when
    /// two messages of the session share the handle, see [`crate::plan::handle_of`]).
    pub messages: Vec<Message>,
}

impl Transcript {
    /// Every message ever appended to the session, in order, as recorded (a compaction
    /// or an elision does not change them; replay does).
    pub fn originals(&self) -> Vec<Message> {
        self.entries()
            .iter()
            .filter_map(|entry| match &entry.record {
                Record::Message(message) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }

    /// The original messages behind `handle`; `None` when no message of this session
    /// carries it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use llm_compactor::Message;
    /// use llm_compactor::plan::handle_of;
    /// use llm_compactor::session::{Session, SessionOptions, Transcript};
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("s.jsonl");
    /// let mut session = Session::create(&path, SessionOptions::default())?;
    /// let appended = session.append_message(Message::user("The build log: 4,117 lines"))?.clone();
    /// let handle = handle_of(0, &appended);
    /// let transcript = Transcript::read(&path)?;
    /// assert_eq!(transcript.expand(&handle).unwrap().messages, vec![appended]);
    /// assert!(transcript.expand("#0000000000").is_none());
    /// # Ok(()) }
    /// ```
    pub fn expand(&self, handle: &str) -> Option<Expansion> {
        expand_in(&self.originals(), handle)
    }
}

/// `handle` (or a `#first..#last` range) resolved among `originals` (one session's
/// messages, in order).
pub fn expand_in(originals: &[Message], handle: &str) -> Option<Expansion> {
    let found = resolve_request(originals, handle);
    tracing::debug!(messages = found.len(), "handle expanded");
    (!found.is_empty()).then(|| Expansion {
        handle: handle.to_owned(),
        messages: found.into_iter().map(|i| originals[i].clone()).collect(),
    })
}

/// The `compactor_expand` tool's definition, in the OpenAI chat-completions shape
/// (`{"type":"function","function":{...}}`); the proxy converts it per route.
pub fn expand_tool_definition() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": EXPAND_TOOL_NAME,
            "description": "Read back, verbatim, earlier messages that the context compactor replaced by a summary or an elision stub. Pass the handles (like \"#3fa9c01b2e\") that the summary or the stub names.",
            "parameters": {
                "type": "object",
                "properties": {
                    "handles": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Handles as written in the summary or stub, e.g. [\"#3fa9c01b2e\"]."
                    }
                },
                "required": ["handles"]
            }
        }
    })
}

/// The handles a `compactor_expand` call asks for: its `handles` array (or a single
/// `handle` string); anything else asks for none.
pub fn requested_handles(arguments: &str) -> Vec<String> {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return Vec::new();
    };
    match (args.get("handles"), args.get("handle")) {
        (Some(Value::Array(items)), _) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        (Some(Value::String(one)), _) | (None, Some(Value::String(one))) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// The tool result answering a `compactor_expand` call with `arguments`, resolved among
/// `originals`, at most `max_chars` chars (cut with a marker that says so): each
/// handle's messages rendered as the summarizer renders them, or a "not found" line.
pub fn answer_expand(originals: &[Message], arguments: &str, max_chars: usize) -> String {
    let handles = requested_handles(arguments);
    if handles.is_empty() {
        return "compactor_expand: no handle given (pass {\"handles\": [\"#0123456789\"]})".to_owned();
    }
    let mut out = String::new();
    for handle in handles {
        match expand_in(originals, &handle) {
            Some(expansion) => {
                out.push_str(&format!("=== {handle}: {} message(s) ===\n", expansion.messages.len()));
                for message in &expansion.messages {
                    out.push_str(&render_message(message, usize::MAX));
                }
            }
            None => out.push_str(&format!("=== {handle}: not found in this session ===\n")),
        }
    }
    if out.chars().count() > max_chars {
        let kept: String = out.chars().take(max_chars).collect();
        let cut = out.chars().count() - max_chars;
        out = format!("{kept}\n[compactor_expand: {cut} more chars cut to stay within the context budget]");
    }
    out
}

/// Below this many tokens of room, [`answer_expand_within`] expands nothing: the result
/// says there is no room.
pub const MIN_EXPAND_ROOM: usize = 64;

/// [`answer_expand`] cut to at most `room` tokens as `counter` counts them (the cut said
/// at its end), for a caller that must keep its request within a budget (the proxy's
/// `--expand-tool`); under [`MIN_EXPAND_ROOM`] tokens, a line saying there is no room.
///
/// ```
/// use llm_compactor::Message;
/// use llm_compactor::count::HeuristicCounter;
/// use llm_compactor::plan::handle_of;
/// use llm_compactor::transcript::answer_expand_within;
/// let mut big = Message::tool("call_1", "row\n".repeat(2_000));
/// big.id = Some("m1".into());
/// let handle = handle_of(0, &big);
/// let args = format!(r#"{{"handles":["{handle}"]}}"#);
/// let answer = answer_expand_within(&[big], &args, 300, &HeuristicCounter);
/// assert!(answer.ends_with("to stay within the context budget]"));
/// assert!(answer_expand_within(&[], &args, 10, &HeuristicCounter).contains("no room"));
/// ```
pub fn answer_expand_within(originals: &[Message], arguments: &str, room: usize, counter: &dyn TokenCounter) -> String {
    if room < MIN_EXPAND_ROOM {
        return format!(
            "[{EXPAND_TOOL_NAME}: no room is left in the context budget for an expansion; go on from the summary]"
        );
    }
    let mut max_chars = usize::MAX;
    for _ in 0..6 {
        let text = answer_expand(originals, arguments, max_chars);
        let tokens = counter.count_text(&text);
        if tokens <= room {
            return text;
        }
        let chars = text.chars().count();
        max_chars = (chars as u128 * room as u128 * 9 / 10 / tokens.max(1) as u128) as usize;
    }
    // A token is at least one char: `room / 2` chars (and the cut's note) fit `room`.
    answer_expand(originals, arguments, room / 2)
}
