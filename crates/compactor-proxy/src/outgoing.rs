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
    pub(crate) server_compaction: AtomicU64,
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
                "compactor_proxy_server_compaction_total",
                "Requests that asked the provider to compact (context_management): forwarded unchanged, the proxy standing down.",
                get(&self.server_compaction),
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}");
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
        Api::Anthropic if options.anthropic_cache.mode != CacheMode::Off => {
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

/// True when a request asks the provider to compact it server-side (Anthropic's and the
/// Responses API's `context_management`): the proxy stands down for it.
pub fn asks_server_compaction(body: &[u8]) -> bool {
    // A cheap look first: most bodies never name the field.
    if !body.windows(18).any(|w| w == b"context_management") {
        return false;
    }
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("context_management").map(|c| !c.is_null()))
        .unwrap_or(false)
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
        assert!(asks_server_compaction(br#"{"context_management":{"edits":[]}}"#));
        assert!(!asks_server_compaction(br#"{"context_management":null}"#));
    }
}
