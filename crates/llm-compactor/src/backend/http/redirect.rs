//! The redirect policy of the HTTP summarizer: never carry a credential to another origin.
//!
//! reqwest strips `Authorization` and cookies when a redirect changes host, but not a
//! custom auth header such as Anthropic's `x-api-key`, nor any header an embedder added
//! with [`super::HttpBackendBuilder::header`]. A summarizer has no business being
//! redirected to another server anyway (a moved endpoint is a configuration change), so
//! the policy is the strictest useful one: a redirect within the same origin (scheme,
//! host and port) is followed, with its headers, at most [`MAX_REDIRECTS`] times; a
//! redirect to any other origin is not followed at all and fails the request with a
//! [`CrossOriginRedirect`] error that names both origins (never a path or query, which
//! may carry tokens), so the key is never sent there.

use std::fmt;

/// Most same-origin redirects followed for one request.
pub const MAX_REDIRECTS: usize = 5;

/// The request was redirected to another origin, and the redirect was not followed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CrossOriginRedirect {
    /// The origin the request was sent to (`scheme://host:port`).
    pub from: String,
    /// The origin the server redirected to.
    pub to: String,
}

impl fmt::Display for CrossOriginRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the server redirected from {} to another origin, {}; not followed, so no credential is sent \
             there (point the base URL at the final address)",
            self.from, self.to
        )
    }
}

impl std::error::Error for CrossOriginRedirect {}

/// Same-origin redirects are followed (at most [`MAX_REDIRECTS`]); any other is an error.
pub(super) fn policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first().cloned();
        let Some(first) = first else {
            return attempt.stop();
        };
        let (from, to) = (first.origin(), attempt.url().origin());
        if from != to {
            let error = CrossOriginRedirect {
                from: from.ascii_serialization(),
                to: to.ascii_serialization(),
            };
            return attempt.error(error);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}
