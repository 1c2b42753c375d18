//! The seal on a compaction item the proxy wrote: what makes its `encrypted_content`
//! resolvable by this proxy only, and only for the client it was written for.
//!
//! A served compaction item carries the summary it stands for (the input item the pass
//! wrote, as JSON), so that resolving it needs no lookup and survives the session's
//! eviction from memory. What must not happen is a client getting content it was never
//! given (another client's summary) or smuggling text of its own past the proxy as if the
//! proxy had written it. So the content is bound, with HMAC-SHA256 under the proxy's
//! key, to its owner — a digest of the credential the compaction request presented
//! (`Authorization`, `x-api-key` or `api-key`; empty for none) — and any change to
//! either fails the check in constant time. The key is the operator's
//! (`--native-compaction-key-env`), shared by every instance behind one address; without
//! one it is drawn at start, and items written before a restart are refused (the client
//! gets a 400 naming the item, never a wrong conversation).
//!
//! Format: `llmc1.` + base64url(payload) + `.` + base64url(tag), payload the JSON
//! `{"o": owner, "i": item}` (an item `/v1/responses/compact` put in place of the
//! summary message: it stands for that one item) or `{"o": owner, "w": [items]}` (an
//! item server-side compaction emitted: it stands for the whole conversation before it,
//! as the upstream saw it, and names the session it belongs to: `"s": key`; see
//! [`Opened`]).

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The prefix of every `encrypted_content` this proxy writes: a compaction item without
/// it is the provider's own and is forwarded untouched.
pub(crate) const SEAL_PREFIX: &str = "llmc1.";

/// What the MAC covers beside the payload: the format's name, so that a tag made for
/// anything else under the same key never verifies here.
const DOMAIN: &[u8] = b"llm-compactor native compaction v1\0";

/// The proxy's compaction key.
#[derive(Clone)]
pub(crate) struct Sealer {
    key: Vec<u8>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

/// What a sealed item stands for, once opened.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Opened {
    /// One input item: the summary message a served `/v1/responses/compact` put the
    /// compaction item in place of (the items around it are the client's).
    Item(Value),
    /// The whole conversation up to the compaction item, as the upstream saw it when
    /// server-side compaction emitted it: the items before it in a later input are
    /// dropped (OpenAI's documented meaning of a compaction item in the output stream).
    Window {
        /// The conversation.
        items: Vec<Value>,
        /// The key of the session it belongs to (a request identified by nothing but
        /// the digest of its first messages, which the compaction changed, stays in it).
        session: String,
    },
}

/// Why a sealed item was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not in the format (truncated, not base64, not JSON).
    Malformed,
    /// The tag does not verify: altered, forged, written under another key (another
    /// proxy, or this one before a restart without `--native-compaction-key-env`).
    Forged,
    /// Sealed for another client's credential.
    Foreign,
}

impl Refused {
    /// In words, for the client's 400.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Refused::Malformed => "is not a compaction item this proxy wrote (malformed encrypted_content)",
            Refused::Forged => {
                "was altered, or was not sealed by this proxy (or by it before a restart: set --native-compaction-key-env to keep items valid across restarts)"
            }
            Refused::Foreign => "was written for another client's credential",
        }
    }
}

impl Sealer {
    /// A sealer under `key` (at least 16 bytes; the caller checks).
    pub(crate) fn new(key: Vec<u8>) -> Self {
        Sealer { key }
    }

    /// A sealer under a key drawn now (items do not outlive the process).
    pub(crate) fn random() -> Self {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        Sealer { key }
    }

    fn mac(&self) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(DOMAIN);
        mac
    }

    /// The `encrypted_content` of a compaction item standing for `item`, bound to `owner`.
    pub(crate) fn seal(&self, owner: &str, item: &Value) -> String {
        self.seal_payload(&json!({"o": owner, "i": item}))
    }

    /// The `encrypted_content` of a compaction item standing for the conversation
    /// `window` (every item before it: [`Opened::Window`]) of the session `session`,
    /// bound to `owner`.
    pub(crate) fn seal_window(&self, owner: &str, window: &[Value], session: &str) -> String {
        self.seal_payload(&json!({"o": owner, "w": window, "s": session}))
    }

    fn seal_payload(&self, payload: &Value) -> String {
        let payload = payload.to_string();
        let mut mac = self.mac();
        mac.update(payload.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!(
            "{SEAL_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(payload.as_bytes()),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// What `sealed` stands for, when this proxy sealed it for `owner`.
    pub(crate) fn open(&self, owner: &str, sealed: &str) -> Result<Opened, Refused> {
        let rest = sealed.strip_prefix(SEAL_PREFIX).ok_or(Refused::Malformed)?;
        let (payload, tag) = rest.split_once('.').ok_or(Refused::Malformed)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| Refused::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refused::Malformed)?;
        let mut mac = self.mac();
        mac.update(&payload);
        // `verify_slice` compares in constant time.
        mac.verify_slice(&tag).map_err(|_| Refused::Forged)?;
        let mut value: Value = serde_json::from_slice(&payload).map_err(|_| Refused::Malformed)?;
        if value.get("o").and_then(Value::as_str) != Some(owner) {
            return Err(Refused::Foreign);
        }
        let session = value.get("s").and_then(Value::as_str).map(str::to_owned);
        match (
            value.get_mut("i").map(Value::take),
            value.get_mut("w").map(Value::take),
            session,
        ) {
            (Some(item @ Value::Object(_)), None, None) => Ok(Opened::Item(item)),
            (None, Some(Value::Array(items)), Some(session)) if items.iter().all(Value::is_object) => {
                Ok(Opened::Window { items, session })
            }
            _ => Err(Refused::Malformed),
        }
    }
}

/// The owner a request's credential makes: the first 16 bytes of the SHA-256 of its
/// `Authorization`, `x-api-key` or `api-key` header, in hex; empty when it has none. The
/// credential itself is never kept.
pub(crate) fn owner_of(headers: &HeaderMap) -> String {
    ["authorization", "x-api-key", "api-key"]
        .iter()
        .find_map(|name| headers.get(*name))
        .map(|value| hex::encode(&Sha256::digest(value.as_bytes())[..16]))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_opens_for_its_owner_only_and_never_when_altered() {
        let sealer = Sealer::new(b"0123456789abcdef0123456789abcdef".to_vec());
        let item = json!({"type": "message", "role": "user", "content": "summary"});
        let sealed = sealer.seal("alice", &item);
        assert!(sealed.starts_with(SEAL_PREFIX));
        assert_eq!(sealer.open("alice", &sealed), Ok(Opened::Item(item.clone())));
        let window = vec![item.clone(), json!({"role": "assistant", "content": "ok"})];
        let sealed_window = sealer.seal_window("alice", &window, "s1");
        let opened = Opened::Window {
            items: window,
            session: "s1".to_owned(),
        };
        assert_eq!(sealer.open("alice", &sealed_window), Ok(opened));
        assert_eq!(sealer.open("bob", &sealed_window), Err(Refused::Foreign));
        assert_eq!(sealer.open("bob", &sealed), Err(Refused::Foreign));
        // Every single-character change is refused.
        for i in SEAL_PREFIX.len()..sealed.len() {
            let mut bytes = sealed.clone().into_bytes();
            bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(bytes).unwrap();
            if altered != sealed {
                assert!(sealer.open("alice", &altered).is_err(), "altered at {i} opened");
            }
        }
        // Another key (another proxy, or this one after a restart) refuses it.
        assert_eq!(Sealer::random().open("alice", &sealed), Err(Refused::Forged));
        assert_eq!(sealer.open("alice", "llmc1.x"), Err(Refused::Malformed));
        assert_eq!(sealer.open("alice", "opaque-openai-blob"), Err(Refused::Malformed));
    }

    #[test]
    fn owners_differ_by_credential_and_keep_none_of_it() {
        let mut a = HeaderMap::new();
        a.insert("authorization", "Bearer sk-a".parse().unwrap());
        let mut b = HeaderMap::new();
        b.insert("x-api-key", "sk-b".parse().unwrap());
        assert_ne!(owner_of(&a), owner_of(&b));
        assert_eq!(owner_of(&HeaderMap::new()), "");
        assert!(!owner_of(&a).contains("sk-a"));
        assert_eq!(owner_of(&a).len(), 32);
    }
}
