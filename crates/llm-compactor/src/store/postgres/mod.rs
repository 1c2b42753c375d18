//! [`PostgresStore`]: sessions in a shared PostgreSQL database, for several proxy
//! instances or agent workers that must see the same sessions.
//!
//! Why this shape:
//! - **Driver**: `tokio-postgres` with a `deadpool-postgres` pool — plain SQL with
//!   prepared statements, no compile-time database (sqlx's checked queries need one at
//!   build time), and a pool that replaces broken connections by itself, so a database
//!   restart shows as [`StoreError::Unavailable`] for a while and then heals without
//!   recreating the store.
//! - **Appends**: one round trip per call, to a server-side function (migration 0001)
//!   that runs atomically. It first upserts the session row, which locks it, so sequence
//!   numbers are assigned by one writer at a time per session (gap-free, unique) while
//!   different sessions append in parallel. Ids already in the session are skipped, so a
//!   retry after a lost reply stores nothing twice; the `UNIQUE (session, id)`
//!   constraint backs that up.
//! - **Exact bytes**: the envelope line is kept as `TEXT`, so an export is byte-identical
//!   to the JSONL file; a `JSONB` copy serves queries.
//! - **Lease**: a row with holder and expiry on the *server's* clock, taken by one
//!   atomic upsert; a crashed holder's lease expires.
//! - **Secrets**: the URL's password never appears in an error or a log line.

mod errors;
mod migrate;

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;

pub use errors::redact_url;
use errors::{Redactor, from_pg, from_pool};

use super::{NewEvent, Rewrite, SessionInfo, SessionStore, StoreError, StoredEvent};

/// How a [`PostgresStore`] connects: pool size and timeouts.
#[derive(Clone)]
pub struct PostgresStoreBuilder {
    url: String,
    max_connections: usize,
    connect_timeout: Duration,
    wait_timeout: Duration,
    application_name: String,
}

impl std::fmt::Debug for PostgresStoreBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStoreBuilder")
            .field("url", &redact_url(&self.url))
            .field("max_connections", &self.max_connections)
            .field("connect_timeout", &self.connect_timeout)
            .field("wait_timeout", &self.wait_timeout)
            .finish()
    }
}

impl PostgresStoreBuilder {
    /// The most connections the pool opens (default 16).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// How long opening one connection may take before the call fails as
    /// [`StoreError::Unavailable`] (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long a call waits for a free pooled connection (default 10 s).
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// The `application_name` the server shows for these connections.
    pub fn application_name(mut self, name: impl Into<String>) -> Self {
        self.application_name = name.into();
        self
    }

    /// Connects, and applies the schema migrations the database lacks.
    ///
    /// # Errors
    /// A malformed URL or a failed migration ([`StoreError::Backend`]); the server cannot
    /// be reached ([`StoreError::Unavailable`]). No message contains the password.
    pub async fn connect(self) -> Result<PostgresStore, StoreError> {
        let parsed = tokio_postgres::Config::from_str(&self.url);
        let redactor = Redactor::new(&self.url, parsed.as_ref().ok().and_then(|c| c.get_password()));
        let mut config = parsed.map_err(|e| {
            StoreError::Backend(redactor.clean(&format!("bad PostgreSQL URL {}: {e}", redact_url(&self.url))))
        })?;
        config.connect_timeout(self.connect_timeout);
        config.keepalives(true);
        if config.get_application_name().is_none() {
            config.application_name(&self.application_name);
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(self.max_connections)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(self.wait_timeout))
            .create_timeout(Some(self.connect_timeout))
            .recycle_timeout(Some(self.connect_timeout))
            .build()
            .map_err(|e| StoreError::Backend(redactor.clean(&format!("building the connection pool: {e}"))))?;
        let store = PostgresStore {
            pool,
            redactor,
            display_url: redact_url(&self.url),
        };
        let mut client = store.client().await?;
        migrate::migrate(&mut client, &store.redactor).await?;
        Ok(store)
    }
}

/// A [`SessionStore`] on a PostgreSQL database (see the module docs for the design).
pub struct PostgresStore {
    pool: Pool,
    redactor: Redactor,
    display_url: String,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.display_url)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// A builder for the database at `url` (`postgres://user:password@host:port/db`, or
    /// the key=value form libpq accepts).
    pub fn builder(url: impl Into<String>) -> PostgresStoreBuilder {
        PostgresStoreBuilder {
            url: url.into(),
            max_connections: 16,
            connect_timeout: Duration::from_secs(5),
            wait_timeout: Duration::from_secs(10),
            application_name: "llm-compactor".to_owned(),
        }
    }

    /// Connects to `url` with the default pool settings and applies migrations.
    ///
    /// # Errors
    /// As [`PostgresStoreBuilder::connect`].
    pub async fn connect(url: impl Into<String>) -> Result<PostgresStore, StoreError> {
        PostgresStore::builder(url).connect().await
    }

    /// The URL with its password replaced by `***`.
    pub fn display_url(&self) -> &str {
        &self.display_url
    }

    /// The schema version of this build's migrations.
    pub fn schema_version() -> i32 {
        migrate::MIGRATIONS.last().map_or(0, |m| m.0)
    }

    async fn client(&self) -> Result<Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| self.named(from_pool(&self.redactor, &e)))
    }

    fn pg(&self, doing: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        move |e| self.named(from_pg(&self.redactor, doing, &e))
    }

    /// The error with the store it is about (the URL without its password) in front, so
    /// that an operator reading a 503 or a log line knows which database failed.
    fn named(&self, error: StoreError) -> StoreError {
        match error {
            StoreError::Unavailable(m) => StoreError::Unavailable(format!("PostgreSQL {}: {m}", self.display_url)),
            StoreError::Backend(m) => StoreError::Backend(format!("PostgreSQL {}: {m}", self.display_url)),
            other => other,
        }
    }
}

/// What the database gets besides the line: its `ts`, and whether the JSONB copy can
/// be made.
struct Checked {
    ts: Option<String>,
    jsonb: bool,
}

/// Checks an event before it is stored: its line must be one JSON object on one line.
fn validate(session: &str, event: &NewEvent) -> Result<Checked, StoreError> {
    let reject = |reason: String| StoreError::Rejected {
        session: session.to_owned(),
        reason,
    };
    if event.id.is_empty() {
        return Err(reject("an event without an id".to_owned()));
    }
    if event.line.contains('\n') {
        return Err(reject(format!("event {:?}: the line holds a newline", event.id)));
    }
    let ts = match serde_json::from_str::<serde_json::Value>(&event.line) {
        Ok(serde_json::Value::Object(map)) => map.get("ts").and_then(|v| v.as_str()).map(str::to_owned),
        Ok(_) => return Err(reject(format!("event {:?}: the line is not a JSON object", event.id))),
        Err(e) => return Err(reject(format!("event {:?}: the line is not JSON: {e}", event.id))),
    };
    // JSONB cannot hold a NUL character; such a line keeps its exact text, without the
    // queryable copy.
    Ok(Checked {
        ts,
        jsonb: !event.line.contains("\\u0000"),
    })
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn append(&self, session: &str, events: &[NewEvent]) -> Result<u64, StoreError> {
        let mut stamps = Vec::with_capacity(events.len());
        let mut envelopes = Vec::with_capacity(events.len());
        for event in events {
            let checked = validate(session, event)?;
            stamps.push(checked.ts);
            envelopes.push(checked.jsonb.then_some(event.line.as_str()));
        }
        let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        let lines: Vec<&str> = events.iter().map(|e| e.line.as_str()).collect();
        let client = self.client().await?;
        // One statement, one round trip, atomic: the function (migration 0001) locks the
        // session row, skips known ids, numbers the rest gap-free and advances the session.
        let stmt = client
            .prepare_cached("SELECT compactor_append($1, $2, $3, $4, $5, $6)")
            .await
            .map_err(self.pg("preparing an append"))?;
        let last: i64 = client
            .query_one(&stmt, &[&session, &ids, &kinds, &lines, &stamps, &envelopes])
            .await
            .map_err(self.pg("appending events"))?
            .get(0);
        Ok(last as u64)
    }

    async fn events(&self, session: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT seq, id, kind, line FROM compactor_events WHERE session = $1 AND seq > $2 ORDER BY seq",
            )
            .await
            .map_err(self.pg("preparing a read"))?;
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let rows = client
            .query(&stmt, &[&session, &after])
            .await
            .map_err(self.pg("reading events"))?;
        Ok(rows
            .iter()
            .map(|row| StoredEvent {
                seq: row.get::<_, i64>(0) as u64,
                id: row.get(1),
                kind: row.get(2),
                line: row.get(3),
            })
            .collect())
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT session, last_seq, last_ts FROM compactor_sessions
                 WHERE last_seq > 0 ORDER BY session COLLATE \"C\"",
                &[],
            )
            .await
            .map_err(self.pg("listing sessions"))?;
        Ok(rows
            .iter()
            .map(|row| SessionInfo {
                session: row.get(0),
                events: row.get::<_, i64>(1) as u64,
                last_ts: row.get(2),
            })
            .collect())
    }

    async fn rewrite(&self, session: &str) -> Result<Option<Rewrite>, StoreError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT original_len, original_digest, replacement, generation
                 FROM compactor_rewrites WHERE session = $1",
                &[&session],
            )
            .await
            .map_err(self.pg("reading the rewrite"))?;
        Ok(row.map(|row| Rewrite {
            original_len: row.get::<_, i64>(0) as usize,
            original_digest: row.get(1),
            replacement: row.get(2),
            generation: row.get::<_, i64>(3) as u64,
        }))
    }

    async fn set_rewrite(
        &self,
        session: &str,
        expected_generation: u64,
        rewrite: &Rewrite,
    ) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let expected = i64::try_from(expected_generation).unwrap_or(i64::MAX);
        let generation = i64::try_from(rewrite.generation).unwrap_or(i64::MAX);
        let len = i64::try_from(rewrite.original_len).unwrap_or(i64::MAX);
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 6] = [
            &session,
            &expected,
            &generation,
            &len,
            &rewrite.original_digest,
            &rewrite.replacement,
        ];
        // Compare-and-set in one statement: the row is written only when its generation
        // is the expected one (or, expecting 0, when there is no row yet).
        let changed = if expected == 0 {
            client
                .execute(
                    "INSERT INTO compactor_rewrites
                         (session, generation, original_len, original_digest, replacement)
                     VALUES ($1, $3, $4, $5, $6)
                     ON CONFLICT (session) DO UPDATE SET
                         generation = EXCLUDED.generation, original_len = EXCLUDED.original_len,
                         original_digest = EXCLUDED.original_digest,
                         replacement = EXCLUDED.replacement, updated_at = now()
                     WHERE compactor_rewrites.generation = $2",
                    &params,
                )
                .await
        } else {
            client
                .execute(
                    "UPDATE compactor_rewrites SET generation = $3, original_len = $4,
                         original_digest = $5, replacement = $6, updated_at = now()
                     WHERE session = $1 AND generation = $2",
                    &params,
                )
                .await
        }
        .map_err(self.pg("setting the rewrite"))?;
        Ok(changed == 1)
    }

    async fn try_lease(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let client = self.client().await?;
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2);
        // One atomic upsert on the server's clock: taken when there is no lease, when it
        // has expired, or when the holder renews its own.
        let changed = client
            .execute(
                "INSERT INTO compactor_leases (session, holder, expires_at)
                 VALUES ($1, $2, clock_timestamp() + $3::float8 * interval '1 millisecond')
                 ON CONFLICT (session) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                 WHERE compactor_leases.holder = EXCLUDED.holder
                    OR compactor_leases.expires_at <= clock_timestamp()",
                &[&session, &holder, &(ttl_ms as f64)],
            )
            .await
            .map_err(self.pg("taking the lease"))?;
        Ok(changed == 1)
    }

    async fn release_lease(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client
            .execute(
                "DELETE FROM compactor_leases WHERE session = $1 AND holder = $2",
                &[&session, &holder],
            )
            .await
            .map_err(self.pg("releasing the lease"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(id: &str, line: &str) -> NewEvent {
        NewEvent {
            id: id.into(),
            kind: "message".into(),
            line: line.into(),
        }
    }

    #[test]
    fn lines_that_are_not_one_json_object_are_rejected() {
        let ok = validate("s", &event("a", "{\"ts\":\"t\",\"x\":1}")).unwrap();
        assert_eq!((ok.ts.as_deref(), ok.jsonb), (Some("t"), true));
        assert!(!validate("s", &event("a", "{\"x\":\"\\u0000\"}")).unwrap().jsonb);
        for bad in ["[1]", "{", "{}\n{}"] {
            assert!(
                matches!(validate("s", &event("a", bad)), Err(StoreError::Rejected { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            validate("s", &event("", "{}")),
            Err(StoreError::Rejected { .. })
        ));
    }
}
