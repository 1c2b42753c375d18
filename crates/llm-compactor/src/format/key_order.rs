//! A tool result block's key order, kept when a client writes it in another order than
//! the Anthropic exporter does.
//!
//! Why: a rewritten request and a replayed transcript must be the client's bytes. Claude
//! Code writes `{"tool_use_id", "type", "content", "is_error"}`; written back in the
//! exporter's order, every kept tool result changed its bytes (and the real-client replay
//! was not byte-equal). The order is kept in a hint (a reserved key, never written to the
//! wire), only where it differs.

use serde_json::{Map, Value};

use crate::message::Message;

/// The hint key under which a tool result remembers its block's key order (only when it
/// differs from the exporter's).
pub(super) const KEY_ORDER: &str = "_llm_compactor_key_order";

/// The keys of a tool result's block in the order the exporter writes them.
pub(super) fn block_order(message: &Message) -> Vec<String> {
    let mut keys = vec!["type".to_owned(), "tool_use_id".to_owned()];
    if !message.content.is_absent() {
        keys.push("content".to_owned());
    }
    keys.extend(
        message
            .extras
            .keys()
            .filter(|k| !super::is_hint_key(k) && *k != "cache_control")
            .cloned(),
    );
    keys
}

/// `block` with its keys in `order` (keys it lacks skipped, keys not named kept after).
pub(super) fn in_order(mut block: Map<String, Value>, order: &[Value]) -> Map<String, Value> {
    let mut out = Map::with_capacity(block.len());
    for key in order.iter().filter_map(Value::as_str) {
        if let Some((key, value)) = block.shift_remove_entry(key) {
            out.insert(key, value);
        }
    }
    out.extend(block);
    out
}
