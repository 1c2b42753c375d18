//! The inspector's token: what `/ui` asks for before it shows a conversation.
//!
//! The inspector shows every session's content. On loopback that is the operator's own
//! machine; on any other address (a container listens on `0.0.0.0`) it would be every
//! conversation served to the network, so there the proxy refuses to start without a
//! token (see [`crate::serve`]). The token is kept only as its SHA-256 digest, and a
//! presented one is compared digest to digest in constant time, so neither its length
//! nor a prefix leaks through timing. It is never logged.

use axum::http::{HeaderMap, header};
use base64::Engine;
use sha2::{Digest, Sha256};

/// The digest of the configured token.
#[derive(Clone)]
pub(crate) struct UiToken([u8; 32]);

impl std::fmt::Debug for UiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UiToken(..)")
    }
}

impl UiToken {
    pub(crate) fn new(token: &str) -> Self {
        UiToken(Sha256::digest(token.as_bytes()).into())
    }

    /// True when `headers` present the token: `Authorization: Bearer TOKEN`, or HTTP
    /// Basic with TOKEN as the password (what a browser's login prompt sends).
    pub(crate) fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let presented = if let Some(token) = value.strip_prefix("Bearer ") {
            token.trim().to_owned()
        } else if let Some(encoded) = value.strip_prefix("Basic ") {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) else {
                return false;
            };
            let Ok(text) = String::from_utf8(decoded) else {
                return false;
            };
            match text.split_once(':') {
                Some((_, password)) => password.to_owned(),
                None => return false,
            }
        } else {
            return false;
        };
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Constant time over the fixed-size digests.
        digest.iter().zip(&self.0).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        headers
    }

    #[test]
    fn only_the_token_is_admitted() {
        let token = UiToken::new("s3cret");
        assert!(token.admits(&with("Bearer s3cret")));
        let basic = base64::engine::general_purpose::STANDARD.encode("anyone:s3cret");
        assert!(token.admits(&with(&format!("Basic {basic}"))));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Bearer ",
            "s3cret",
            "Basic !!",
            "Token s3cret",
        ] {
            assert!(!token.admits(&with(wrong)), "{wrong}");
        }
        assert!(!token.admits(&HeaderMap::new()));
        assert!(!format!("{token:?}").contains("s3cret"));
    }
}
