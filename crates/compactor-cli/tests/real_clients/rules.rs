//! The request rules the scripted model enforces, as pure functions of a request body:
//! what Anthropic and OpenAI document and refuse with a 400, so that a proxy that breaks
//! one fails here as it would against the real API.
//!
//! - At most 4 `cache_control` breakpoints per Messages request, counted over tools,
//!   `system` blocks, message content blocks (and blocks nested in a `tool_result`) and
//!   the top-level field ("A maximum of 4 blocks with cache_control may be provided").
//! - Tool pairing: every `tool_use` is answered by a `tool_result` in the next user turn
//!   and every `tool_result` answers a `tool_use` of the turn before; on the Responses
//!   API every `function_call` has its output and every output its call.
//! - Thinking is bound to its conversation (the signed-state issue, Anthropic's
//!   preserved-thinking prefix check): a `thinking` block's signature is the SHA-256 of
//!   the canonical JSON of `system`, `tools` and everything before the block, as sent when
//!   it was produced; a block whose prefix changed is "bound to a different
//!   conversation". Request-only annotations are not content: `cache_control` is left out
//!   of the digest (clients move their breakpoint every request), and so is a default
//!   `"is_error": false` (Anthropic renders it as its absence). When thinking is enabled,
//!   the last assistant turn of an in-progress tool loop must start with a thinking block.
//!   A request that asks for it (`thinking.block_binding.prefix_mismatch_behavior:
//!   "drop_block"`, with its beta) has such blocks dropped instead of refused, and the
//!   model reads (and signs its answer after) the conversation without them.
//! - Server-side tool-result clearing (`clear_tool_uses_*` in `context_management`, with
//!   its beta) is applied after the checks: it is not an edit of the history a block is
//!   bound to (the library's `cleared_by_provider`).
//! - `context_management` and `thinking.block_binding` need their betas in
//!   `anthropic-beta`.
//!
//! Kept apart from the server so that the self-tests can show that each gauge fails on
//! a request that breaks its rule.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

/// Anthropic's limit on `cache_control` blocks per request.
pub const MAX_BREAKPOINTS: usize = 4;

/// A request's content blocks: a string content is one text block.
pub fn blocks(content: &Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(blocks) => blocks.clone(),
        _ => Vec::new(),
    }
}

fn marked(value: &Value) -> bool {
    value.get("cache_control").is_some_and(|c| !c.is_null())
}

/// The `cache_control` marks of a Messages request, wherever Anthropic reads them.
pub fn breakpoints(body: &Value) -> usize {
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| marked(t))
        .count();
    let system = blocks(&body["system"]).iter().filter(|b| marked(b)).count();
    let mut messages = 0;
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in blocks(&message["content"]) {
            messages += usize::from(marked(&block));
            if block["type"] == "tool_result" {
                messages += blocks(&block["content"]).iter().filter(|b| marked(b)).count();
            }
        }
    }
    tools + system + messages + usize::from(marked(body))
}

/// Anthropic's 400 for more than [`MAX_BREAKPOINTS`] marks, if any.
pub fn check_breakpoints(body: &Value) -> Result<(), String> {
    let found = breakpoints(body);
    if found > MAX_BREAKPOINTS {
        return Err(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {found}."
        ));
    }
    Ok(())
}

fn ids(message: &Value, kind: &str, field: &str) -> Vec<String> {
    blocks(&message["content"])
        .iter()
        .filter(|b| b["type"] == kind)
        .filter_map(|b| b[field].as_str().map(str::to_owned))
        .collect()
}

/// Tool pairing of a Messages request: each `tool_use` answered in the very next user
/// turn, each `tool_result` answering the turn before.
pub fn check_anthropic_pairing(body: &Value) -> Result<(), String> {
    let messages = body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, message) in messages.iter().enumerate() {
        let results = ids(message, "tool_result", "tool_use_id");
        let asked = match i.checked_sub(1).map(|p| &messages[p]) {
            Some(prev) if prev["role"] == "assistant" => ids(prev, "tool_use", "id"),
            _ => Vec::new(),
        };
        if let Some(orphan) = results.iter().find(|id| !asked.contains(id)) {
            return Err(format!(
                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {orphan}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ));
        }
        if message["role"] == "assistant" {
            let calls = ids(message, "tool_use", "id");
            let answered = messages
                .get(i + 1)
                .map(|next| ids(next, "tool_result", "tool_use_id"))
                .unwrap_or_default();
            if let Some(open) = calls.iter().find(|id| !answered.contains(id)) {
                return Err(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {open}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
                ));
            }
        }
    }
    Ok(())
}

/// Tool pairing of a Responses request's `input`: every call has its output after it,
/// every output its call before it.
pub fn check_responses_pairing(body: &Value) -> Result<(), String> {
    let items = body["input"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut calls: Vec<&str> = Vec::new();
    let mut outputs: Vec<&str> = Vec::new();
    for item in items {
        let kind = item["type"].as_str().unwrap_or_default();
        let Some(id) = item["call_id"].as_str() else { continue };
        if kind.ends_with("_call_output") {
            if !calls.contains(&id) {
                return Err(format!(
                    "No tool call found for function call output with call_id {id}."
                ));
            }
            outputs.push(id);
        } else if kind.ends_with("_call") {
            calls.push(id);
        }
    }
    match calls.iter().find(|id| !outputs.contains(id)) {
        Some(open) => Err(format!("No tool output found for function call {open}.")),
        None => Ok(()),
    }
}

/// A value without its request-only annotations: `cache_control` anywhere, and a
/// default `"is_error": false`.
fn bare(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, inner) in map {
                if key == "cache_control" || (key == "is_error" && inner == &Value::Bool(false)) {
                    continue;
                }
                out.insert(key.clone(), bare(inner));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(bare).collect()),
        other => other.clone(),
    }
}

/// The signed prefix of a request, message by message: the SHA-256 over the canonical
/// JSON (request-only annotations left out) of `system`, `tools`, then each message in
/// turn. A running hasher, so that checking every block of a long conversation costs one
/// pass over it, not one per block.
#[derive(Clone)]
pub struct Prefix(Sha256);

impl Prefix {
    /// The prefix before the first message.
    pub fn new(body: &Value) -> Prefix {
        let mut hasher = Sha256::new();
        hasher.update(llm_compactor::message::canonical_json(&bare(&Value::Array(blocks(
            &body["system"],
        )))));
        hasher.update(b"\n");
        hasher.update(llm_compactor::message::canonical_json(&bare(&body["tools"])));
        Prefix(hasher)
    }

    /// The prefix extended by `message`.
    pub fn push(&mut self, message: &Value) {
        let normalized = json!({"role": message["role"], "content": blocks(&message["content"])});
        self.0.update(b"\n");
        self.0
            .update(llm_compactor::message::canonical_json(&bare(&normalized)));
    }

    /// The signature of a block after this prefix and `before`, the blocks before it in
    /// its own turn.
    pub fn sign(&self, before: &[Value]) -> String {
        let mut hasher = self.0.clone();
        hasher.update(b"\n#");
        hasher.update(llm_compactor::message::canonical_json(&bare(&Value::Array(
            before.to_vec(),
        ))));
        hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The signature a thinking block gets when it is produced after `messages` (and, in
/// its own turn, after `before` blocks).
pub fn signature(body: &Value, messages: &[Value], before: &[Value]) -> String {
    let mut prefix = Prefix::new(body);
    for message in messages {
        prefix.push(message);
    }
    prefix.sign(before)
}

/// What the thinking check found in one request.
#[derive(Clone, Debug, Default)]
pub struct Thinking {
    /// Thinking blocks received.
    pub blocks: usize,
    /// Their `(message, block)` positions whose signature does not match their prefix.
    pub invalid: Vec<(usize, usize)>,
    /// Of those, the ones dropped (the request asked for `drop_block`), not refused.
    pub dropped: usize,
    /// The messages as the model reads them: without the dropped blocks.
    pub read: Vec<Value>,
    /// The last assistant turn of an in-progress tool loop does not start with thinking
    /// while thinking is enabled: its index.
    pub unopened_loop: Option<usize>,
}

impl Thinking {
    /// Anthropic's 400 for the first broken rule, if any.
    pub fn error(&self) -> Option<String> {
        if let Some(&(m, b)) = self.invalid.first().filter(|_| self.dropped == 0) {
            return Some(format!(
                "messages.{m}.content.{b}: Invalid signature in thinking block. The block is bound to a different conversation: the system prompt, tools or a message before it changed since it was produced."
            ));
        }
        self.unopened_loop.map(|m| {
            format!(
                "messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, but found another block. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
            )
        })
    }
}

/// True when the request turns extended thinking on.
pub fn thinking_enabled(body: &Value) -> bool {
    matches!(body["thinking"]["type"].as_str(), Some("enabled" | "adaptive"))
}

/// True when the request asks for invalid thinking blocks to be dropped.
pub fn asks_drop_block(body: &Value) -> bool {
    body.pointer("/thinking/block_binding/prefix_mismatch_behavior") == Some(&json!("drop_block"))
}

/// The betas a request's fields need in `anthropic-beta`: the first missing one's 400.
pub fn check_betas(body: &Value, beta_header: &str) -> Result<(), String> {
    let betas: Vec<&str> = beta_header.split(',').map(str::trim).collect();
    for (field, beta) in [
        ("/context_management", "context-management-2025-06-27"),
        ("/thinking/block_binding", "thinking-binding-controls-2026-08-01"),
    ] {
        if body.pointer(field).is_some_and(|v| !v.is_null()) && !betas.contains(&beta) {
            return Err(format!("{}: requires the `{beta}` beta", &field[1..]));
        }
    }
    Ok(())
}

/// Checks every thinking block of a Messages request against its prefix, as the model
/// reads it (a block the request dropped is not part of the prefix of those after it).
pub fn check_thinking(body: &Value) -> Thinking {
    let messages = body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let drop = asks_drop_block(body);
    let mut found = Thinking::default();
    let mut prefix = Prefix::new(body);
    for (i, message) in messages.iter().enumerate() {
        let content = blocks(&message["content"]);
        let mut kept = Vec::with_capacity(content.len());
        for (j, block) in content.iter().enumerate() {
            if !matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking")) {
                kept.push(block.clone());
                continue;
            }
            found.blocks += 1;
            let signed = block["signature"]
                .as_str()
                .or(block["data"].as_str())
                .unwrap_or_default();
            if signed == prefix.sign(&kept) {
                kept.push(block.clone());
                continue;
            }
            found.invalid.push((i, j));
            if drop {
                found.dropped += 1;
            } else {
                kept.push(block.clone());
            }
        }
        let mut read = message.clone();
        if drop && kept.len() != content.len() {
            read["content"] = Value::Array(kept);
        }
        prefix.push(&read);
        found.read.push(read);
    }
    let in_loop = messages
        .last()
        .is_some_and(|m| m["role"] == "user" && !ids(m, "tool_result", "tool_use_id").is_empty());
    if thinking_enabled(body) && in_loop {
        let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
        if let Some(i) = last_assistant {
            let first = blocks(&messages[i]["content"]).first().map(|b| b["type"].clone());
            if !matches!(
                first.as_ref().and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            ) {
                found.unopened_loop = Some(i);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loop_body() -> Value {
        json!({
            "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ROUND 1"}]}
            ]
        })
    }

    fn signed(mut body: Value) -> Value {
        let messages = body["messages"].as_array().unwrap().clone();
        let sig = signature(&body, &messages[..1], &[]);
        body["messages"][1]["content"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"type": "thinking", "thinking": "", "signature": sig}));
        body
    }

    #[test]
    fn a_fifth_breakpoint_is_refused_wherever_it_sits() {
        let mut body = loop_body();
        assert_eq!(breakpoints(&body), 1);
        body["tools"][0]["cache_control"] = json!({"type": "ephemeral"});
        body["messages"][2]["content"][0]["cache_control"] = json!({"type": "ephemeral"});
        body["cache_control"] = json!({"type": "ephemeral"});
        assert_eq!(breakpoints(&body), 4);
        assert!(check_breakpoints(&body).is_ok());
        body["messages"][2]["content"][0]["content"] =
            json!([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]);
        let error = check_breakpoints(&body).unwrap_err();
        assert!(error.ends_with("Found 5."), "{error}");
    }

    #[test]
    fn pairing_catches_an_orphan_result_and_an_unanswered_call() {
        assert!(check_anthropic_pairing(&loop_body()).is_ok());
        let mut orphan = loop_body();
        orphan["messages"].as_array_mut().unwrap().remove(1);
        assert!(
            check_anthropic_pairing(&orphan)
                .unwrap_err()
                .contains("unexpected `tool_use_id`")
        );
        let mut open = loop_body();
        open["messages"].as_array_mut().unwrap().pop();
        assert!(
            check_anthropic_pairing(&open)
                .unwrap_err()
                .contains("without `tool_result`")
        );
        let responses = json!({"input": [
            {"type": "function_call", "call_id": "a", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "a", "output": "ok"}]});
        assert!(check_responses_pairing(&responses).is_ok());
        let mut orphan = responses.clone();
        orphan["input"].as_array_mut().unwrap().remove(0);
        assert!(check_responses_pairing(&orphan).is_err());
        let mut open = responses;
        open["input"].as_array_mut().unwrap().pop();
        assert!(check_responses_pairing(&open).unwrap_err().contains("No tool output"));
    }

    #[test]
    fn a_thinking_block_is_bound_to_its_prefix_but_not_to_cache_marks() {
        let body = signed(loop_body());
        let found = check_thinking(&body);
        assert_eq!((found.blocks, found.invalid.len(), found.unopened_loop), (1, 0, None));
        // The client moves its breakpoint and spells out a default: still the same prefix.
        let mut moved = body.clone();
        moved["messages"][0]["content"] =
            json!([{"type": "text", "text": "go", "cache_control": {"type": "ephemeral"}}]);
        moved["system"][0].as_object_mut().unwrap().remove("cache_control");
        moved["messages"][2]["content"][0]["is_error"] = json!(false);
        assert!(check_thinking(&moved).error().is_none());
        // An edit before the block (a summary, a stub) breaks the binding.
        let mut edited = body.clone();
        edited["messages"][0]["content"] = json!("[summary] go");
        let error = check_thinking(&edited).error().unwrap();
        assert!(error.starts_with("messages.1.content.0: Invalid signature"), "{error}");
        // Stripping the block leaves the loop's last assistant turn without thinking.
        let mut stripped = body;
        stripped["messages"][1]["content"].as_array_mut().unwrap().remove(0);
        assert_eq!(check_thinking(&stripped).unopened_loop, Some(1));
    }

    #[test]
    fn drop_block_drops_what_it_would_refuse_and_the_betas_are_required() {
        let mut edited = signed(loop_body());
        edited["messages"][0]["content"] = json!("[summary] go");
        edited["thinking"]["block_binding"] = json!({"prefix_mismatch_behavior": "drop_block"});
        let found = check_thinking(&edited);
        assert_eq!((found.invalid.len(), found.dropped), (1, 1));
        assert!(found.error().is_none(), "dropped, not refused");
        assert_eq!(found.read[1]["content"].as_array().unwrap().len(), 1, "read without it");
        assert!(
            check_betas(&edited, "")
                .unwrap_err()
                .contains("thinking-binding-controls")
        );
        assert!(check_betas(&edited, "x, thinking-binding-controls-2026-08-01").is_ok());
        let managed = json!({"context_management": {"edits": []}});
        assert!(check_betas(&managed, "").is_err());
        assert!(check_betas(&managed, "context-management-2025-06-27").is_ok());
    }
}
