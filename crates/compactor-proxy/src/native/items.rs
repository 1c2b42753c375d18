//! The items the proxy writes into a Responses conversation: a conversation as `input`
//! items, and the `compaction` item that stands for what a pass summarized.

use serde_json::{Value, json};

use llm_compactor::format::responses::COMPACTION_ITEM;
use llm_compactor::message::Message;

use crate::api::Wire;

/// `messages` as the request's `input` items (a string input as one user message; the
/// instructions stay out: the client sends them with each request).
pub(crate) fn input_items(wire: &Wire, messages: Vec<Message>) -> Vec<Value> {
    let (mut value, _) = wire.to_value(messages);
    match value.get_mut("input").map(Value::take) {
        Some(Value::Array(items)) => items,
        Some(Value::String(text)) => vec![json!({"role": "user", "content": text})],
        _ => Vec::new(),
    }
}

/// A `compaction` item whose `encrypted_content` is `sealed`, with a readable copy of
/// the pass's `summary` when it wrote one: `summary` as a reasoning item's
/// (`[{"type": "summary_text", "text": …}]`), a field OpenAI's compaction items do not
/// have, which the official SDKs keep as an extra (their models allow extra fields) and
/// which the proxy never reads back (only the sealed content counts: changing the copy
/// changes nothing).
pub(crate) fn compaction_item(sealed: String, summary: Option<&str>) -> Value {
    let mut item = json!({
        "id": format!("cmp_{}", uuid::Uuid::new_v4().simple()),
        "type": COMPACTION_ITEM,
        "encrypted_content": sealed,
    });
    if let Some(text) = summary {
        item["summary"] = json!([{"type": "summary_text", "text": text}]);
    }
    item
}
