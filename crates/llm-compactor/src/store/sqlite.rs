//! [`SqliteStore`]: the embedded default store — one SQLite file, WAL mode.
//!
//! One proxy on one machine needs durability, not a database server: an embedded SQLite
//! file gives it transactions (an append is all-or-nothing and idempotent by envelope
//! id), concurrent readers beside one writer (WAL), and a lease row that several
//! processes on the same file respect. The schema version lives in `PRAGMA user_version`
//! and is migrated forward on open; a file written by a newer build is refused rather
//! than misread.
//!
//! rusqlite is blocking: every call runs on `tokio::task::spawn_blocking` with the one
//! connection behind a mutex, so the async caller never blocks a runtime worker.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::memory::timestamp_of;
use super::{NewEvent, Rewrite, SessionInfo, SessionStore, StoreError, StoredEvent};

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 1;

const MIGRATION_1: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    session TEXT PRIMARY KEY NOT NULL,
    rewrite_len INTEGER,
    rewrite_digest TEXT,
    rewrite_replacement TEXT,
    rewrite_generation INTEGER NOT NULL DEFAULT 0,
    lease_holder TEXT,
    lease_until_ms INTEGER
);
CREATE TABLE IF NOT EXISTS events (
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    kind TEXT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (session, seq),
    UNIQUE (session, id)
);
";

/// Sessions in one SQLite file (created mode 0600 when absent), shared safely by every
/// task of the process and by other processes opening the same file.
#[derive(Clone)]
pub struct SqliteStore {
    path: PathBuf,
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn backend(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("{}: {e}", path.display()))
}

impl SqliteStore {
    /// Opens (creating when absent) the store at `path`: WAL mode, a busy timeout, and
    /// the schema migrated to [`SCHEMA_VERSION`].
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] when the file cannot be opened, [`StoreError::Backend`]
    /// when its schema is newer than this build or a migration fails.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore, StoreError> {
        let path = path.as_ref().to_owned();
        let existed = path.exists();
        let conn = Connection::open(&path).map_err(|e| StoreError::Unavailable(format!("{}: {e}", path.display())))?;
        #[cfg(unix)]
        if !existed {
            use std::os::unix::fs::PermissionsExt;
            // The store holds conversations: readable by its owner only.
            let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
        }
        #[cfg(not(unix))]
        let _ = existed;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(|e| backend(&path, e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| backend(&path, e))?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| backend(&path, e))?;
        migrate(&conn).map_err(|e| backend(&path, e))?;
        Ok(SqliteStore {
            path,
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection on a blocking thread.
    async fn with<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            // A panic inside a closure cannot leave a half-done transaction committed
            // (rusqlite rolls back on drop), so a poisoned lock is safe to reuse.
            let mut conn = conn.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Backend(format!("store task failed: {e}")))?
    }
}

fn migrate(conn: &Connection) -> Result<(), String> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|e| e.to_string())?;
    if version > SCHEMA_VERSION {
        return Err(format!(
            "the store's schema version {version} is newer than this build's ({SCHEMA_VERSION}); upgrade compactor"
        ));
    }
    if version < 1 {
        conn.execute_batch(&format!("BEGIN; {MIGRATION_1} PRAGMA user_version = 1; COMMIT;"))
            .map_err(|e| format!("migration to schema 1 failed: {e}"))?;
    }
    Ok(())
}

fn db(e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::SqliteFailure(code, _)
            if matches!(
                code.code,
                rusqlite::ErrorCode::DatabaseBusy
                    | rusqlite::ErrorCode::DatabaseLocked
                    | rusqlite::ErrorCode::CannotOpen
            ) =>
        {
            StoreError::Unavailable(e.to_string())
        }
        e => StoreError::Backend(e.to_string()),
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn ensure_session(conn: &Connection, session: &str) -> Result<(), StoreError> {
    conn.execute("INSERT OR IGNORE INTO sessions (session) VALUES (?1)", params![session])
        .map_err(db)?;
    Ok(())
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn append(&self, session: &str, events: &[NewEvent]) -> Result<u64, StoreError> {
        let session = session.to_owned();
        let events = events.to_vec();
        self.with(move |conn| {
            let tx = conn.transaction().map_err(db)?;
            ensure_session(&tx, &session)?;
            let mut last: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM events WHERE session = ?1",
                    params![session],
                    |row| row.get(0),
                )
                .map_err(db)?;
            {
                let mut exists = tx
                    .prepare_cached("SELECT 1 FROM events WHERE session = ?1 AND id = ?2")
                    .map_err(db)?;
                let mut insert = tx
                    .prepare_cached("INSERT INTO events (session, seq, id, kind, line) VALUES (?1, ?2, ?3, ?4, ?5)")
                    .map_err(db)?;
                for event in &events {
                    if exists.exists(params![session, event.id]).map_err(db)? {
                        continue;
                    }
                    last += 1;
                    insert
                        .execute(params![session, last, event.id, event.kind, event.line])
                        .map_err(db)?;
                }
            }
            tx.commit().map_err(db)?;
            Ok(u64::try_from(last).unwrap_or(0))
        })
        .await
    }

    async fn events(&self, session: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let session = session.to_owned();
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.with(move |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT seq, id, kind, line FROM events WHERE session = ?1 AND seq > ?2 ORDER BY seq")
                .map_err(db)?;
            let rows = stmt
                .query_map(params![session, after], |row| {
                    Ok(StoredEvent {
                        seq: u64::try_from(row.get::<_, i64>(0)?).unwrap_or(0),
                        id: row.get(1)?,
                        kind: row.get(2)?,
                        line: row.get(3)?,
                    })
                })
                .map_err(db)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(db)
        })
        .await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.with(|conn| {
            let mut stmt = conn
                .prepare(
                    "SELECT e.session, COUNT(*), \
                     (SELECT line FROM events l WHERE l.session = e.session ORDER BY seq DESC LIMIT 1) \
                     FROM events e GROUP BY e.session ORDER BY e.session",
                )
                .map_err(db)?;
            let rows = stmt
                .query_map([], |row| {
                    let line: String = row.get(2)?;
                    Ok(SessionInfo {
                        session: row.get(0)?,
                        events: u64::try_from(row.get::<_, i64>(1)?).unwrap_or(0),
                        last_ts: timestamp_of(&line),
                    })
                })
                .map_err(db)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(db)
        })
        .await
    }

    async fn rewrite(&self, session: &str) -> Result<Option<Rewrite>, StoreError> {
        let session = session.to_owned();
        self.with(move |conn| {
            let row = conn
                .query_row(
                    "SELECT rewrite_len, rewrite_digest, rewrite_replacement, rewrite_generation \
                     FROM sessions WHERE session = ?1",
                    params![session],
                    |row| {
                        Ok((
                            row.get::<_, Option<i64>>(0)?,
                            row.get::<_, Option<String>>(1)?,
                            row.get::<_, Option<String>>(2)?,
                            row.get::<_, i64>(3)?,
                        ))
                    },
                )
                .optional()
                .map_err(db)?;
            Ok(match row {
                Some((Some(len), Some(digest), Some(replacement), generation)) if generation > 0 => Some(Rewrite {
                    original_len: usize::try_from(len).unwrap_or(0),
                    original_digest: digest,
                    replacement,
                    generation: u64::try_from(generation).unwrap_or(0),
                }),
                _ => None,
            })
        })
        .await
    }

    async fn set_rewrite(
        &self,
        session: &str,
        expected_generation: u64,
        rewrite: &Rewrite,
    ) -> Result<bool, StoreError> {
        let session = session.to_owned();
        let rewrite = rewrite.clone();
        self.with(move |conn| {
            let tx = conn.transaction().map_err(db)?;
            ensure_session(&tx, &session)?;
            let changed = tx
                .execute(
                    "UPDATE sessions SET rewrite_len = ?1, rewrite_digest = ?2, rewrite_replacement = ?3, \
                     rewrite_generation = ?4 WHERE session = ?5 AND rewrite_generation = ?6",
                    params![
                        i64::try_from(rewrite.original_len).unwrap_or(i64::MAX),
                        rewrite.original_digest,
                        rewrite.replacement,
                        i64::try_from(rewrite.generation).unwrap_or(i64::MAX),
                        session,
                        i64::try_from(expected_generation).unwrap_or(i64::MAX),
                    ],
                )
                .map_err(db)?;
            tx.commit().map_err(db)?;
            Ok(changed == 1)
        })
        .await
    }

    async fn try_lease(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let session = session.to_owned();
        let holder = holder.to_owned();
        self.with(move |conn| {
            let tx = conn.transaction().map_err(db)?;
            ensure_session(&tx, &session)?;
            let now = now_ms();
            let until = now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
            let changed = tx
                .execute(
                    "UPDATE sessions SET lease_holder = ?1, lease_until_ms = ?2 WHERE session = ?3 AND \
                     (lease_holder IS NULL OR lease_holder = ?1 OR lease_until_ms <= ?4)",
                    params![holder, until, session, now],
                )
                .map_err(db)?;
            tx.commit().map_err(db)?;
            Ok(changed == 1)
        })
        .await
    }

    async fn release_lease(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        let session = session.to_owned();
        let holder = holder.to_owned();
        self.with(move |conn| {
            conn.execute(
                "UPDATE sessions SET lease_holder = NULL, lease_until_ms = NULL WHERE session = ?1 AND lease_holder = ?2",
                params![session, holder],
            )
            .map_err(db)?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str) -> NewEvent {
        NewEvent {
            id: id.to_owned(),
            kind: "message".to_owned(),
            line: format!(
                r#"{{"id":"{id}","payload":{{}},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}}"#
            ),
        }
    }

    #[tokio::test]
    async fn appends_survive_reopen_and_are_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let store = SqliteStore::open(&path).unwrap();
            assert_eq!(store.append("s", &[event("a"), event("b")]).await.unwrap(), 2);
            assert_eq!(store.append("s", &[event("b"), event("c")]).await.unwrap(), 3);
        }
        let store = SqliteStore::open(&path).unwrap();
        let ids: Vec<_> = store
            .events("s", 1)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.seq, e.id))
            .collect();
        assert_eq!(ids, vec![(2, "b".to_owned()), (3, "c".to_owned())]);
        let sessions = store.sessions().await.unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].events, 3);
        assert_eq!(sessions[0].last_ts.as_deref(), Some("2026-01-01T00:00:00.000000Z"));
        let mode: String = store
            .with(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).map_err(db))
            .await
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[tokio::test]
    async fn rewrite_is_compare_and_set_and_lease_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let rewrite = |generation| Rewrite {
            original_len: 3,
            original_digest: "d".into(),
            replacement: "[]".into(),
            generation,
        };
        assert_eq!(store.rewrite("s").await.unwrap(), None);
        assert!(store.set_rewrite("s", 0, &rewrite(1)).await.unwrap());
        assert!(!store.set_rewrite("s", 0, &rewrite(2)).await.unwrap());
        assert!(store.set_rewrite("s", 1, &rewrite(2)).await.unwrap());
        assert_eq!(store.rewrite("s").await.unwrap(), Some(rewrite(2)));
        assert!(store.try_lease("s", "a", Duration::from_secs(60)).await.unwrap());
        assert!(!store.try_lease("s", "b", Duration::from_secs(60)).await.unwrap());
        store.release_lease("s", "a").await.unwrap();
        assert!(store.try_lease("s", "b", Duration::ZERO).await.unwrap());
        assert!(store.try_lease("s", "a", Duration::from_secs(60)).await.unwrap());
    }

    #[tokio::test]
    async fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(err.to_string().contains("newer than this build"), "{err}");
    }
}
