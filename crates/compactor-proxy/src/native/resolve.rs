//! A later request that carries a compaction item this proxy served: the item becomes
//! the summary it stands for before anything else reads the request, so the upstream,
//! the session and the transcript all see an ordinary conversation.

use axum::http::HeaderMap;
use serde_json::Value;

use super::seal::{SEAL_PREFIX, Sealer, owner_of};
use llm_compactor::format::responses::COMPACTION_ITEM;

/// Replaces, in a Responses request's `input`, every compaction item this proxy sealed
/// (its `encrypted_content` starts with [`SEAL_PREFIX`]) by the item it stands for, for
/// the client whose credential `headers` present (digested only when an item is ours:
/// every `/v1/responses` request passes here). Returns how many it replaced; a
/// provider's own compaction items are left alone.
///
/// # Errors
/// The client's 400, in words naming the item (its index and id), when one is forged,
/// altered, sealed under another key or for another credential: it is never resolved.
pub(crate) fn resolve_items(request: &mut Value, sealer: &Sealer, headers: &HeaderMap) -> Result<usize, String> {
    let Some(Value::Array(items)) = request.get_mut("input") else {
        return Ok(0);
    };
    let mut resolved = 0;
    let mut owner: Option<String> = None;
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
            Ok(summary) => {
                *item = summary;
                resolved += 1;
            }
            Err(refused) => {
                let id = item.get("id").and_then(Value::as_str).unwrap_or("(no id)");
                return Err(format!(
                    "input[{index}]: the compaction item {id} {}",
                    refused.describe()
                ));
            }
        }
    }
    Ok(resolved)
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
        assert_eq!(resolve_items(&mut request, &sealer, &headers), Ok(1));
        assert_eq!(request["input"][0], summary);
        assert_eq!(request["input"][1]["id"], "cmp_openai");

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
