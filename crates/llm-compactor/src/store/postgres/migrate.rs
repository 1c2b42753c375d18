//! Schema migrations: numbered `.sql` files in `migrations/postgres/`, embedded in the
//! binary, applied on start.
//!
//! Several instances may start at once against one database; each applies the missing
//! migrations in ONE transaction that first takes a transaction-scoped advisory lock, so
//! exactly one of them runs each migration and the others wait and then find nothing to
//! do. A database whose schema is newer than this build is refused rather than
//! misread.

use deadpool_postgres::Object;

use super::errors::{Redactor, from_pg};
use crate::store::StoreError;

/// Every migration, in order: (version, name, SQL).
pub(crate) const MIGRATIONS: &[(i32, &str, &str)] = &[(
    1,
    "0001_init",
    include_str!("../../../migrations/postgres/0001_init.sql"),
)];

/// The advisory lock key that serialises migrations (an arbitrary constant: "llmcompa").
const MIGRATION_LOCK: i64 = 0x6c6c_6d63_6f6d_7061;

/// Applies the migrations `client`'s database lacks. Returns the schema version.
pub(crate) async fn migrate(client: &mut Object, redactor: &Redactor) -> Result<i32, StoreError> {
    let pg = |doing: &'static str| move |e: tokio_postgres::Error| from_pg(redactor, doing, &e);
    let tx = client.transaction().await.map_err(pg("starting the migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg("taking the migration lock"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS compactor_schema_migrations (
             version     INTEGER PRIMARY KEY,
             name        TEXT NOT NULL,
             applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(pg("creating the schema version table"))?;
    let row = tx
        .query_one("SELECT COALESCE(MAX(version), 0) FROM compactor_schema_migrations", &[])
        .await
        .map_err(pg("reading the schema version"))?;
    let current: i32 = row.get(0);
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    if current > known {
        return Err(StoreError::Backend(format!(
            "the database schema is version {current}, newer than this build knows ({known}); upgrade llm-compactor"
        )));
    }
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > current) {
        tx.batch_execute(sql)
            .await
            .map_err(|e| from_pg(redactor, &format!("applying migration {name}"), &e))?;
        tx.execute(
            "INSERT INTO compactor_schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await
        .map_err(pg("recording a migration"))?;
        tracing::info!(version, name, "applied a session store migration");
    }
    tx.commit().await.map_err(pg("committing the migration"))?;
    Ok(known)
}
