//! Which session a request belongs to, in tiers: the proxy's own header, then the
//! identities known clients already send, then a header or body field the operator
//! names, and a digest of the conversation's start last.
//!
//! A digest of model, system prompt and first user message is a guess: two IDE windows
//! that open with the same fixed prompt collide, and a client that compacts on its own
//! changes its first message and breaks its session in two. Most agents already say who
//! they are (Claude Code's `x-claude-code-session-id`, Codex's `session_id` header,
//! opencode's `x-opencode-session`, a `prompt_cache_key`, a session inside Anthropic's
//! `metadata.user_id`); the digest is kept only for clients that say nothing. Pure: a
//! function of the headers and the body.

use axum::http::HeaderMap;
use serde_json::Value;

/// The header that names a session explicitly.
pub const SESSION_HEADER: &str = "x-compactor-session";

/// Headers that name the session a subagent's session was started from.
pub const PARENT_HEADERS: &[&str] = &["x-compactor-parent-session", "x-parent-session-id"];

/// The longest identity kept (a longer one is ignored and the next tier decides).
const MAX_LEN: usize = 200;

/// Which tier identified a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// `x-compactor-session`.
    Explicit,
    /// A known client's own session identity ([`KNOWN_CLIENTS`]).
    Client,
    /// `--session-from header:NAME` or `body:PATH`.
    Configured,
    /// The digest of model, system prompt and first user message.
    Digest,
}

impl Tier {
    /// The tier's name, as `compactor proxy sessions` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Explicit => "explicit",
            Tier::Client => "client",
            Tier::Configured => "configured",
            Tier::Digest => "digest",
        }
    }
}

/// Where a session identity is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionFrom {
    /// A request header (case-insensitive).
    Header(String),
    /// A string field of the JSON body, by its dotted path (`metadata.session`).
    Body(Vec<String>),
}

impl std::str::FromStr for SessionFrom {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some(("header", name)) if !name.is_empty() && axum::http::HeaderName::try_from(name).is_ok() => {
                Ok(Self::Header(name.to_ascii_lowercase()))
            }
            Some(("body", path)) if !path.is_empty() && path.split('.').all(|p| !p.is_empty()) => {
                Ok(Self::Body(path.split('.').map(str::to_owned).collect()))
            }
            _ => Err(format!(
                "`{s}`: expected header:NAME or body:PATH (a dotted path to a string field)"
            )),
        }
    }
}

impl std::fmt::Display for SessionFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Header(name) => write!(f, "header:{name}"),
            Self::Body(path) => write!(f, "body:{}", path.join(".")),
        }
    }
}

/// A client identity the proxy knows.
#[non_exhaustive]
pub struct KnownClient {
    /// The client, in words.
    pub client: &'static str,
    /// Where it sends its session identity.
    pub from: KnownSource,
    /// The prefix of the session key (keeps two clients' identities apart).
    pub prefix: &'static str,
}

/// Where a known client sends its identity.
pub enum KnownSource {
    /// A header.
    Header(&'static str),
    /// A top-level string field of the body.
    Field(&'static str),
    /// Anthropic's `metadata.user_id` when it carries `_session_<id>` (Claude Code's
    /// `user_<hash>_account_<uuid>_session_<uuid>`).
    UserIdSession,
}

/// The known client identities, in the order they are tried.
pub const KNOWN_CLIENTS: &[KnownClient] = &[
    KnownClient {
        client: "Claude Code",
        from: KnownSource::Header("x-claude-code-session-id"),
        prefix: "claude-code",
    },
    KnownClient {
        client: "Codex",
        from: KnownSource::Header("session_id"),
        prefix: "codex",
    },
    KnownClient {
        client: "opencode",
        from: KnownSource::Header("x-opencode-session"),
        prefix: "opencode",
    },
    KnownClient {
        client: "Anthropic metadata (Claude Code)",
        from: KnownSource::UserIdSession,
        prefix: "claude-code",
    },
    KnownClient {
        client: "OpenAI prompt_cache_key",
        from: KnownSource::Field("prompt_cache_key"),
        prefix: "cache-key",
    },
];

/// Who a request is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The session key.
    pub key: String,
    /// The tier that decided.
    pub tier: Tier,
    /// Where the identity was read (`header:x-claude-code-session-id`, `digest`).
    pub source: String,
    /// The parent session's key, when the request names one.
    pub parent: Option<String>,
}

/// Writes `identity`'s tier, source and parent into a session's meta record (what
/// `compactor proxy sessions` reads back).
pub fn record(identity: &Identity, extra: &mut serde_json::Map<String, Value>) {
    extra.insert("identity_tier".into(), Value::String(identity.tier.name().to_owned()));
    extra.insert("identity_source".into(), Value::String(identity.source.clone()));
    if let Some(parent) = &identity.parent {
        extra.insert("parent_session".into(), Value::String(parent.clone()));
    }
}

/// How a session was identified, as its first (meta) transcript line recorded it: what
/// `compactor proxy sessions` and the inspector show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordedIdentity {
    /// `explicit`, `client`, `configured` or `digest` (empty for a session recorded before
    /// the proxy wrote it).
    pub tier: String,
    /// Where the identity was read (`header:NAME`, `body:PATH`, `digest`).
    pub source: String,
    /// The parent session, when the client named one.
    pub parent: Option<String>,
}

impl RecordedIdentity {
    /// An identity of `tier`, read from `source`, under `parent` if any.
    pub fn new(tier: impl Into<String>, source: impl Into<String>, parent: Option<String>) -> RecordedIdentity {
        RecordedIdentity {
            tier: tier.into(),
            source: source.into(),
            parent,
        }
    }

    /// Reads the identity a session's first transcript line carries; the default when it
    /// carries none (or is not JSON).
    pub fn from_meta_line(line: &str) -> RecordedIdentity {
        let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let field = |name: &str| {
            [&value["payload"]["extra"], &value["extra"], &value["payload"]]
                .iter()
                .find_map(|v| v.get(name).and_then(Value::as_str))
                .map(str::to_owned)
        };
        RecordedIdentity {
            tier: field("identity_tier").unwrap_or_default(),
            source: field("identity_source").unwrap_or_default(),
            parent: field("parent_session"),
        }
    }

    /// In words, for a person: how the session got its key (`key`, for sessions recorded
    /// before tiers were, and for a transcript continued after the agent edited its
    /// history).
    pub fn describe(&self, key: &str) -> String {
        let how = match self.tier.as_str() {
            "explicit" => format!("named by the client ({})", self.source),
            "client" => format!("the session id the client sends ({})", self.source),
            "configured" => format!("read where --session-from says ({})", self.source),
            "digest" => "derived from model, system prompt and first message".to_owned(),
            _ if key.starts_with("auto-") => "derived from model, system prompt and first message".to_owned(),
            _ => "named by the client".to_owned(),
        };
        if key.contains('~') {
            format!("{how}; a continued transcript (the agent edited its history)")
        } else {
            how
        }
    }
}

fn usable(value: &str) -> Option<&str> {
    let value = value.trim();
    (!value.is_empty() && value.len() <= MAX_LEN && !value.chars().any(char::is_control)).then_some(value)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).and_then(usable)
}

fn body_path<'a>(body: &'a Value, path: &[String]) -> Option<&'a str> {
    path.iter()
        .try_fold(body, |v, key| v.get(key))
        .and_then(Value::as_str)
        .and_then(usable)
}

fn user_id_session(body: &Value) -> Option<&str> {
    let user = body.get("metadata")?.get("user_id")?.as_str()?;
    let (_, session) = user.rsplit_once("_session_")?;
    usable(session)
}

/// The session of a request with `headers` and JSON `body`: the first tier that answers,
/// `derived_key` (the digest) when none does.
#[cfg(test)]
pub fn identify(headers: &HeaderMap, body: &Value, configured: &[SessionFrom], derived_key: &str) -> Identity {
    identify_with(headers, body, configured, || derived_key.to_owned())
}

/// The session of a request with `headers` and JSON `body`: the first tier that answers,
/// else the digest `derived_key` works out, called only then (it hashes the system prompt
/// and the first user message: most requests never need it).
pub fn identify_with(
    headers: &HeaderMap,
    body: &Value,
    configured: &[SessionFrom],
    derived_key: impl FnOnce() -> String,
) -> Identity {
    let parent = PARENT_HEADERS
        .iter()
        .find_map(|name| header(headers, name))
        .map(str::to_owned);
    let found = |key: String, tier, source: String| Identity {
        key,
        tier,
        source,
        parent: parent.clone(),
    };
    if let Some(key) = header(headers, SESSION_HEADER) {
        return found(key.to_owned(), Tier::Explicit, format!("header:{SESSION_HEADER}"));
    }
    for known in KNOWN_CLIENTS {
        let (value, source) = match known.from {
            KnownSource::Header(name) => (header(headers, name), format!("header:{name}")),
            KnownSource::Field(name) => (
                body.get(name).and_then(Value::as_str).and_then(usable),
                format!("body:{name}"),
            ),
            KnownSource::UserIdSession => (user_id_session(body), "body:metadata.user_id".to_owned()),
        };
        if let Some(value) = value {
            return found(format!("{}-{value}", known.prefix), Tier::Client, source);
        }
    }
    for from in configured {
        let value = match from {
            SessionFrom::Header(name) => header(headers, name),
            SessionFrom::Body(path) => body_path(body, path),
        };
        if let Some(value) = value {
            return found(value.to_owned(), Tier::Configured, from.to_string());
        }
    }
    found(derived_key(), Tier::Digest, "digest".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(
                axum::http::HeaderName::try_from(*k).unwrap(),
                axum::http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn tiers_answer_in_order() {
        let body =
            json!({"prompt_cache_key":"pck","metadata":{"user_id":"user_ab_account_cd_session_ef"},"x":{"s":"mine"}});
        let configured = vec!["body:x.s".parse().unwrap()];
        let id = identify(
            &headers(&[(SESSION_HEADER, "given"), ("x-claude-code-session-id", "cc")]),
            &body,
            &configured,
            "auto-1",
        );
        assert_eq!((id.key.as_str(), id.tier), ("given", Tier::Explicit));
        let id = identify(
            &headers(&[("x-claude-code-session-id", "cc")]),
            &body,
            &configured,
            "auto-1",
        );
        assert_eq!((id.key.as_str(), id.tier), ("claude-code-cc", Tier::Client));
        let id = identify(&headers(&[("session_id", "thread")]), &body, &configured, "auto-1");
        assert_eq!(id.key, "codex-thread");
        let id = identify(&HeaderMap::new(), &body, &configured, "auto-1");
        assert_eq!(
            (id.key.as_str(), id.source.as_str()),
            ("claude-code-ef", "body:metadata.user_id")
        );
        let id = identify(
            &HeaderMap::new(),
            &json!({"prompt_cache_key":"pck"}),
            &configured,
            "auto-1",
        );
        assert_eq!(id.key, "cache-key-pck");
        let id = identify(&HeaderMap::new(), &json!({"x":{"s":"mine"}}), &configured, "auto-1");
        assert_eq!(
            (id.key.as_str(), id.tier, id.source.as_str()),
            ("mine", Tier::Configured, "body:x.s")
        );
        let id = identify(&headers(&[(SESSION_HEADER, "  ")]), &json!({}), &configured, "auto-1");
        assert_eq!((id.key.as_str(), id.tier), ("auto-1", Tier::Digest));
    }

    #[test]
    fn a_parent_is_recorded_and_flags_parse() {
        let id = identify(
            &headers(&[
                ("x-opencode-session", "child"),
                ("x-parent-session-id", "opencode-root"),
            ]),
            &json!({}),
            &[],
            "auto-1",
        );
        assert_eq!(id.key, "opencode-child");
        assert_eq!(id.parent.as_deref(), Some("opencode-root"));
        assert_eq!("header:X-Session".parse(), Ok(SessionFrom::Header("x-session".into())));
        assert!("body:".parse::<SessionFrom>().is_err());
        assert!("cookie:x".parse::<SessionFrom>().is_err());
        let long = "x".repeat(MAX_LEN + 1);
        assert_eq!(
            identify(&headers(&[(SESSION_HEADER, &long)]), &json!({}), &[], "d").tier,
            Tier::Digest
        );
    }
}
