//! [`open_store`]: one place that turns a `--store` URL into a store.
//!
//! The CLI, the proxy and library users name a store the same way (`memory:`,
//! `sqlite:PATH`, `postgres://...`), and a backend that is not compiled in gives a clear
//! error rather than a silent fallback. A URL may carry a password: it never appears in
//! an error.

use std::sync::Arc;

use super::{MemoryStore, SessionStore, StoreError};

/// Opens the store a URL names: `memory:` (this process only), `sqlite:PATH` (an
/// embedded file, feature `sqlite`), or `postgres://...` (feature `postgres`).
///
/// # Errors
/// An unknown scheme, a backend not compiled into this build, or the backend's own
/// error when opening fails. Errors never include the URL's password.
pub fn open_store(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    if url == "memory:" || url == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(StoreError::Backend("sqlite: needs a path (sqlite:PATH)".to_owned()));
        }
        return open_sqlite(path);
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Err(StoreError::Backend(format!(
            "{}: this build has no PostgreSQL store (built without the `postgres` feature)",
            redact(url)
        )));
    }
    Err(StoreError::Backend(format!(
        "unknown store {:?} (expected memory:, sqlite:PATH or postgres://...)",
        redact(url)
    )))
}

#[cfg(feature = "sqlite")]
fn open_sqlite(path: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Ok(Arc::new(super::SqliteStore::open(path)?))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_path: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Err(StoreError::Backend(
        "this build has no SQLite store (built without the `sqlite` feature)".to_owned(),
    ))
}

/// The URL with any `user:password@` reduced to `user:***@`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_without_the_feature_is_a_clear_error_without_the_password() {
        let err = open_store("postgres://bob:hunter2@db.example:5432/x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no PostgreSQL store"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("bob:***@db.example"), "{err}");
        let err = open_store("mysql://u:pw@h/x").unwrap_err().to_string();
        assert!(!err.contains("pw@"), "{err}");
    }

    #[test]
    fn memory_opens() {
        assert!(open_store("memory:").is_ok());
        assert!(open_store("sqlite:").is_err());
    }
}
