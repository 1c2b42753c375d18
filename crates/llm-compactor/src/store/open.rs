//! [`open_store`]: a store from a URL, so that every command and the proxy accept the
//! same `--store` values.
//!
//! `memory:` is a [`MemoryStore`]; `postgres://…` (or `postgresql://…`) a
//! [`super::PostgresStore`] when built with the `postgres` feature.

use std::sync::Arc;

use super::{MemoryStore, SessionStore, StoreError};

/// Opens the store a URL names (`memory:`, `postgres://user:pw@host/db`).
///
/// # Errors
/// An unknown scheme, a scheme this build lacks the feature for, or the store's own
/// open error (a PostgreSQL server that cannot be reached is
/// [`StoreError::Unavailable`]). Never carries the URL's password.
pub async fn open_store(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    if url == "memory:" || url == "memory" {
        return Ok(Arc::new(MemoryStore::new()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return open_postgres(url).await;
    }
    let scheme = url.split_once(':').map_or(url, |(scheme, _)| scheme);
    Err(StoreError::Backend(format!(
        "unknown store {scheme:?}: expected memory: or postgres://user:password@host:port/database"
    )))
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Ok(Arc::new(super::PostgresStore::connect(url).await?))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str) -> Result<Arc<dyn SessionStore>, StoreError> {
    Err(StoreError::Backend(
        "this build has no PostgreSQL store (build llm-compactor with the `postgres` feature)".to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_opens_and_unknown_schemes_are_named() {
        assert!(open_store("memory:").await.is_ok());
        let err = open_store("redis://u:hunter2@h/0").await.unwrap_err().to_string();
        assert!(err.contains("\"redis\""), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}
