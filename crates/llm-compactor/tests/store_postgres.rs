//! The PostgreSQL session store against a REAL server: a throwaway cluster started by
//! each test (skipped with a notice when PostgreSQL is absent, a failure under
//! `CI=true`; `scripts/postgres.sh` installs it).
//!
//! One cluster serves every scenario, each in its own database: the conformance suite,
//! migrations under concurrent start, separate worker PROCESSES appending and leasing
//! against one database, a session mirror, and last the server restarted under load.

#![cfg(feature = "postgres")]

use crate::store_support;

use std::collections::{BTreeMap, HashSet};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use llm_compactor::store::{NewEvent, PostgresStore, SessionStore, StoreError, export_jsonl, open_store};
use store_support::conformance;
use store_support::pg::{PASSWORD, PgCluster};

const WORKER_ENV: &str = "LLMC_PG_WORKER";
const WORKERS: usize = 4;
const SESSIONS: usize = 16;
const ROUNDS: usize = 12;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn postgres_store() {
    let Some(cluster) = PgCluster::start() else { return };
    let rt = runtime();
    rt.block_on(async {
        conformance_suite(&cluster).await;
        migrations(&cluster).await;
        secrets_and_unreachable_servers(&cluster).await;
    });
    worker_processes(&cluster, &rt);
    rt.block_on(restart_under_load(&cluster));
    eprintln!("postgres_store: every scenario passed");
}

async fn conformance_suite(cluster: &PgCluster) {
    let url = cluster.database("conformance");
    let store: Arc<dyn SessionStore> = open_store(&url).await.expect("open postgres store");
    conformance::run_all(store.clone(), "pg").await;
    // The queryable JSONB copy holds the envelope.
    let kinds = cluster.psql(
        "conformance",
        "SELECT string_agg(DISTINCT envelope->>'type', ',' ORDER BY envelope->>'type') FROM compactor_events WHERE session = 'pg-export'",
    );
    assert_eq!(kinds, "compaction,elision,message,session-meta");
}

async fn migrations(cluster: &PgCluster) {
    // Four instances start at once on an empty database: one applies the schema.
    let url = cluster.database("migrations");
    let mut handles = Vec::new();
    for _ in 0..4 {
        let url = url.clone();
        handles.push(tokio::spawn(async move { PostgresStore::connect(url).await }));
    }
    for handle in handles {
        handle.await.unwrap().expect("concurrent start");
    }
    assert_eq!(
        cluster.psql(
            "migrations",
            "SELECT string_agg(version::text, ',') FROM compactor_schema_migrations"
        ),
        PostgresStore::schema_version().to_string()
    );
    // A schema newer than this build is refused, not misread.
    cluster.psql(
        "migrations",
        "INSERT INTO compactor_schema_migrations (version, name) VALUES (99, 'future')",
    );
    let err = PostgresStore::connect(url).await.unwrap_err();
    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
    assert!(err.to_string().contains("newer"), "{err}");
}

async fn secrets_and_unreachable_servers(cluster: &PgCluster) {
    let url = cluster.url("conformance");
    let store = PostgresStore::connect(url.clone()).await.unwrap();
    assert!(!format!("{store:?}").contains(PASSWORD));
    assert!(!store.display_url().contains(PASSWORD));
    // Nothing listens on this port: a clear, password-free Unavailable.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = listener.local_addr().unwrap().port();
    drop(listener);
    let dead = format!("postgres://postgres:{PASSWORD}@127.0.0.1:{dead_port}/x");
    let err = PostgresStore::builder(dead.clone())
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!err.to_string().contains(PASSWORD), "{err}");
    // A malformed URL is named without its password.
    let bad = format!("postgres://postgres:{PASSWORD}@127.0.0.1:notaport/x");
    let err = open_store(&bad).await.unwrap_err();
    assert!(!err.to_string().contains(PASSWORD), "{err}");
}

/// The body of one worker PROCESS (this test binary run again with `LLMC_PG_WORKER`):
/// every round, for all sessions at once, append two events (and retry them, as after
/// a lost reply), then try the session's lease and, holding it, write a start and an end
/// marker to the session's lease log.
#[test]
fn worker_process() {
    let Ok(spec) = std::env::var(WORKER_ENV) else { return };
    let (worker, url) = spec.split_once(' ').expect("worker spec");
    let worker: usize = worker.parse().unwrap();
    runtime().block_on(async {
        let store: Arc<dyn SessionStore> =
            Arc::new(PostgresStore::builder(url).max_connections(8).connect().await.unwrap());
        let holder = format!("w{worker}-{}", std::process::id());
        for round in 0..ROUNDS {
            let mut handles = Vec::new();
            for s in 0..SESSIONS {
                let store = store.clone();
                let holder = holder.clone();
                handles.push(tokio::spawn(async move {
                    let key = format!("s{s}");
                    let batch = [
                        conformance::event(&format!("w{worker}-r{round}-a")),
                        conformance::event(&format!("w{worker}-r{round}-b")),
                    ];
                    store.append(&key, &batch).await.unwrap();
                    store.append(&key, &batch).await.unwrap();
                    if store.try_lease(&key, &holder, Duration::from_secs(120)).await.unwrap() {
                        let log = format!("{key}-lease-log");
                        store.append(&log, &[marker("start", &holder, round)]).await.unwrap();
                        // The "compaction": a few reads while holding the lease.
                        for _ in 0..3 {
                            store.events(&key, 0).await.unwrap();
                        }
                        store.append(&log, &[marker("end", &holder, round)]).await.unwrap();
                        store.release_lease(&key, &holder).await.unwrap();
                    }
                }));
            }
            for handle in handles {
                handle.await.unwrap();
            }
        }
    });
}

fn marker(what: &str, holder: &str, round: usize) -> NewEvent {
    conformance::event(&format!("{what}:{holder}:{round}"))
}

fn worker_processes(cluster: &PgCluster, rt: &tokio::runtime::Runtime) {
    let url = cluster.database("workers");
    // Apply the schema once before the workers race (they would serialise on it anyway).
    rt.block_on(PostgresStore::connect(url.clone())).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "store_postgres::worker_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(WORKER_ENV, format!("{w} {url}"))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a worker process failed");
    }
    rt.block_on(async {
        let store = PostgresStore::connect(url).await.unwrap();
        let mut lease_turns = 0;
        for s in 0..SESSIONS {
            let key = format!("s{s}");
            let events = store.events(&key, 0).await.unwrap();
            assert_eq!(events.len(), WORKERS * ROUNDS * 2, "{key}: no event lost or duplicated");
            let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
            assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "{key}: gap-free");
            let ids: HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
            assert_eq!(ids.len(), events.len(), "{key}: no duplicate");
            // Each worker's rounds are in order within the session.
            for w in 0..WORKERS {
                let mine: Vec<&str> = events
                    .iter()
                    .map(|e| e.id.as_str())
                    .filter(|id| id.starts_with(&format!("w{w}-")))
                    .collect();
                let want: Vec<String> = (0..ROUNDS)
                    .flat_map(|r| [format!("w{w}-r{r}-a"), format!("w{w}-r{r}-b")])
                    .collect();
                assert_eq!(mine, want, "{key}: worker {w}'s order");
            }
            // The lease log alternates start/end of ONE holder: never two at once.
            let log = store.events(&format!("{key}-lease-log"), 0).await.unwrap();
            assert!(!log.is_empty(), "{key}: somebody held the lease");
            assert_eq!(log.len() % 2, 0);
            for pair in log.chunks(2) {
                let start = pair[0].id.strip_prefix("start:").expect("a start marker");
                let end = pair[1].id.strip_prefix("end:").expect("an end marker right after it");
                assert_eq!(start, end, "{key}: overlapping lease holders");
            }
            lease_turns += log.len() / 2;
            let exported = export_jsonl(&store, &key).await.unwrap();
            assert_eq!(exported.lines().count(), events.len());
        }
        eprintln!(
            "worker_processes: {WORKERS} processes x {SESSIONS} sessions x {ROUNDS} rounds, {lease_turns} exclusive lease turns"
        );
    });
}

/// The server is stopped and started again while tasks append: calls fail with
/// `Unavailable` while it is down (no password in the message), the same store recovers,
/// and every acknowledged append is there exactly once, gap-free.
async fn restart_under_load(cluster: &PgCluster) {
    let url = cluster.database("restart");
    let store: Arc<dyn SessionStore> = Arc::new(
        PostgresStore::builder(url)
            .connect_timeout(Duration::from_secs(2))
            .wait_timeout(Duration::from_secs(2))
            .connect()
            .await
            .unwrap(),
    );
    let (up_tx, up_rx) = tokio::sync::watch::channel(true);
    let acked = Arc::new(AtomicUsize::new(0));
    let progress = Arc::new(tokio::sync::Notify::new());
    let tasks = 6;
    let target_after_restart = 20;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let store = store.clone();
        let mut up = up_rx.clone();
        let acked = acked.clone();
        let progress = progress.clone();
        handles.push(tokio::spawn(async move {
            let mut errors: Vec<StoreError> = Vec::new();
            let mut done = Vec::new();
            let mut i = 0;
            let mut after_restart = 0;
            while after_restart < target_after_restart {
                let batch = [conformance::event(&format!("t{t}-{i}"))];
                loop {
                    match store.append("load", &batch).await {
                        Ok(_) => break,
                        Err(e) => {
                            errors.push(e);
                            up.wait_for(|up| *up).await.unwrap();
                        }
                    }
                }
                done.push(batch[0].id.clone());
                acked.fetch_add(1, Ordering::SeqCst);
                progress.notify_waiters();
                if !errors.is_empty() {
                    after_restart += 1;
                }
                i += 1;
            }
            (done, errors)
        }));
    }
    // Let the load get going, then stop the server under it.
    while acked.load(Ordering::SeqCst) < 30 {
        progress.notified().await;
    }
    up_tx.send(false).unwrap();
    tokio::task::block_in_place(|| cluster.stop());
    let err = store
        .append("load", &[conformance::event("while-down")])
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    assert!(!err.to_string().contains(PASSWORD), "{err}");
    let err = store.events("load", 0).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(_)), "{err:?}");
    tokio::task::block_in_place(|| cluster.start_again());
    up_tx.send(true).unwrap();
    let mut acknowledged = Vec::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for handle in handles {
        let (done, errors) = handle.await.unwrap();
        assert!(!errors.is_empty(), "every task saw the outage");
        for e in errors {
            assert!(!e.to_string().contains(PASSWORD), "{e}");
            let kind = match e {
                StoreError::Unavailable(_) => "unavailable",
                other => panic!("an outage must read as Unavailable, got {other:?}"),
            };
            *kinds.entry(kind.to_owned()).or_default() += 1;
        }
        acknowledged.extend(done);
    }
    let events = store.events("load", 0).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "gap-free after the restart"
    );
    let stored: HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(stored.len(), events.len(), "no duplicate");
    for id in &acknowledged {
        assert!(stored.contains(id.as_str()), "acknowledged {id} was lost");
    }
    assert_eq!(
        events.len(),
        acknowledged.len(),
        "only acknowledged events (the down-time probe failed)"
    );
    eprintln!(
        "restart_under_load: {} events, errors while down: {kinds:?}",
        events.len()
    );
}
