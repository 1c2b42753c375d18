//! Anthropic prompt-cache breakpoints: where a request forwarded by the proxy carries
//! `cache_control`.
//!
//! Anthropic caches nothing unless a request marks a breakpoint, so a client that marks
//! none pays full price for a prefix the proxy keeps stable on purpose. Under
//! [`CacheMode::Auto`] a request that carries no `cache_control` at all gets them where
//! they pay: the end of the static prefix (the last `system` block, else the last tool),
//! the end of the stable rewritten prefix after a compaction, and the last message (the
//! rolling breakpoint: the next request finds it within Anthropic's 20-block lookback).
//!
//! A client that placed its own is never second-guessed: its breakpoints stay exactly
//! where they are, except that one inside messages the proxy replaced moves to the end of
//! the replacement (several there become one). Every place Anthropic counts is counted
//! (tools, `system` blocks, message content blocks, the top-level automatic field), and
//! a forwarded request never carries more than [`MAX_BREAKPOINTS`] unless the client's
//! own request already did.
//!
//! Which messages the proxy replaced is read from the two requests themselves: the
//! forwarded messages that end the same as the client's (compared without their marks:
//! the proxy records no marks, see [`strip_marks`]) are the client's, and go out exactly
//! as the client wrote them this time, with its current marks; those before them are
//! the replacement, standing for the client's messages before them. The same holds for
//! `system`. Whatever the mode, a forwarded request never carries more than
//! [`MAX_BREAKPOINTS`]: the oldest marks beyond it are dropped (a client's own request
//! over the limit would be refused whole). Pure: the same two requests give the same
//! bytes.

mod blocks;
mod marks;

use serde_json::{Map, Value};

pub use blocks::{CACHE_CONTROL, MAX_BREAKPOINTS, can_carry, count_breakpoints};
pub use marks::{eq_but_marks, strip_marks, unmarked};

/// When the proxy marks breakpoints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Mark them when the client marked none; otherwise keep the client's.
    #[default]
    Auto,
    /// Only keep the client's (moving those inside replaced messages); add none.
    Keep,
    /// Change nothing.
    Off,
}

impl std::str::FromStr for CacheMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "keep" => Ok(Self::Keep),
            "off" => Ok(Self::Off),
            other => Err(format!("unknown cache mode `{other}` (auto, keep or off)")),
        }
    }
}

/// How long the breakpoints the proxy adds keep their cache entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CacheTtl {
    /// Anthropic's default: five minutes, refreshed on every hit.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// One hour (a cache write costs more).
    #[serde(rename = "1h")]
    OneHour,
}

impl std::str::FromStr for CacheTtl {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "5m" => Ok(Self::FiveMinutes),
            "1h" => Ok(Self::OneHour),
            other => Err(format!("unknown cache TTL `{other}` (5m or 1h)")),
        }
    }
}

/// The breakpoint policy: the mode and the TTL of the breakpoints it adds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BreakpointPolicy {
    /// When to mark.
    pub mode: CacheMode,
    /// The TTL of added breakpoints.
    pub ttl: CacheTtl,
}

impl BreakpointPolicy {
    /// The `cache_control` value the policy adds.
    pub fn mark(&self) -> Value {
        let mut mark = Map::new();
        mark.insert("type".into(), Value::String("ephemeral".into()));
        if self.ttl == CacheTtl::OneHour {
            mark.insert("ttl".into(), Value::String("1h".into()));
        }
        Value::Object(mark)
    }
}

/// What [`place_breakpoints`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Placement {
    /// Breakpoints in the client's request.
    pub client: usize,
    /// Client breakpoints that were inside replaced messages.
    pub replaced: usize,
    /// Breakpoints put at the end of the replacement in their stead (0 or 1).
    pub moved: usize,
    /// Breakpoints the policy added (auto, client marked none).
    pub added: usize,
    /// Breakpoints in the forwarded request.
    pub total: usize,
    /// The client's own messages or `system` were written back as the client sent them
    /// (the recorded conversation carries no marks, or another key order).
    pub restored: bool,
    /// Breakpoints dropped to keep the request within [`MAX_BREAKPOINTS`].
    pub dropped: usize,
}

impl Placement {
    /// True when the forwarded request was changed.
    pub fn changed(&self) -> bool {
        self.replaced > 0 || self.added > 0 || self.moved > 0 || self.restored || self.dropped > 0
    }
}

fn messages(request: &Value) -> &[Value] {
    request
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// How many messages at the end of `outgoing` are the client's own (equal, in order, to
/// the end of `client`'s, marks aside).
fn kept_suffix(client: &[Value], outgoing: &[Value]) -> usize {
    client
        .iter()
        .rev()
        .zip(outgoing.iter().rev())
        .take_while(|(a, b)| eq_but_marks(a, b))
        .count()
}

/// The client's own messages (the last `kept`) and `system` go out as the client wrote
/// them in this request: its current marks, its key order. True when anything changed.
fn restore_client_parts(client: &Value, outgoing: &mut Value, kept: usize) -> bool {
    let mut changed = false;
    if let (Some(theirs), Some(ours)) = (client.get("system"), outgoing.get_mut("system"))
        && theirs != ours
        && eq_but_marks(theirs, ours)
    {
        *ours = theirs.clone();
        changed = true;
    }
    let theirs = messages(client);
    if let Some(Value::Array(out)) = outgoing.get_mut("messages") {
        let from = out.len() - kept;
        for (ours, theirs) in out[from..].iter_mut().zip(&theirs[theirs.len() - kept..]) {
            if ours != theirs {
                *ours = theirs.clone();
                changed = true;
            }
        }
    }
    changed
}

/// Drops the oldest breakpoints until at most [`MAX_BREAKPOINTS`] remain: messages first
/// (the earliest first), then `system` blocks, tools, and the top-level field. How many
/// were dropped.
fn enforce_limit(outgoing: &mut Value) -> usize {
    let mut over = count_breakpoints(outgoing).saturating_sub(MAX_BREAKPOINTS);
    let dropped = over;
    let mut unmark = |block: &mut Value| {
        if over > 0
            && let Some(object) = block.as_object_mut()
            && object.shift_remove(CACHE_CONTROL).is_some_and(|c| !c.is_null())
        {
            over -= 1;
        }
    };
    if let Some(Value::Array(out)) = outgoing.get_mut("messages") {
        for message in out.iter_mut() {
            if let Some(Value::Array(blocks)) = message.get_mut("content") {
                for block in blocks {
                    if let Some(Value::Array(inner)) = block.get_mut("content") {
                        inner.iter_mut().for_each(&mut unmark);
                    }
                    unmark(block);
                }
            }
        }
    }
    if let Some(Value::Array(system)) = outgoing.get_mut("system") {
        system.iter_mut().for_each(&mut unmark);
    }
    if let Some(Value::Array(tools)) = outgoing.get_mut("tools") {
        tools.iter_mut().for_each(&mut unmark);
    }
    unmark(outgoing);
    dropped
}

/// Marks the breakpoints of `outgoing`, the Messages request forwarded for `client`'s
/// (the same request, or its rewrite), under `policy`.
pub fn place_breakpoints(client: &Value, outgoing: &mut Value, policy: &BreakpointPolicy) -> Placement {
    let mut placement = Placement {
        client: count_breakpoints(client),
        ..Placement::default()
    };
    if !outgoing.is_object() {
        return placement;
    }
    let theirs = messages(client);
    let kept = kept_suffix(theirs, messages(outgoing));
    placement.restored = restore_client_parts(client, outgoing, kept);
    if policy.mode == CacheMode::Off {
        placement.dropped = enforce_limit(outgoing);
        placement.total = count_breakpoints(outgoing);
        return placement;
    }
    let replaced_in = theirs.len() - kept;
    let replaced_marks: Vec<Value> = theirs[..replaced_in]
        .iter()
        .flat_map(blocks::marks_in_message)
        .collect();
    placement.replaced = replaced_marks.len();
    let replacement_len = messages(outgoing).len() - kept;
    if let Some(Value::Array(out)) = outgoing.get_mut("messages") {
        // The replacement answers for the replaced messages' breakpoints: none of its
        // own (a kept copy of a replaced message would count twice).
        if replaced_in > 0 {
            for message in &mut out[..replacement_len] {
                blocks::strip_message(message);
            }
        }
    }
    let mut total = count_breakpoints(outgoing);
    if let Some(mark) = replaced_marks.last()
        && total < MAX_BREAKPOINTS
        && mark_replacement_end(outgoing, replacement_len, mark)
    {
        placement.moved = 1;
        total += 1;
    }
    if policy.mode == CacheMode::Auto && placement.client == 0 {
        let mark = policy.mark();
        let marks: [&dyn Fn(&mut Value) -> bool; 3] = [
            &|o| mark_static_prefix(o, &mark),
            &|o| replaced_in > 0 && kept > 0 && mark_replacement_end(o, replacement_len, &mark),
            &|o| mark_last_message(o, &mark),
        ];
        for place in marks {
            if total < MAX_BREAKPOINTS && place(outgoing) {
                placement.added += 1;
                total += 1;
            }
        }
    }
    placement.dropped = enforce_limit(outgoing);
    placement.total = count_breakpoints(outgoing);
    placement
}

/// True when [`place_breakpoints`] would leave `client`'s request unchanged if it were
/// forwarded as sent: its own marks are within [`MAX_BREAKPOINTS`], and either it has
/// some (they stand) or the policy adds none to a request without. A caller forwarding
/// the client's bytes then need not copy the request to find out (a Claude Code request
/// is hundreds of KB). `false` says only that the placement must be run.
///
/// ```
/// use llm_compactor::plan::breakpoints::{BreakpointPolicy, keeps_as_sent};
/// let marked = serde_json::json!({"messages": [{"role": "user",
///     "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
/// assert!(keeps_as_sent(&marked, &BreakpointPolicy::default()));
/// let bare = serde_json::json!({"messages": [{"role": "user", "content": "hi"}]});
/// assert!(!keeps_as_sent(&bare, &BreakpointPolicy::default()), "auto marks it");
/// ```
pub fn keeps_as_sent(client: &Value, policy: &BreakpointPolicy) -> bool {
    let marks = count_breakpoints(client);
    marks <= MAX_BREAKPOINTS && (marks > 0 || policy.mode != CacheMode::Auto)
}

/// The last message of the replacement (or before it) that can carry a mark.
fn mark_replacement_end(outgoing: &mut Value, replacement_len: usize, mark: &Value) -> bool {
    let Some(Value::Array(out)) = outgoing.get_mut("messages") else {
        return false;
    };
    let Some(at) = out[..replacement_len].iter().rposition(blocks::message_can_carry) else {
        return false;
    };
    out[at].get_mut("content").is_some_and(|c| blocks::mark_last(c, mark))
}

fn mark_last_message(outgoing: &mut Value, mark: &Value) -> bool {
    let Some(Value::Array(out)) = outgoing.get_mut("messages") else {
        return false;
    };
    let Some(at) = out.iter().rposition(blocks::message_can_carry) else {
        return false;
    };
    out[at].get_mut("content").is_some_and(|c| blocks::mark_last(c, mark))
}

/// The end of tools + system: the last `system` block, else the last tool.
fn mark_static_prefix(outgoing: &mut Value, mark: &Value) -> bool {
    if let Some(system) = outgoing.get_mut("system")
        && blocks::mark_last(system, mark)
    {
        return true;
    }
    let system_ends = match outgoing.get("system") {
        Some(Value::String(text)) => !text.is_empty(),
        Some(Value::Array(blocks)) => blocks.iter().any(can_carry),
        _ => false,
    };
    if system_ends {
        // The system's last block already carries one (or cannot): the tools are before it.
        return false;
    }
    let Some(Value::Array(tools)) = outgoing.get_mut("tools") else {
        return false;
    };
    match tools.last_mut() {
        Some(Value::Object(tool)) if !tool.contains_key(CACHE_CONTROL) => {
            tool.insert(CACHE_CONTROL.into(), mark.clone());
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn auto() -> BreakpointPolicy {
        BreakpointPolicy::default()
    }

    #[test]
    fn a_request_without_marks_gets_the_static_prefix_and_the_last_message() {
        let client = json!({"model":"m","tools":[{"name":"t","input_schema":{}}],"system":"be brief",
            "messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"text","text":"ok"}]}]});
        let mut out = client.clone();
        let placement = place_breakpoints(&client, &mut out, &auto());
        assert_eq!(placement.added, 2);
        assert_eq!(count_breakpoints(&out), 2);
        assert_eq!(out["system"][0]["cache_control"], json!({"type":"ephemeral"}));
        assert!(out["tools"][0].get("cache_control").is_none());
        assert!(out["messages"][1]["content"][0].get("cache_control").is_none());
        assert_eq!(out["messages"][1]["content"][1]["cache_control"]["type"], "ephemeral");
    }

    #[test]
    fn the_client_marks_stand_and_nothing_is_added() {
        let client = json!({"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"b"}]});
        let mut out = client.clone();
        let placement = place_breakpoints(&client, &mut out, &auto());
        assert_eq!(out, client);
        assert!(!placement.changed());
        let top = json!({"cache_control":{"type":"ephemeral"},"system":"s","messages":[{"role":"user","content":"b"}]});
        let mut out = top.clone();
        place_breakpoints(&top, &mut out, &auto());
        assert_eq!(out, top);
    }

    #[test]
    fn a_mark_in_replaced_messages_moves_to_the_end_of_the_replacement() {
        let mark = json!({"type":"ephemeral","ttl":"1h"});
        let client = json!({"messages":[
            {"role":"user","content":[{"type":"text","text":"old","cache_control":mark}]},
            {"role":"assistant","content":"older"},
            {"role":"user","content":"new"}]});
        let mut out = json!({"messages":[
            {"role":"user","content":"summary"},{"role":"assistant","content":"ack"},
            {"role":"user","content":"new"}]});
        let placement = place_breakpoints(&client, &mut out, &auto());
        assert_eq!((placement.replaced, placement.moved, placement.added), (1, 1, 0));
        assert_eq!(out["messages"][1]["content"][0]["cache_control"], mark);
        assert_eq!(out["messages"][2], client["messages"][2]);
    }

    /// Claude Code marks the last block of the last message and moves the mark every
    /// request. The proxy records no marks, so its rewrite of an earlier tool result
    /// carries none; the client's current marks go out where the client put them, and
    /// never more than four (stale ones used to come back: 5-17 per request).
    #[test]
    fn the_clients_current_marks_go_out_and_never_more_than_four() {
        let mark = json!({"type":"ephemeral"});
        let turn = |i: usize, marked: bool| {
            let mut block = json!({"type":"tool_result","tool_use_id":format!("t{i}"),"content":format!("out {i}"),"is_error":false});
            if marked {
                block["cache_control"] = mark.clone();
            }
            [
                json!({"role":"assistant","content":[{"type":"tool_use","id":format!("t{i}"),"name":"Bash","input":{}}]}),
                json!({"role":"user","content":[block]}),
            ]
        };
        let mut theirs = vec![json!({"role":"user","content":"task"})];
        for i in 0..4 {
            theirs.extend(turn(i, i == 3));
        }
        let client = json!({"system":[{"type":"text","text":"s","cache_control":mark},{"type":"text","text":"t","cache_control":mark}],
            "tools":[{"name":"Bash","input_schema":{},"cache_control":mark}],"messages":theirs});
        // What the proxy forwards: a summary for the first turns, then the recorded
        // (unmarked) turns, the system as recorded (unmarked), and stale marks.
        let mut ours = vec![json!({"role":"user","content":"summary"})];
        for i in 1..4 {
            ours.extend(turn(i, true));
        }
        let mut out = json!({"system":[{"type":"text","text":"s"},{"type":"text","text":"t"}],
            "tools":client["tools"].clone(),"messages":ours});
        for mode in [CacheMode::Auto, CacheMode::Keep, CacheMode::Off] {
            let mut out = out.clone();
            let placement = place_breakpoints(&client, &mut out, &BreakpointPolicy { mode, ..auto() });
            assert!(count_breakpoints(&out) <= MAX_BREAKPOINTS, "{mode:?}: {out}");
            assert_eq!(out["system"], client["system"], "{mode:?}");
            let n = out["messages"].as_array().unwrap().len();
            assert_eq!(
                out["messages"][n - 1],
                client["messages"][8],
                "{mode:?}: the client's last turn, its mark in place"
            );
            assert!(placement.restored, "{mode:?}");
        }
        place_breakpoints(&client, &mut out, &auto());
        assert_eq!(count_breakpoints(&out), 4);
    }

    #[test]
    fn a_request_over_the_limit_loses_its_oldest_marks() {
        let mark = json!({"type":"ephemeral"});
        let messages: Vec<Value> = (0..6)
            .map(|i| json!({"role":"user","content":[{"type":"text","text":format!("m{i}"),"cache_control":mark}]}))
            .collect();
        let client = json!({"system":[{"type":"text","text":"s","cache_control":mark}],"messages":messages});
        let mut out = client.clone();
        let placement = place_breakpoints(&client, &mut out, &auto());
        assert_eq!((placement.dropped, placement.total), (3, 4));
        assert!(out["messages"][2]["content"][0].get("cache_control").is_none());
        assert_eq!(out["messages"][3]["content"][0]["cache_control"], mark);
        assert_eq!(
            out["system"][0]["cache_control"], mark,
            "the static prefix keeps its mark"
        );
    }

    #[test]
    fn off_changes_nothing_and_ttl_is_written() {
        let client = json!({"system":"s","messages":[{"role":"user","content":"b"}]});
        let mut out = client.clone();
        let off = BreakpointPolicy {
            mode: CacheMode::Off,
            ..auto()
        };
        place_breakpoints(&client, &mut out, &off);
        assert_eq!(out, client);
        let hour = BreakpointPolicy {
            ttl: CacheTtl::OneHour,
            ..auto()
        };
        place_breakpoints(&client, &mut out, &hour);
        assert_eq!(out["system"][0]["cache_control"]["ttl"], "1h");
        assert_eq!("keep".parse::<CacheMode>(), Ok(CacheMode::Keep));
        assert!("x".parse::<CacheTtl>().is_err());
    }
}
