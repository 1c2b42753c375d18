//! What the proxy does to a request on its way out beyond the rewrite: Anthropic cache
//! breakpoints ([`llm_compactor::plan::breakpoints`]) and OpenAI's `prompt_cache_key`,
//! and the counters of both.
//!
//! A body nothing changes is forwarded as the same bytes; one that changes is written
//! back with its fields in their order.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use llm_compactor::plan::breakpoints::{BreakpointPolicy, CacheMode, keeps_as_sent, place_breakpoints};
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
    /// Whole request bodies read as JSON on their way upstream (one per request).
    body_parses: AtomicU64,
    /// Whole request bodies written from JSON on their way upstream (at most one per
    /// request).
    body_writes: AtomicU64,
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

    /// Counts a request body read as JSON (the gauge of "each body parsed once").
    pub fn parsed(&self) {
        self.body_parses.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request body written from JSON (the gauge of "each body written once").
    pub fn written(&self) {
        self.body_writes.fetch_add(1, Ordering::Relaxed);
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
            (
                "compactor_proxy_body_parses_total",
                "Request bodies read as JSON on their way upstream (one per compacted-route request).",
                get(&self.body_parses),
            ),
            (
                "compactor_proxy_body_writes_total",
                "Request bodies written from JSON on their way upstream (at most one per compacted-route request).",
                get(&self.body_writes),
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

/// The request as the client sent it.
pub struct Sent<'a> {
    /// Its bytes.
    pub bytes: &'a Bytes,
    /// Its JSON, when the route read it already (Messages; OpenAI with the cache key):
    /// not parsed again.
    pub json: Option<&'a Value>,
}

/// What a round forwards before the wire options apply: the body, and its JSON when the
/// round rewrote it (the body's serialization; not parsed again).
pub struct Forwarded {
    /// The body; empty when the round left writing it to [`finish`] (then `json` is the
    /// body: a rewritten Messages request, written once, with its breakpoints).
    pub body: Bytes,
    /// The body as JSON, when the round had it.
    pub json: Option<Value>,
}

/// The body to forward for the client's request `sent`, after the rewrite gave
/// `forwarded`.
///
/// Each request is read as JSON once: the client's JSON and the rewrite's come with
/// them, and a request forwarded as sent whose own breakpoints stand is not copied.
pub fn finish(
    api: Api,
    options: &WireOptions,
    counters: &WireCounters,
    sent: Sent<'_>,
    forwarded: Forwarded,
    session: &str,
) -> Bytes {
    let Forwarded { body: forwarded, json } = forwarded;
    let original = sent.bytes;
    // A body the round left unwritten: written from its JSON whatever is done below.
    let unwritten = forwarded.is_empty() && json.is_some();
    let write = |json: &Value| {
        counters.written();
        serde_json::to_vec(json).map_or_else(|_| forwarded.clone(), Bytes::from)
    };
    let parse = |bytes: &Bytes| {
        counters.parsed();
        serde_json::from_slice::<Value>(bytes)
    };
    if unwritten && api != Api::Anthropic && !options.openai_cache_key {
        return json.as_ref().map_or(forwarded.clone(), write);
    }
    match api {
        // Off still writes the client's own messages back with their current marks (the
        // recorded history has none) and keeps a request within four.
        Api::Anthropic if options.anthropic_cache.mode != CacheMode::Off || forwarded != *original => {
            let parsed;
            let client = match sent.json {
                Some(client) => client,
                None => match parse(original) {
                    Ok(v) => {
                        parsed = v;
                        &parsed
                    }
                    Err(_) => return json.as_ref().filter(|_| unwritten).map_or(forwarded.clone(), write),
                },
            };
            let mut out = if forwarded == *original {
                if keeps_as_sent(client, &options.anthropic_cache) {
                    return forwarded;
                }
                client.clone()
            } else {
                match json.map_or_else(|| parse(&forwarded), Ok) {
                    Ok(v) => v,
                    Err(_) => return forwarded,
                }
            };
            let placement = place_breakpoints(client, &mut out, &options.anthropic_cache);
            if !placement.changed() && !unwritten {
                return forwarded;
            }
            counters
                .breakpoints_added
                .fetch_add(placement.added as u64, Ordering::Relaxed);
            counters
                .breakpoints_moved
                .fetch_add(placement.moved as u64, Ordering::Relaxed);
            write(&out)
        }
        Api::OpenAi | Api::Responses if options.openai_cache_key => {
            // The client's JSON when the body is the client's (read once, by the route).
            let json = json.or_else(|| sent.json.filter(|_| forwarded == *original).cloned());
            let Ok(Value::Object(mut out)) = json.map_or_else(|| parse(&forwarded), Ok) else {
                return forwarded;
            };
            if out.get("prompt_cache_key").is_some_and(|k| !k.is_null()) {
                // A body the round left unwritten is written once, as it is.
                return if unwritten {
                    write(&Value::Object(out))
                } else {
                    forwarded
                };
            }
            out.insert("prompt_cache_key".into(), Value::String(cache_key(session)));
            counters.cache_keys_set.fetch_add(1, Ordering::Relaxed);
            write(&Value::Object(out))
        }
        _ => forwarded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn as_is(body: &Bytes) -> Forwarded {
        Forwarded {
            body: body.clone(),
            json: None,
        }
    }

    fn sent(bytes: &Bytes) -> Sent<'_> {
        Sent { bytes, json: None }
    }

    #[test]
    fn an_unchanged_body_is_the_same_bytes_and_keys_are_digests() {
        let counters = WireCounters::default();
        let body = Bytes::from_static(br#"{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}"#);
        let out = finish(
            Api::Anthropic,
            &WireOptions::default(),
            &counters,
            sent(&body),
            as_is(&body),
            "s",
        );
        assert_eq!(out, body);
        let chat = Bytes::from_static(br#"{"model":"m","messages":[]}"#);
        let options = WireOptions {
            openai_cache_key: true,
            ..WireOptions::default()
        };
        let out = finish(
            Api::OpenAi,
            &options,
            &counters,
            sent(&chat),
            as_is(&chat),
            "secret-session",
        );
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["prompt_cache_key"], cache_key("secret-session"));
        assert!(!String::from_utf8_lossy(&out).contains("secret-session"));
    }

    /// The JSON a route and a round already hold stands for their bytes: the same
    /// forwarded bytes whether it is given or parsed again.
    #[test]
    fn given_json_forwards_the_same_bytes_as_parsing() {
        let mark = json!({"type": "ephemeral"});
        let client = json!({"model": "m", "system": [{"type": "text", "text": "rules", "cache_control": mark}],
            "messages": [
                {"role": "user", "content": "old"},
                {"role": "assistant", "content": "older"},
                {"role": "user", "content": [{"type": "text", "text": "new", "cache_control": mark}]}]});
        let rewrite = json!({"model": "m", "system": [{"type": "text", "text": "rules"}],
            "messages": [{"role": "user", "content": "summary"}, {"role": "user", "content": "new"}]});
        let bare = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let bytes = |v: &Value| Bytes::from(serde_json::to_vec(v).unwrap());
        let options = WireOptions::default();
        for (client, forwarded) in [(&client, &rewrite), (&client, &client), (&bare, &bare)] {
            let (original, body) = (bytes(client), bytes(forwarded));
            let rewritten = forwarded != client;
            let counters = WireCounters::default();
            let parsed = finish(Api::Anthropic, &options, &counters, sent(&original), as_is(&body), "s");
            let given = finish(
                Api::Anthropic,
                &options,
                &counters,
                Sent {
                    bytes: &original,
                    json: Some(client),
                },
                Forwarded {
                    body: body.clone(),
                    json: rewritten.then(|| forwarded.clone()),
                },
                "s",
            );
            assert_eq!(parsed, given, "{forwarded}");
            if rewritten {
                // A body the round left unwritten is written from its JSON, once.
                let unwritten = finish(
                    Api::Anthropic,
                    &options,
                    &counters,
                    Sent {
                        bytes: &original,
                        json: Some(client),
                    },
                    Forwarded {
                        body: Bytes::new(),
                        json: Some(forwarded.clone()),
                    },
                    "s",
                );
                assert_eq!(unwritten, given, "{forwarded}");
                let chat = finish(
                    Api::OpenAi,
                    &options,
                    &counters,
                    sent(&original),
                    Forwarded {
                        body: Bytes::new(),
                        json: Some(forwarded.clone()),
                    },
                    "s",
                );
                assert_eq!(chat, body);
            }
            let out: Value = serde_json::from_slice(&given).unwrap();
            let marks = llm_compactor::plan::breakpoints::count_breakpoints(&out);
            assert!((1..=4).contains(&marks), "{out}");
            if rewritten {
                assert_eq!(out["messages"][1], client["messages"][2], "the client's mark goes out");
                assert_eq!(out["system"], client["system"]);
            }
        }
    }
}
