//! A later request that carries a compaction item this proxy served: the item becomes
//! what it stands for before anything else reads the request, so the upstream, the
//! session and the transcript all see an ordinary conversation.
//!
//! An item `/v1/responses/compact` wrote stands for the summary message it took the
//! place of; one server-side compaction emitted stands for the whole conversation up to
//! it, as the upstream saw it then, and the items before it in the input are dropped (a
//! client may keep them, or prune them as OpenAI's guide suggests: the request is the
//! same either way).

use axum::http::HeaderMap;
use serde_json::Value;

use super::seal::{Opened, SEAL_PREFIX, Sealer, owner_of};
use llm_compactor::format::responses::COMPACTION_ITEM;

/// Replaces, in a Responses request's `input`, every compaction item this proxy sealed
/// (its `encrypted_content` starts with [`SEAL_PREFIX`]) by what it stands for, for the
/// client whose credential `headers` present (digested only when an item is ours:
/// every `/v1/responses` request passes here); the input then starts at the latest
/// window item's conversation ([`Opened::Window`]). Returns how many items it opened,
/// and the session the latest window item names; a provider's own compaction items are
/// left alone.
///
/// # Errors
/// The client's 400, in words naming the item (its index and id), when one is forged,
/// altered, sealed under another key or for another credential: it is never resolved.
pub(crate) fn resolve_items(request: &mut Value, sealer: &Sealer, headers: &HeaderMap) -> Result<Resolved, String> {
    let Some(Value::Array(items)) = request.get_mut("input") else {
        return Ok(Resolved::default());
    };
    let mut resolved = 0;
    let mut owner: Option<String> = None;
    // The latest window item: its index and the conversation it stands for.
    let mut window: Option<(usize, Vec<Value>, String)> = None;
    for (index, item) in items.iter_mut().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some(COMPACTION_ITEM) {
            continue;
        }
        let Some(sealed) = item.get("encrypted_content").and_then(Value::as_str) else {
            continue;
        };
        if !sealed.starts_with(SEAL_PREFIX) {
            continue;
        }
        let owner = owner.get_or_insert_with(|| owner_of(headers));
        match sealer.open(owner, sealed) {
            Ok(Opened::Item(summary)) => *item = summary,
            Ok(Opened::Window { items, session }) => window = Some((index, items, session)),
            Err(refused) => {
                let id = item.get("id").and_then(Value::as_str).unwrap_or("(no id)");
                return Err(format!(
                    "input[{index}]: the compaction item {id} {}",
                    refused.describe()
                ));
            }
        }
        resolved += 1;
    }
    let session = window.map(|(at, conversation, session)| {
        items.splice(..=at, conversation);
        session
    });
    Ok(Resolved {
        opened: resolved,
        session,
    })
}

/// What [`resolve_items`] did to a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The compaction items opened.
    pub(crate) opened: usize,
    /// The session the latest server-side compaction item belongs to, if one was opened.
    pub(crate) session: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ours_resolve_theirs_stay_and_a_forged_one_is_named() {
        let sealer = Sealer::random();
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Bearer sk-o".parse().unwrap());
        let mut other = HeaderMap::new();
        other.insert("authorization", "Bearer sk-p".parse().unwrap());
        let o = owner_of(&headers);
        let summary = json!({"role": "user", "content": "what happened so far"});
        let ours = sealer.seal(&o, &summary);
        let mut request = json!({"model": "m", "input": [
            {"type": "compaction", "id": "cmp_1", "encrypted_content": ours},
            {"type": "compaction", "id": "cmp_openai", "encrypted_content": "gAAAA-opaque"},
            {"role": "user", "content": "next"},
        ]});
        assert_eq!(resolve_items(&mut request, &sealer, &headers).unwrap().opened, 1);
        assert_eq!(request["input"][0], summary);
        assert_eq!(request["input"][1]["id"], "cmp_openai");

        // A window item drops what came before it (kept or pruned by the client alike),
        // the latest one winning; the items after it stay.
        let first = sealer.seal_window(&o, &[json!({"role": "user", "content": "w1"})], "s0");
        let window = vec![summary.clone(), json!({"role": "assistant", "content": "kept"})];
        let latest = sealer.seal_window(&o, &window, "s1");
        let after = json!({"type": "function_call_output", "call_id": "c9", "output": "new"});
        let mut kept = json!({"input": [
            {"role": "user", "content": "old"},
            {"type": "compaction", "id": "cmp_a", "encrypted_content": first},
            {"role": "assistant", "content": "reply"},
            {"type": "compaction", "id": "cmp_b", "encrypted_content": latest.clone()},
            after.clone(),
        ]});
        let both = resolve_items(&mut kept, &sealer, &headers).unwrap();
        assert_eq!((both.opened, both.session.as_deref()), (2, Some("s1")));
        assert_eq!(kept["input"], json!([window[0], window[1], after]));
        let mut pruned = json!({"input": [{"type": "compaction", "encrypted_content": latest}, after.clone()]});
        assert_eq!(resolve_items(&mut pruned, &sealer, &headers).unwrap().opened, 1);
        assert_eq!(pruned, kept);

        let mut forged = json!({"input": [{"role": "user", "content": "x"},
            {"type": "compaction", "id": "cmp_9", "encrypted_content": format!("{SEAL_PREFIX}e30.AAAA")}]});
        let error = resolve_items(&mut forged, &sealer, &headers).unwrap_err();
        assert!(error.contains("input[1]") && error.contains("cmp_9"), "{error}");
        let mut foreign = json!({"input": [{"type": "compaction", "encrypted_content": sealer.seal(&o, &summary)}]});
        assert!(
            resolve_items(&mut foreign, &sealer, &other)
                .unwrap_err()
                .contains("another client")
        );
    }
}
