//! The binding rules, one test each, on Anthropic and Responses conversations read by
//! the codecs, and the documented error messages.

use serde_json::{Value, json};

use super::*;
use crate::format::responses::ResponsesRequest;
use crate::format::{Document, Format};
use crate::message::{Content, Message, Part};

/// An Anthropic tool loop of `rounds` rounds, each an assistant turn that thinks
/// (signed `s{i}`), says something and calls a tool, answered by a tool result; read by
/// the Anthropic codec.
fn anthropic_loop(rounds: usize, ends_in_loop: bool) -> Vec<Message> {
    let mut turns = vec![json!({"role": "user", "content": "fix the bug"})];
    for i in 0..rounds {
        turns.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("thought {i}"), "signature": format!("s{i}")},
            {"type": "text", "text": format!("step {i}")},
            {"type": "tool_use", "id": format!("t{i}"), "name": "bash", "input": {"cmd": format!("ls {i}")}}
        ]}));
        turns.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("output {i} ").repeat(20)}
        ]}));
    }
    if !ends_in_loop {
        turns.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "done", "signature": "s_end"},
            {"type": "text", "text": "Fixed."}
        ]}));
        turns.push(json!({"role": "user", "content": "thanks"}));
    }
    let doc = json!({"system": "You are careful.", "messages": turns});
    Document::from_value(doc, Some(Format::Anthropic), "t")
        .unwrap()
        .into_messages()
}

fn anthropic() -> BindingContext {
    BindingContext::new(BindingRules::anthropic())
}

fn blocks(invalid: &[Invalid]) -> Vec<usize> {
    invalid.iter().map(|i| i.block.message).collect()
}

/// Indices of the assistant turns (each holds one thinking block at part 0).
fn thinking_turns(messages: &[Message]) -> Vec<usize> {
    signed_blocks(messages).iter().map(|b| b.at.message).collect()
}

#[test]
fn a_stub_in_an_early_tool_result_invalidates_every_later_thinking_block_and_none_before_it() {
    let before = anthropic_loop(5, true);
    let turns = thinking_turns(&before);
    assert_eq!(turns, [2, 4, 6, 8, 10]);
    let mut after = before.clone();
    after[5].content = Content::Text(crate::plan::stub_text(200, Some("bash")));
    let invalid = invalidated(&before, &after, &anthropic());
    assert_eq!(blocks(&invalid), [6, 8, 10]);
    for block in &invalid {
        assert_eq!(
            block.reason,
            InvalidReason::PrefixChanged {
                at: 5,
                change: PrefixChange::Edited
            }
        );
        assert_eq!(block.outcome, Outcome::Rejected);
    }
}

#[test]
fn a_summary_invalidates_all_kept_turn_thinking() {
    let before = anthropic_loop(5, false);
    // system, user, then rounds: a summary replaces the first three rounds.
    let mut after = before[..2].to_vec();
    after.push(Message::user("[summary of rounds 0-2]"));
    after.extend(before[8..].iter().cloned());
    let invalid = invalidated(&before, &after, &anthropic());
    let kept: Vec<usize> = thinking_turns(&after);
    assert_eq!(blocks(&invalid), kept, "every kept turn's thinking");
    assert_eq!(
        invalid[0].reason,
        InvalidReason::PrefixChanged {
            at: 2,
            change: PrefixChange::Replaced { removed: 6 }
        }
    );
}

#[test]
fn an_unchanged_prefix_keeps_every_block_and_an_append_too() {
    let before = anthropic_loop(4, false);
    assert!(invalidated(&before, &before, &anthropic()).is_empty());
    let mut after = before.clone();
    after.push(Message::user("and one more thing"));
    assert!(invalidated(&before, &after, &anthropic()).is_empty());
    // Ids are not on the wire.
    let renamed: Vec<Message> = before.iter().cloned().map(|m| m.with_id("x")).collect();
    assert!(invalidated(&before, &renamed, &anthropic()).is_empty());
}

#[test]
fn a_thinking_block_left_out_or_moved_invalidates_the_blocks_after_it() {
    let before = anthropic_loop(4, true);
    let mut after = before.clone();
    let Content::Parts(parts) = &mut after[4].content else {
        panic!()
    };
    parts.remove(0);
    let invalid = invalidated(&before, &after, &anthropic());
    assert_eq!(blocks(&invalid), [6, 8]);
    assert_eq!(invalid[0].reason, InvalidReason::ThinkingLeftOut { at: 4 });

    // Two thinking blocks of one turn swapped.
    let mut before = anthropic_loop(2, true);
    let Content::Parts(parts) = &mut before[2].content else {
        panic!()
    };
    parts.insert(
        1,
        Part::from_value(json!({"type": "redacted_thinking", "data": "zz"})).unwrap(),
    );
    let mut after = before.clone();
    let Content::Parts(parts) = &mut after[2].content else {
        panic!()
    };
    parts.swap(0, 1);
    let invalid = invalidated(&before, &after, &anthropic());
    assert_eq!(
        invalid
            .iter()
            .map(|i| (i.block.message, i.block.part))
            .collect::<Vec<_>>(),
        [(2, 0), (2, 1), (4, 0)]
    );
    assert!(
        invalid
            .iter()
            .all(|i| i.reason == InvalidReason::ThinkingMoved { at: 2 })
    );
}

#[test]
fn a_thinking_only_turn_left_out_between_others_is_reported_as_such() {
    let before = {
        let mut messages = anthropic_loop(2, true);
        let mut lone = Message::assistant("");
        lone.content = Content::Parts(vec![
            Part::from_value(json!({"type": "thinking", "thinking": "", "signature": "empty"})).unwrap(),
        ]);
        messages.insert(2, lone);
        messages.insert(3, Message::user("go on"));
        messages
    };
    let mut after = before.clone();
    after.remove(2);
    let invalid = invalidated(&before, &after, &anthropic());
    assert_eq!(invalid[0].reason, InvalidReason::ThinkingLeftOut { at: 2 });
}

#[test]
fn tools_system_account_and_model_are_facts_of_the_request() {
    let before = anthropic_loop(3, false);
    let ctx = anthropic().tools_changed(true);
    let invalid = invalidated(&before, &before, &ctx);
    assert_eq!(invalid.len(), 4);
    assert!(invalid.iter().all(|i| i.reason == InvalidReason::ToolsChanged));
    // Only Sonnet and Haiku 5.5 bind to the account.
    let opus =
        BindingContext::new(BindingRules::for_model(Provider::Anthropic, "claude-opus-5-5")).account_changed(true);
    assert!(invalidated(&before, &before, &opus).is_empty());
    let sonnet =
        BindingContext::new(BindingRules::for_model(Provider::Anthropic, "claude-sonnet-5-5")).account_changed(true);
    assert_eq!(invalidated(&before, &before, &sonnet).len(), 4);
    // Another model drops what it cannot read, without an error.
    let switched = invalidated(&before, &before, &anthropic().model_changed(true));
    assert!(switched.iter().all(|i| i.outcome == Outcome::Dropped));
    // A provider that binds nothing, and a model before preserved thinking.
    let mut after = before.clone();
    after[3].content = Content::Text("[elided]".into());
    assert!(invalidated(&before, &after, &BindingContext::new(BindingRules::none())).is_empty());
    let old = BindingContext::new(BindingRules::for_model(Provider::Anthropic, "claude-sonnet-4-6"));
    assert!(invalidated(&before, &after, &old).is_empty());
}

#[test]
fn kept_turns_after_a_summary_the_api_wrote_stay_valid_while_unchanged() {
    let before = anthropic_loop(5, true);
    let mut compacted = Message::assistant("");
    compacted.content = Content::Parts(vec![
        Part::from_value(json!({"type": "compaction", "content": "what happened in rounds 0-2"})).unwrap(),
    ]);
    compacted.sticky = true;
    // system, the compaction, then the kept turns from round 3 on (message 8).
    let mut after = vec![before[0].clone(), compacted];
    after.extend(before[8..].iter().cloned());
    assert!(invalidated(&before, &after, &anthropic()).is_empty());
    // A kept message edited: the blocks after it are invalid again.
    let mut edited = after.clone();
    edited[3].content = Content::Text("[elided]".into());
    assert_eq!(blocks(&invalidated(&before, &edited, &anthropic())), [4]);
    // A message added between the summary and the kept turns breaks them too.
    let mut added = after.clone();
    added.insert(2, Message::user("a note"));
    assert_eq!(blocks(&invalidated(&before, &added, &anthropic())), [3, 5]);
}

/// A Responses request: instructions, a user message, then `rounds` turns of reasoning
/// (sealed) and a function call with its output.
fn responses_loop(rounds: usize) -> ResponsesRequest {
    let mut input = vec![json!({"role": "user", "content": "fix the bug"})];
    for i in 0..rounds {
        input.push(json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": [],
            "encrypted_content": format!("gAAAA{i}xyz=")}));
        input.push(
            json!({"type": "function_call", "id": format!("fc_{i}"), "call_id": format!("c{i}"),
            "name": "bash", "arguments": format!("{{\"cmd\":\"ls {i}\"}}")}),
        );
        input.push(json!({"type": "function_call_output", "call_id": format!("c{i}"), "output": format!("out {i}")}));
    }
    let body = json!({"model": "gpt-5", "instructions": "Be careful.", "input": input});
    ResponsesRequest::from_value(body, "r").unwrap()
}

fn openai() -> BindingContext {
    BindingContext::new(BindingRules::openai_responses())
}

#[test]
fn openai_reasoning_after_a_prefix_change_is_dropped_by_the_api_and_kept_whole_by_the_plan() {
    let before = responses_loop(3).into_messages();
    assert_eq!(thinking_turns(&before), [2, 4, 6]);
    let mut after = before.clone();
    after[3].content = Content::Text("[elided]".into());
    let invalid = invalidated(&before, &after, &openai());
    assert_eq!(blocks(&invalid), [4, 6]);
    assert!(invalid.iter().all(|i| i.outcome == Outcome::Dropped));
    let repair = plan_binding_repair(&after, &invalid, &openai(), &RepairPolicy::default());
    assert!(repair.sendable());
    assert_eq!(repair.messages, after, "sealed items are kept whole");
    assert_eq!(repair.report.left_for_provider.len(), 2);
    let stripped = plan_binding_repair(
        &after,
        &invalid,
        &openai(),
        &RepairPolicy::default().strip_dropped(true),
    );
    assert_eq!(stripped.report.dropped.len(), 2);
    assert!(signed_blocks(&stripped.messages).iter().all(|b| b.at.message == 2));
}

#[test]
fn an_edited_sealed_item_is_refused_and_removed_from_its_turn() {
    let before = responses_loop(2).into_messages();
    let mut after = before.clone();
    let Some(Value::Array(items)) = after[2].extras.get_mut(crate::format::responses::RESPONSES_HINT_KEY) else {
        panic!()
    };
    items[0]["encrypted_content"] = json!("gAAAAforged");
    let invalid = invalidated(&before, &after, &openai());
    assert_eq!(invalid[0].reason, InvalidReason::SealedEdited);
    assert_eq!(invalid[0].outcome, Outcome::Rejected);
    let repair = plan_binding_repair(&after, &invalid, &openai(), &RepairPolicy::default());
    assert!(repair.sendable());
    assert!(!signed_blocks(&repair.messages).iter().any(|b| b.at.message == 2));
    assert_eq!(repair.messages[2].tool_calls, before[2].tool_calls, "the call stays");
}

#[test]
fn an_openai_compaction_item_keeps_later_reasoning_valid_and_is_never_dropped_silently() {
    let before = responses_loop(4).into_messages();
    let compaction = json!({"model": "gpt-5", "input": [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAsummary"}
    ]});
    let summary = ResponsesRequest::from_value(compaction, "c").unwrap().into_messages();
    // instructions, the compaction, then rounds 2 and 3 (messages 6..).
    let mut after = vec![before[0].clone(), summary[0].clone()];
    after.extend(before[6..].iter().cloned());
    assert!(invalidated(&before, &after, &openai()).is_empty());
    // Under another key, every sealed item goes; the compaction only if allowed.
    let rekeyed = openai().account_changed(true);
    let invalid = invalidated(&after, &after, &rekeyed);
    assert_eq!(invalid.len(), 3);
    let refused = plan_binding_repair(&after, &invalid, &rekeyed, &RepairPolicy::default());
    assert!(!refused.sendable());
    assert_eq!(refused.report.refused.len(), 1);
    let allowed = plan_binding_repair(
        &after,
        &invalid,
        &rekeyed,
        &RepairPolicy::default().allow_dropping_compaction(true),
    );
    assert!(allowed.sendable());
    assert_eq!(
        allowed.report.removed_turns,
        [1],
        "a turn of nothing but the compaction"
    );
}

#[test]
fn the_repair_removes_exactly_the_invalid_thinking_and_an_emptied_turn() {
    let mut before = anthropic_loop(3, false);
    let mut lone = Message::assistant("");
    lone.content = Content::Parts(vec![
        Part::from_value(json!({"type": "thinking", "thinking": "hmm", "signature": "lone"})).unwrap(),
    ]);
    let end = before.len() - 1;
    before.insert(end, lone);
    before.insert(end + 1, Message::user("and?"));
    let mut after = before.clone();
    after[3].content = Content::Text("[elided]".into());
    let invalid = invalidated(&before, &after, &anthropic());
    let repair = plan_binding_repair(&after, &invalid, &anthropic(), &RepairPolicy::default());
    assert!(repair.sendable());
    assert_eq!(repair.report.removed_turns, [end]);
    assert_eq!(repair.messages.len(), after.len() - 1);
    // The block before the stub is kept, every later one is gone.
    assert_eq!(thinking_turns(&repair.messages), [2]);
    assert_eq!(repair.report.dropped.len(), invalid.len());
}

#[test]
fn an_in_progress_tool_loop_whose_last_thinking_is_invalid_needs_a_turn_boundary_or_drop_block() {
    let before = anthropic_loop(4, true);
    let last = *thinking_turns(&before).last().unwrap();
    assert_eq!(in_progress_tool_loop(&before), Some(last));
    let mut after = before.clone();
    after[3].content = Content::Text("[elided]".into());
    let invalid = invalidated(&before, &after, &anthropic());
    let repair = plan_binding_repair(&after, &invalid, &anthropic(), &RepairPolicy::default());
    assert!(!repair.sendable());
    assert_eq!(repair.report.needs_turn_boundary.map(|b| b.message), Some(last));
    // The messages are what the drop_block plan sends.
    let with_drop = plan_binding_repair(
        &after,
        &invalid,
        &anthropic(),
        &RepairPolicy::default().drop_block(true),
    );
    assert!(with_drop.sendable());
    assert_eq!(with_drop.messages, repair.messages);
    assert_eq!(thinking_turns(&with_drop.messages), [2, last]);
    // Thinking off: nothing needs to start the turn.
    let off = anthropic().thinking_enabled(false);
    let plain = plan_binding_repair(&after, &invalid, &off, &RepairPolicy::default());
    assert!(plain.sendable());
    assert_eq!(thinking_turns(&plain.messages), [2]);
}

const BOUND: &str = "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\".";

fn anthropic_error(message: &str) -> String {
    json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}).to_string()
}

#[test]
fn the_documented_anthropic_error_names_a_block_and_every_later_one_goes() {
    // Wire: user, then per round an assistant turn and a user turn of tool results.
    let request = anthropic_loop(3, true);
    let message = BOUND.replace("messages.1.", "messages.3.");
    let recovery = recover_from_error(400, &anthropic_error(&message), &request).expect("ours");
    // Wire message 3 is round 1's assistant turn: message 4 here (system, user, 2, 3).
    assert_eq!(blocks(&recovery.invalid), [4, 6]);
    assert!(recovery.retryable());
    assert_eq!(
        recovery.cause,
        RecoveryCause::InvalidSignature {
            wire_message: 3,
            wire_block: 0,
            block: Some(BlockRef::new(4, 0)),
            different_conversation: true
        }
    );
    // The same path relabelled by a gateway, without the conversation sentence.
    let plain = "messages.1.content.0: Invalid `signature` in `thinking` block";
    let relabelled = recover_from_error(429, &anthropic_error(plain), &request).expect("ours");
    assert_eq!(blocks(&relabelled.invalid), [2, 4, 6]);
    // The tool loop's missing thinking: nothing to drop.
    let missing = "messages.5.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.";
    let loop_error = recover_from_error(400, &anthropic_error(missing), &request).expect("ours");
    assert_eq!(
        loop_error.cause,
        RecoveryCause::ToolLoopNeedsThinking { wire_message: 5 }
    );
    assert!(!loop_error.retryable());
    // Not ours.
    for other in [
        anthropic_error("messages.1.content.0.text: text content blocks must be non-empty"),
        anthropic_error("prompt is too long: 210000 tokens > 200000 maximum"),
        "<html>bad gateway</html>".to_owned(),
    ] {
        assert_eq!(recover_from_error(400, &other, &request), None, "{other}");
    }
    assert_eq!(recover_from_error(500, &anthropic_error(BOUND), &request), None);
}

#[test]
fn invalid_encrypted_content_drops_every_sealed_item_and_names_the_quoted_one() {
    let request = responses_loop(3).into_messages();
    // openai/codex#8121, with the quoted head and tail of the second item.
    let body = json!({"error": {"message": "The encrypted content gAAA...1xyz= could not be verified.",
        "type": "invalid_request_error", "param": null, "code": "invalid_encrypted_content"}})
    .to_string();
    let recovery = recover_from_error(400, &body, &request).expect("ours");
    assert_eq!(blocks(&recovery.invalid), [2, 4, 6]);
    assert_eq!(
        recovery.cause,
        RecoveryCause::InvalidEncryptedContent {
            named: Some(BlockRef::new(4, 0))
        }
    );
    let repair = plan_binding_repair(&request, &recovery.invalid, &openai(), &RepairPolicy::default());
    assert!(repair.sendable());
    assert!(signed_blocks(&repair.messages).is_empty());
}

#[test]
fn wire_paths_map_back_to_the_messages_the_codec_wrote_them_from() {
    let doc = json!({"system": [{"type": "text", "text": "rules"}], "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "a", "signature": "s1"},
            {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
            {"type": "tool_use", "id": "t2", "name": "ls", "input": {"p": 1}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
            {"type": "text", "text": "and"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "y"}
        ]},
        {"role": "system", "content": "mid-conversation rules"},
        {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "zz"},
            {"type": "thinking", "thinking": "b", "signature": "s2"},
            {"type": "text", "text": "done"}
        ]}
    ]});
    let document = Document::from_value(doc, Some(Format::Anthropic), "t").unwrap();
    let messages = document.messages();
    let written = document.to_value();
    let wire = written["messages"].as_array().unwrap();
    let turns = crate::format::anthropic::wire_turns(messages);
    assert_eq!(turns.iter().flatten().max().copied(), Some(wire.len() - 1));
    for (i, message) in messages.iter().enumerate() {
        let Some(n) = turns[i] else {
            assert!(message.sysprompt);
            continue;
        };
        let role = if message.role == crate::message::Role::Tool {
            "user"
        } else {
            message.role.as_str()
        };
        assert_eq!(wire[n]["role"], role, "message {i}");
        if message.role == crate::message::Role::Assistant {
            let parts = crate::format::anthropic::assistant_block_parts(message);
            let Content::Parts(own) = &message.content else {
                panic!()
            };
            for (m, part) in parts.iter().enumerate() {
                let block = &wire[n]["content"][m];
                match part.map(|p| &own[p]) {
                    Some(Part::ToolUse { id }) => assert_eq!(block["id"], id.as_str()),
                    Some(other) => assert_eq!(block, &other.to_value()),
                    None => assert_eq!(block["type"], "tool_use"),
                }
            }
        }
    }
    // The error's path for the second assistant turn's thinking names part 1 there.
    let body = anthropic_error(&BOUND.replace("messages.1.content.0", "messages.4.content.1"));
    let recovery = recover_from_error(400, &body, messages).expect("ours");
    let last = messages.len() - 1;
    assert_eq!(
        recovery.invalid.iter().map(|i| i.block).collect::<Vec<_>>(),
        [BlockRef::new(last, 1)]
    );
}
