//! Mapping driver and pool errors to [`StoreError`], and keeping the password out of them.
//!
//! A connection string carries a credential; an error message that quotes it would leak
//! it into logs and HTTP bodies. Every message that leaves this module went through
//! [`Redactor::clean`], which removes the password (and the whole URL) wherever it
//! appears, and errors are classified so that callers can tell a transient outage
//! ([`StoreError::Unavailable`]: retry later) from a real failure.

use deadpool_postgres::PoolError;

use crate::store::StoreError;

/// Removes secrets of one connection string from messages.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    secrets: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Redactor(..)")
    }
}

impl Redactor {
    /// A redactor for `url`: its password (raw and percent-decoded) and the URL itself.
    pub(crate) fn new(url: &str, password: Option<&[u8]>) -> Self {
        let mut secrets = vec![url.to_owned()];
        if let Some(password) = password.filter(|p| !p.is_empty()) {
            secrets.push(String::from_utf8_lossy(password).into_owned());
        }
        if let Some(raw) = raw_password(url) {
            secrets.push(raw);
        }
        secrets.retain(|s| !s.is_empty());
        // Longest first, so that the URL is replaced whole before its password is.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// `message` with every secret replaced by `***`.
    pub(crate) fn clean(&self, message: &str) -> String {
        let mut out = message.to_owned();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }
}

/// The password part of `scheme://user:password@host/...`, as written.
fn raw_password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    Some(userinfo.split_once(':')?.1.to_owned())
}

/// `url` with its password replaced by `***` (for display and `Debug`).
pub fn redact_url(url: &str) -> String {
    match raw_password(url) {
        Some(password) if !password.is_empty() => {
            let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            // The last '@' of the authority ends the user info (a password may hold '@').
            let at = rest[..authority_end].rfind('@').unwrap_or(0);
            let user_end = rest[..at].find(':').unwrap_or(at);
            format!("{scheme}://{}:***{}", &rest[..user_end], &rest[at..])
        }
        _ => url.to_owned(),
    }
}

/// SQLSTATE classes and codes that mean "the server cannot serve now" rather than "the
/// request is wrong": connection exceptions (08), operator intervention (57P01..57P03:
/// shutdown, crash shutdown, starting up), and too many connections (53300).
fn transient_sqlstate(code: &str) -> bool {
    code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

/// A driver error as a [`StoreError`].
pub(crate) fn from_pg(redactor: &Redactor, doing: &str, error: &tokio_postgres::Error) -> StoreError {
    if let Some(db) = error.as_db_error() {
        let message = redactor.clean(&format!("{doing}: {} ({})", db.message(), db.code().code()));
        if transient_sqlstate(db.code().code()) {
            return StoreError::Unavailable(message);
        }
        return StoreError::Backend(message);
    }
    let mut message = format!("{doing}: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    // Without a server error the failure is the connection's (refused, reset, closed,
    // timed out): transient by nature.
    StoreError::Unavailable(redactor.clean(&message))
}

/// A pool error as a [`StoreError`].
pub(crate) fn from_pool(redactor: &Redactor, error: &PoolError) -> StoreError {
    match error {
        PoolError::Backend(e) => from_pg(redactor, "connecting to PostgreSQL", e),
        PoolError::Timeout(kind) => StoreError::Unavailable(format!("timed out waiting for a connection ({kind:?})")),
        other => StoreError::Unavailable(redactor.clean(&format!("connection pool: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_removed_from_urls_and_messages() {
        let url = "postgres://agent:s3cr%40t@db.internal:5432/sessions";
        assert_eq!(redact_url(url), "postgres://agent:***@db.internal:5432/sessions");
        assert_eq!(redact_url("postgres://agent@db/x"), "postgres://agent@db/x");
        assert_eq!(redact_url("postgres://u:p@ss@db/x?a=@"), "postgres://u:***@db/x?a=@");
        assert_eq!(redact_url("host=/tmp user=x"), "host=/tmp user=x");
        let redactor = Redactor::new(url, Some(b"s3cr@t"));
        let cleaned = redactor.clean(&format!("failed for {url}; password s3cr@t; raw s3cr%40t"));
        assert!(!cleaned.contains("s3cr"), "{cleaned}");
    }

    #[test]
    fn transient_codes_are_recognised() {
        assert!(transient_sqlstate("08006"));
        assert!(transient_sqlstate("57P01"));
        assert!(!transient_sqlstate("23505"));
        assert!(!transient_sqlstate("42P01"));
    }
}
