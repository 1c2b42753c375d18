//! Taking signed blocks out of one message, the only edit the binding repair makes.
//!
//! - An Anthropic part is removed from the content; everything else stays as it was.
//! - An OpenAI sealed item is removed from its turn's original items (never edited),
//!   and the turn's content is read again from the items that remain, so that the codec
//!   still writes the turn back verbatim. The items that followed a removed reasoning
//!   item in its turn (up to the next reasoning item) lose their `id`: the API refuses an
//!   output item sent with the id of a response whose reasoning is not sent with it
//!   ("provided without its required ... item"; `openai/openai-agents-python` strips the
//!   ids the same way, PR #2728). An item's `id` is optional on input.
//!
//! A message left with nothing to say (no part, no call, no item) is reported as empty
//! and the caller removes it whole.

use serde_json::Value;

use super::signed::{parts_of, responses_items};
use crate::format::responses::{RESPONSES_HINT_KEY, item_kind, turn_parts};
use crate::message::{Content, Message};

/// `message` without the parts `remove` (part indices of its content, each a signed
/// block): `None` when nothing would be left of it.
pub(super) fn without_parts(message: &Message, remove: &[usize]) -> Option<Message> {
    if let Some(items) = responses_items(message) {
        let drop: Vec<usize> = items
            .iter()
            .filter(|(part, _, _)| remove.contains(part))
            .map(|(_, item, _)| *item)
            .collect();
        return without_items(message, &drop);
    }
    let parts: Vec<_> = parts_of(message)
        .iter()
        .enumerate()
        .filter(|(p, _)| !remove.contains(p))
        .map(|(_, part)| part.clone())
        .collect();
    if parts.is_empty() && message.tool_calls.is_empty() {
        return None;
    }
    let mut out = message.clone();
    out.content = Content::Parts(parts);
    Some(out)
}

/// A Responses turn without its items `drop` (indices into its original items).
fn without_items(message: &Message, drop: &[usize]) -> Option<Message> {
    let Some(Value::Array(items)) = message.extras.get(RESPONSES_HINT_KEY) else {
        return Some(message.clone());
    };
    let mut kept = Vec::with_capacity(items.len());
    let mut orphaned = false;
    for (i, item) in items.iter().enumerate() {
        let reasoning = item.as_object().and_then(item_kind) == Some("reasoning");
        if drop.contains(&i) {
            orphaned |= reasoning;
            continue;
        }
        if reasoning {
            orphaned = false;
        }
        let mut item = item.clone();
        if orphaned && let Some(object) = item.as_object_mut() {
            object.shift_remove("id");
        }
        kept.push(item);
    }
    if kept.is_empty() {
        return None;
    }
    let maps: Option<Vec<&serde_json::Map<String, Value>>> = kept.iter().map(Value::as_object).collect();
    // Items the codec read are objects with their fields; anything else is left alone.
    let Some(Ok((content, calls))) = maps.map(turn_parts) else {
        return Some(message.clone());
    };
    let mut out = message.clone();
    out.content = content;
    out.tool_calls = calls;
    out.extras.insert(RESPONSES_HINT_KEY.into(), Value::Array(kept));
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::format::responses::ResponsesRequest;
    use crate::message::Part;

    #[test]
    fn a_removed_reasoning_item_takes_the_ids_of_what_it_led_to_and_the_turn_still_writes_back_verbatim() {
        let body = json!({"model": "gpt-5", "input": [
            {"role": "user", "content": "go"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA1"},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
        ]});
        let request = ResponsesRequest::from_value(body, "r").unwrap();
        let turn = without_parts(&request.messages()[1], &[0]).expect("the call is left");
        let mut messages = request.messages().to_vec();
        messages[1] = turn;
        let written = request.with_messages(messages).to_value();
        assert_eq!(
            written["input"],
            json!([
                {"role": "user", "content": "go"},
                {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}
            ])
        );
    }

    #[test]
    fn a_turn_of_nothing_but_thinking_is_left_empty() {
        let mut turn = Message::assistant("");
        turn.content = Content::Parts(vec![
            Part::from_value(json!({"type": "thinking", "thinking": "t", "signature": "s"})).unwrap(),
        ]);
        assert_eq!(without_parts(&turn, &[0]), None);
        turn.content = Content::Parts(vec![
            Part::from_value(json!({"type": "thinking", "thinking": "t", "signature": "s"})).unwrap(),
            Part::text("ok"),
        ]);
        assert_eq!(
            without_parts(&turn, &[0]).unwrap().content,
            Content::Parts(vec![Part::text("ok")])
        );
    }
}
