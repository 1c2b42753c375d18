//! [`open_store`]: one place that turns a `--store` URL into a store.
//!
//! The CLI, the proxy and library users name a store the same way (`memory:`,
//! `sqlite:PATH`, `postgres://...`), and a backend that is not compiled in gives a clear
//! error rather than a silent fallback. A URL may carry a password: it never appears in
//! an error.

use std::sync::Arc;

use super::{MemoryStore, SessionStore, StoreError};

/// Opens the store a URL names: `memory:` (this process only), `sqlite:PATH` (an
/// embedded file, feature `sqlite`), or `postgres://user:pw@host/db` (feature `postgres`).
///
/// # Errors
/// An unknown scheme, a backend not compiled into this build, or the backend's own
/// error when opening fails (a PostgreSQL server that cannot be reached is
/// [`StoreError::Unavailable`]). Errors never include the URL's password.
pub async fn open_store(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
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
        return open_postgres(url).await;
    }
    let scheme = url.split_once(':').map_or(url, |(scheme, _)| scheme);
    Err(StoreError::Backend(format!(
        "unknown store {scheme:?} (expected memory:, sqlite:PATH or postgres://user:password@host:port/database)"
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

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Ok(Arc::new(super::PostgresStore::connect(url).await?))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Err(StoreError::Backend(format!(
        "{}: this build has no PostgreSQL store (built without the `postgres` feature)",
        redact(url)
    )))
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

    #[tokio::test]
    async fn memory_opens_and_unknown_schemes_are_named_without_the_password() {
        assert!(open_store("memory:").await.is_ok());
        assert!(open_store("sqlite:").await.is_err());
        let err = open_store("redis://u:hunter2@h/0").await.unwrap_err().to_string();
        assert!(err.contains("\"redis\""), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn redact_hides_the_password() {
        assert_eq!(
            redact("postgres://bob:hunter2@db:5432/x"),
            "postgres://bob:***@db:5432/x"
        );
        assert_eq!(redact("sqlite:/tmp/x.db"), "sqlite:/tmp/x.db");
    }
}
