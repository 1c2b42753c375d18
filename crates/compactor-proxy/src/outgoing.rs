//! What the proxy does to a request on its way out beyond the rewrite: Anthropic cache
//! breakpoints ([`llm_compactor::plan::breakpoints`]) and OpenAI's `prompt_cache_key`,
//! and the counters of both.
//!
//! A body nothing changes is forwarded as the same bytes; one that changes is written
//! back with its fields in their order.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use llm_compactor::plan::breakpoints::{BreakpointPolicy, CacheMode, place_breakpoints};
use serde_json::Value;
use sha2::{Digest, Sha256};

use llm_compactor::format::context_management::Edit;

use crate::api::Api;
use crate::identity::SessionFrom;

/// The proxy's wire options: breakpoints, the OpenAI cache key, where session
/// identities are read.
#[derive(Clone, Debug, Default)]
pub struct WireOptions {
    /// Anthropic breakpoint placement (`--anthropic-cache`, `--anthropic-cache-ttl`).
    pub anthropic_cache: BreakpointPolicy,
    /// Set `prompt_cache_key` from the session when an OpenAI client set none
    /// (`--openai-cache-key`).
    pub openai_cache_key: bool,
    /// `--session-from`: headers and body fields that name a session, tried after the
    /// known clients' identities.
    pub session_from: Vec<SessionFrom>,
}

/// Counters of what was done to outgoing requests.
#[derive(Debug, Default)]
pub struct WireCounters {
    breakpoints_added: AtomicU64,
    breakpoints_moved: AtomicU64,
    cache_keys_set: AtomicU64,
    /// Requests forwarded unchanged because the provider compacts them, by edit.
    server_compaction: [AtomicU64; 3],
    /// Requests whose `context_management` leaves compaction to us (thinking edits).
    context_management_kept: AtomicU64,
}

impl WireCounters {
    /// Counts a request the proxy stood down for: the provider compacts it with `edit`.
    pub fn stood_down(&self, edit: Edit) {
        let slot = match edit {
            Edit::ClearToolUses => 0,
            Edit::Compact => 1,
            Edit::ClearThinking | Edit::Other => 2,
        };
        self.server_compaction[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request whose `context_management` the proxy compacts under (edits that
    /// clear only thinking, or nothing).
    pub fn kept_compacting(&self) {
        self.context_management_kept.fetch_add(1, Ordering::Relaxed);
    }
}

impl WireCounters {
    /// Appends the counters to the exposition text.
    pub fn render(&self, out: &mut String) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        for (name, help, value) in [
            (
                "compactor_proxy_breakpoints_added_total",
                "Anthropic cache breakpoints the proxy added to requests that carried none (--anthropic-cache auto).",
                get(&self.breakpoints_added),
            ),
            (
                "compactor_proxy_breakpoints_moved_total",
                "Client breakpoints inside replaced messages moved to the end of the replacement.",
                get(&self.breakpoints_moved),
            ),
            (
                "compactor_proxy_prompt_cache_keys_set_total",
                "OpenAI requests given a prompt_cache_key from their session (--openai-cache-key).",
                get(&self.cache_keys_set),
            ),
            (
                "compactor_proxy_context_management_compacted_total",
                "Requests with a context_management that leaves the conversation's size to the client (clear_thinking, no edits): compacted as usual.",
                get(&self.context_management_kept),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
        }
        let name = "compactor_proxy_server_compaction_total";
        let _ = writeln!(
            out,
            "# HELP {name} Requests whose context_management makes the provider compact or clear tool results: forwarded unchanged, the proxy standing down (by edit).\n# TYPE {name} counter"
        );
        for (edit, counter) in ["clear_tool_uses", "compaction", "other"]
            .iter()
            .zip(&self.server_compaction)
        {
            let _ = writeln!(out, "{name}{{edit=\"{edit}\"}} {}", get(counter));
        }
    }
}

/// The `prompt_cache_key` of a session: a digest, so the session key itself (which may
/// be a client's identity) never reaches the provider in a new place.
pub fn cache_key(session: &str) -> String {
    format!("compactor-{}", &hex::encode(Sha256::digest(session.as_bytes()))[..32])
}

/// The body to forward for `original`, after the rewrite gave `forwarded`.
pub fn finish(
    api: Api,
    options: &WireOptions,
    counters: &WireCounters,
    original: &Bytes,
    forwarded: Bytes,
    session: &str,
) -> Bytes {
    match api {
        // Off still writes the client's own messages back with their current marks (the
        // recorded history has none) and keeps a request within four.
        Api::Anthropic if options.anthropic_cache.mode != CacheMode::Off || forwarded != *original => {
            let Ok(client) = serde_json::from_slice::<Value>(original) else {
                return forwarded;
            };
            let mut out = if forwarded == *original {
                client.clone()
            } else {
                match serde_json::from_slice::<Value>(&forwarded) {
                    Ok(v) => v,
                    Err(_) => return forwarded,
                }
            };
            let placement = place_breakpoints(&client, &mut out, &options.anthropic_cache);
            if !placement.changed() {
                return forwarded;
            }
            counters
                .breakpoints_added
                .fetch_add(placement.added as u64, Ordering::Relaxed);
            counters
                .breakpoints_moved
                .fetch_add(placement.moved as u64, Ordering::Relaxed);
            serde_json::to_vec(&out).map_or(forwarded, Bytes::from)
        }
        Api::OpenAi | Api::Responses if options.openai_cache_key => {
            let Ok(Value::Object(mut out)) = serde_json::from_slice::<Value>(&forwarded) else {
                return forwarded;
            };
            if out.get("prompt_cache_key").is_some_and(|k| !k.is_null()) {
                return forwarded;
            }
            out.insert("prompt_cache_key".into(), Value::String(cache_key(session)));
            counters.cache_keys_set.fetch_add(1, Ordering::Relaxed);
            serde_json::to_vec(&out).map_or(forwarded, Bytes::from)
        }
        _ => forwarded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_body_is_the_same_bytes_and_keys_are_digests() {
        let counters = WireCounters::default();
        let body = Bytes::from_static(br#"{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}"#);
        let out = finish(
            Api::Anthropic,
            &WireOptions::default(),
            &counters,
            &body,
            body.clone(),
            "s",
        );
        assert_eq!(out, body);
        let chat = Bytes::from_static(br#"{"model":"m","messages":[]}"#);
        let options = WireOptions {
            openai_cache_key: true,
            ..WireOptions::default()
        };
        let out = finish(Api::OpenAi, &options, &counters, &chat, chat.clone(), "secret-session");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["prompt_cache_key"], cache_key("secret-session"));
        assert!(!String::from_utf8_lossy(&out).contains("secret-session"));
    }
}
