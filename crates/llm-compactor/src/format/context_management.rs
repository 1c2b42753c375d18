//! What a request's `context_management` asks the provider to do, and whether that
//! leaves anything for a client-side compactor to do.
//!
//! # Why read it instead of fearing it
//!
//! A request may ask the provider to edit its context on the server: Anthropic's
//! `context_management.edits` (`clear_tool_uses_*`, `clear_thinking_*`, `compact_*`) and
//! the Responses API's `context_management` list (`{"type": "compaction", ...}`). Where
//! the provider summarizes or clears old tool results, it shapes the conversation and a
//! compactor in front of it must stand down: two compactors fighting over one history
//! would each undo the other's cache. But not every edit does that. Claude Code sends
//! `{"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}` on every request
//! with thinking on: it clears nothing (`keep: "all"`), and clearing thinking alone never
//! keeps a conversation inside its window. Standing down for it left the most used agent
//! client with no compaction at all (a 198k-token request against an 80k budget).
//!
//! So the edits are classified one by one: [`Edit::ClearThinking`] (and an empty list)
//! leaves the compactor working; [`Edit::ClearToolUses`] and [`Edit::Compact`] are the
//! provider doing what we would; an edit this code does not know is treated as the
//! provider's (standing down is the safe side: a request forwarded as it came is what
//! the client would have sent without us).

use serde_json::Value;

/// One server-side context edit, by what it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Edit {
    /// Anthropic `clear_thinking_*`: drops old thinking blocks (or none, with
    /// `keep: "all"`). Leaves the conversation's size to the client.
    ClearThinking,
    /// Anthropic `clear_tool_uses_*`: clears old tool results on the server.
    ClearToolUses,
    /// The provider summarizes: Anthropic `compact_*`, the Responses API's `compaction`.
    Compact,
    /// An edit type this code does not know.
    Other,
}

impl Edit {
    /// The edit's name in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Edit::ClearThinking => "clear_thinking",
            Edit::ClearToolUses => "clear_tool_uses",
            Edit::Compact => "compaction",
            Edit::Other => "other",
        }
    }

    /// True when the provider itself keeps the conversation small with this edit, so a
    /// compactor in front of it stands down.
    pub fn provider_compacts(self) -> bool {
        !matches!(self, Edit::ClearThinking)
    }

    fn of(kind: &str) -> Edit {
        if kind.starts_with("clear_thinking") {
            Edit::ClearThinking
        } else if kind.starts_with("clear_tool_uses") {
            Edit::ClearToolUses
        } else if kind == "compaction" || kind.starts_with("compact_") || kind == "compact" {
            Edit::Compact
        } else {
            Edit::Other
        }
    }
}

/// The edits a request body's `context_management` asks for, in order (empty when it
/// has none, or `null`). A `context_management` whose shape is unknown is one
/// [`Edit::Other`].
///
/// ```
/// use llm_compactor::format::context_management::{Edit, edits, provider_compacts};
/// let claude_code = serde_json::json!({"context_management": {"edits": [
///     {"type": "clear_thinking_20251015", "keep": "all"}]}});
/// assert_eq!(edits(&claude_code), vec![Edit::ClearThinking]);
/// assert_eq!(provider_compacts(&claude_code), None);
/// let responses = serde_json::json!({"context_management": [{"type": "compaction", "compact_threshold": 200000}]});
/// assert_eq!(provider_compacts(&responses), Some(Edit::Compact));
/// ```
pub fn edits(request: &Value) -> Vec<Edit> {
    let kinds = |list: &Vec<Value>| -> Vec<Edit> {
        list.iter()
            .map(|edit| edit.get("type").and_then(Value::as_str).map_or(Edit::Other, Edit::of))
            .collect()
    };
    match request.get("context_management") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => kinds(list),
        Some(Value::Object(object)) => match object.get("edits") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(list)) => kinds(list),
            Some(_) => vec![Edit::Other],
        },
        Some(_) => vec![Edit::Other],
    }
}

/// Removes from a request body's `context_management` every edit that asks the provider
/// to compact ([`Edit::Compact`]: OpenAI's `compaction`, Anthropic's `compact_*`), and
/// the field itself when nothing else is left in it; returns how many it removed. For a
/// server that has no compaction of its own, where a compactor in front of it does that
/// work instead; every other edit stays as the client sent it. When another edit also
/// keeps the conversation small on the server (`clear_tool_uses`, one not known), the
/// request is left as it is (0): the compactor stands down for it, and must not take the
/// client's compaction away from it.
///
/// ```
/// use llm_compactor::format::context_management::without_compaction;
/// let mut responses = serde_json::json!({"context_management": [{"type": "compaction", "compact_threshold": 9}]});
/// assert_eq!(without_compaction(&mut responses), 1);
/// assert_eq!(responses, serde_json::json!({}));
/// let mut messages = serde_json::json!({"context_management": {"edits": [
///     {"type": "compact_20260112"}, {"type": "clear_thinking_20251015", "keep": "all"}]}});
/// assert_eq!(without_compaction(&mut messages), 1);
/// assert_eq!(messages["context_management"]["edits"].as_array().unwrap().len(), 1);
/// let mut both = serde_json::json!({"context_management": {"edits": [
///     {"type": "compact_20260112"}, {"type": "clear_tool_uses_20250919"}]}});
/// assert_eq!(without_compaction(&mut both), 0);
/// assert_eq!(both["context_management"]["edits"].as_array().unwrap().len(), 2);
/// ```
pub fn without_compaction(request: &mut Value) -> usize {
    if edits(request)
        .into_iter()
        .any(|e| e.provider_compacts() && e != Edit::Compact)
    {
        return 0;
    }
    let is_compaction = |edit: &Value| {
        edit.get("type")
            .and_then(Value::as_str)
            .is_some_and(|kind| Edit::of(kind) == Edit::Compact)
    };
    let Some(object) = request.as_object_mut() else {
        return 0;
    };
    let (removed, empty) = match object.get_mut("context_management") {
        Some(Value::Array(list)) => {
            let before = list.len();
            list.retain(|edit| !is_compaction(edit));
            (before - list.len(), list.is_empty())
        }
        Some(Value::Object(inner)) => {
            let others = inner.len() - 1;
            match inner.get_mut("edits") {
                Some(Value::Array(list)) => {
                    let before = list.len();
                    list.retain(|edit| !is_compaction(edit));
                    (before - list.len(), list.is_empty() && others == 0)
                }
                _ => (0, false),
            }
        }
        _ => (0, false),
    };
    if removed > 0 && empty {
        object.shift_remove("context_management");
    }
    removed
}

/// The token count at which a Responses request asks the server to compact: the
/// `compact_threshold` of its `context_management` `compaction` entry (the smallest,
/// when it has several), or `None` when it has no such entry or the entry names no
/// threshold. A compactor that does the server's compaction for it uses this as the
/// request's trigger (read it before [`without_compaction`] takes the entry away).
///
/// ```
/// use llm_compactor::format::context_management::compact_threshold;
/// let request = serde_json::json!({"context_management": [{"type": "compaction", "compact_threshold": 200000}]});
/// assert_eq!(compact_threshold(&request), Some(200_000));
/// let bare = serde_json::json!({"context_management": [{"type": "compaction"}]});
/// assert_eq!(compact_threshold(&bare), None);
/// assert_eq!(compact_threshold(&serde_json::json!({"input": []})), None);
/// ```
pub fn compact_threshold(request: &Value) -> Option<usize> {
    let Some(Value::Array(list)) = request.get("context_management") else {
        return None;
    };
    list.iter()
        .filter(|entry| entry.get("type").and_then(Value::as_str) == Some("compaction"))
        .filter_map(|entry| entry.get("compact_threshold").and_then(Value::as_u64))
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
        .min()
}

/// The first edit with which the provider keeps the conversation small itself (a
/// compactor in front of it stands down), or `None` when the request leaves that to the
/// client.
pub fn provider_compacts(request: &Value) -> Option<Edit> {
    edits(request).into_iter().find(|e| e.provider_compacts())
}

/// Who keeps a request's conversation small, by its `context_management`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stance {
    /// No `context_management` at all.
    Absent,
    /// A `context_management` whose edits leave the conversation's size to the client
    /// (only thinking cleared, or nothing).
    LeftToClient,
    /// The provider compacts or clears old tool results itself, with this edit.
    Provider(Edit),
}

/// The [`Stance`] of a request body's bytes; bodies that never name the field are not
/// parsed (most never do). A body that is not JSON is [`Stance::Absent`]: it is not a
/// request this module can read.
pub fn stance_in(body: &[u8]) -> Stance {
    if memchr::memmem::find(body, b"context_management").is_none() {
        return Stance::Absent;
    }
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Stance::Absent;
    };
    stance_of(&request)
}

/// The [`Stance`] of a request already read as JSON (a caller that reads the body anyway
/// need not have [`stance_in`] read it a second time).
///
/// ```
/// use llm_compactor::format::context_management::{Stance, stance_of};
/// let keep_all = serde_json::json!({"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}});
/// assert_eq!(stance_of(&keep_all), Stance::LeftToClient);
/// assert_eq!(stance_of(&serde_json::json!({"messages": []})), Stance::Absent);
/// ```
pub fn stance_of(request: &Value) -> Stance {
    if request.get("context_management").is_none_or(Value::is_null) {
        return Stance::Absent;
    }
    match provider_compacts(request) {
        Some(edit) => Stance::Provider(edit),
        None => Stance::LeftToClient,
    }
}

/// The beta header value that makes Anthropic's `context_management` available.
pub const CONTEXT_MANAGEMENT_BETA: &str = "context-management-2025-06-27";

/// Anthropic's server-side tool-result clearing, as an edit's `type`.
pub const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";

/// True when a Messages request leaves room for an edit of ours that clears old tool
/// results on the server ([`with_clear_tool_uses`]): it has no `context_management`, or
/// one whose edits only clear thinking (Claude Code's `keep: "all"`). A request whose
/// own edits clear or compact is the provider's to shape, and one whose field we cannot
/// read is left as it came.
pub fn may_clear_tool_uses(request: &Value) -> bool {
    match request.get("context_management") {
        None | Some(Value::Null) => true,
        Some(Value::Object(object)) => {
            matches!(object.get("edits"), None | Some(Value::Null | Value::Array(_)))
                && edits(request).iter().all(|e| *e == Edit::ClearThinking)
        }
        Some(_) => false,
    }
}

/// Adds to a Messages request the server-side clearing of every tool result but the
/// latest `keep` tool uses (the oldest first, as the provider clears them): a
/// `clear_tool_uses_20250919` edit triggered by the number of tool uses, so that it
/// clears the same results on every request until `keep` changes (the cache breaks
/// only when the cleared run grows, as with our aging epochs). Placed after the client's
/// own edits: Anthropic reads a `clear_thinking` edit first. False (nothing changed) when
/// [`may_clear_tool_uses`] says no. The request also needs the
/// [`CONTEXT_MANAGEMENT_BETA`] header ([`with_beta`]).
///
/// ```
/// use llm_compactor::format::context_management::with_clear_tool_uses;
/// let mut claude_code = serde_json::json!({"context_management": {"edits": [
///     {"type": "clear_thinking_20251015", "keep": "all"}]}});
/// assert!(with_clear_tool_uses(&mut claude_code, 3));
/// let edits = claude_code["context_management"]["edits"].as_array().unwrap();
/// assert_eq!(edits[0]["type"], "clear_thinking_20251015");
/// assert_eq!(edits[1]["keep"], serde_json::json!({"type": "tool_uses", "value": 3}));
/// assert!(!with_clear_tool_uses(&mut claude_code, 3), "the request clears tool results already");
/// ```
pub fn with_clear_tool_uses(request: &mut Value, keep: usize) -> bool {
    if !may_clear_tool_uses(request) {
        return false;
    }
    let Some(object) = request.as_object_mut() else {
        return false;
    };
    let edit = serde_json::json!({
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "tool_uses", "value": keep},
        "keep": {"type": "tool_uses", "value": keep},
    });
    let field = object
        .entry("context_management")
        .or_insert_with(|| serde_json::json!({}));
    if field.is_null() {
        *field = serde_json::json!({});
    }
    let Some(inner) = field.as_object_mut() else {
        return false;
    };
    let list = inner.entry("edits").or_insert_with(|| Value::Array(Vec::new()));
    if list.is_null() {
        *list = Value::Array(Vec::new());
    }
    match list.as_array_mut() {
        Some(list) => {
            list.push(edit);
            true
        }
        None => false,
    }
}

/// What Anthropic's server reads from a Messages request that carries a
/// `clear_tool_uses_*` edit with a `tool_uses` trigger and `keep` (as
/// [`with_clear_tool_uses`] writes it): when there are more tool uses than the trigger,
/// the results of every tool use but the latest `keep` are replaced by `placeholder`,
/// oldest first. Returns the number of results cleared, or `None` when the request asks
/// for no such clearing (an edit with an `input_tokens` trigger is not modelled here: the
/// simulator's `clear-tool-uses` strategy models that one). For test upstreams and for
/// counting what the provider will read.
///
/// ```
/// use llm_compactor::format::context_management::{cleared_by_provider, with_clear_tool_uses};
/// let mut request = serde_json::json!({"messages": [
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x", "input": {}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "long"}]},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "x", "input": {}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "new"}]}]});
/// assert_eq!(cleared_by_provider(&mut request.clone(), "[cleared]"), None);
/// with_clear_tool_uses(&mut request, 1);
/// assert_eq!(cleared_by_provider(&mut request, "[cleared]"), Some(1));
/// assert_eq!(request["messages"][1]["content"][0]["content"], "[cleared]");
/// assert_eq!(request["messages"][3]["content"][0]["content"], "new");
/// ```
pub fn cleared_by_provider(request: &mut Value, placeholder: &str) -> Option<usize> {
    let edit = request
        .pointer("/context_management/edits")?
        .as_array()?
        .iter()
        .find(|e| {
            e.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| Edit::of(t) == Edit::ClearToolUses)
        })?;
    let count = |field: &str| {
        (edit.pointer(&format!("/{field}/type"))? == "tool_uses")
            .then(|| edit.pointer(&format!("/{field}/value"))?.as_u64())
            .flatten()
    };
    let (trigger, keep) = (count("trigger")? as usize, count("keep")? as usize);
    let messages = request.get_mut("messages")?.as_array_mut()?;
    let blocks = |m: &Value| m.get("content").and_then(Value::as_array).cloned().unwrap_or_default();
    let calls: Vec<String> = messages
        .iter()
        .flat_map(blocks)
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .filter_map(|b| b.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if calls.len() <= trigger {
        return Some(0);
    }
    let cleared_calls = &calls[..calls.len().saturating_sub(keep)];
    let mut cleared = 0;
    for message in messages.iter_mut() {
        let Some(content) = message.get_mut("content").and_then(Value::as_array_mut) else {
            continue;
        };
        for block in content {
            let answers_cleared = block.get("type").and_then(Value::as_str) == Some("tool_result")
                && block
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| cleared_calls.iter().any(|c| c == id));
            if answers_cleared {
                block["content"] = Value::String(placeholder.to_owned());
                cleared += 1;
            }
        }
    }
    Some(cleared)
}

/// A comma-separated beta header value (`anthropic-beta`) with `beta` added; `None` when
/// it is already there.
///
/// ```
/// use llm_compactor::format::context_management::with_beta;
/// assert_eq!(with_beta(None, "b1").as_deref(), Some("b1"));
/// assert_eq!(with_beta(Some("b0"), "b1").as_deref(), Some("b0,b1"));
/// assert_eq!(with_beta(Some("b0, b1"), "b1"), None);
/// ```
pub fn with_beta(current: Option<&str>, beta: &str) -> Option<String> {
    match current.map(str::trim).filter(|c| !c.is_empty()) {
        None => Some(beta.to_owned()),
        Some(current) if current.split(',').any(|b| b.trim() == beta) => None,
        Some(current) => Some(format!("{current},{beta}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn edits_are_classified_by_what_they_do() {
        let cases = [
            (json!({}), None),
            (json!({"context_management": null}), None),
            (json!({"context_management": {"edits": []}}), None),
            (
                json!({"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}}),
                None,
            ),
            (
                json!({"context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}}]}}),
                None,
            ),
            (
                json!({"context_management": {"edits": [{"type": "clear_thinking_20251015"}, {"type": "clear_tool_uses_20250919"}]}}),
                Some(Edit::ClearToolUses),
            ),
            (
                json!({"context_management": {"edits": [{"type": "compact_20260112"}]}}),
                Some(Edit::Compact),
            ),
            (
                json!({"context_management": [{"type": "compaction", "compact_threshold": 1000}]}),
                Some(Edit::Compact),
            ),
            (
                json!({"context_management": {"edits": [{"type": "something_new"}]}}),
                Some(Edit::Other),
            ),
            (json!({"context_management": "weird"}), Some(Edit::Other)),
            (
                json!({"context_management": {"edits": {"type": "x"}}}),
                Some(Edit::Other),
            ),
        ];
        for (request, expected) in cases {
            assert_eq!(provider_compacts(&request), expected, "{request}");
            let bytes = serde_json::to_vec(&request).unwrap();
            let stance = match expected {
                Some(edit) => Stance::Provider(edit),
                None if request.get("context_management").is_none_or(Value::is_null) => Stance::Absent,
                None => Stance::LeftToClient,
            };
            assert_eq!(stance_in(&bytes), stance, "{request}");
        }
    }

    #[test]
    fn our_clearing_is_added_only_beside_thinking_edits() {
        let mut bare = json!({"messages": []});
        assert!(with_clear_tool_uses(&mut bare, 2));
        assert_eq!(edits(&bare), vec![Edit::ClearToolUses]);
        for refused in [
            json!({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}),
            json!({"context_management": {"edits": [{"type": "compact_20260112"}]}}),
            json!({"context_management": {"edits": [{"type": "something_new"}]}}),
            json!({"context_management": {"edits": "all"}}),
            json!({"context_management": [{"type": "compaction"}]}),
        ] {
            let mut request = refused.clone();
            assert!(!with_clear_tool_uses(&mut request, 2), "{refused}");
            assert_eq!(request, refused, "left as it came");
        }
        let mut null = json!({"context_management": null});
        assert!(with_clear_tool_uses(&mut null, 0));
        assert_eq!(null["context_management"]["edits"][0]["trigger"]["value"], 0);
    }
}
