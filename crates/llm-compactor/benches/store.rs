//! Session store appends: throughput and added latency per append, PostgreSQL against
//! the in-memory store and the JSONL file a single process writes.
//!
//! Run: `cargo bench -p llm-compactor --features postgres,sqlite --bench store`. Starts a
//! throwaway PostgreSQL cluster (as the tests do; skipped with a notice when PostgreSQL
//! is absent) with `fsync=off`, so the numbers are the protocol and the transaction,
//! not the disk. Prints a Markdown table for BENCHMARKS.md.

#[cfg(feature = "postgres")]
#[path = "../tests/store_support/pg.rs"]
#[allow(dead_code)]
mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use llm_compactor::message::Message;
use llm_compactor::session::{Durability, Session, SessionOptions};
use llm_compactor::store::{MemoryStore, NewEvent, SessionStore};

const SEQUENTIAL: usize = 2_000;
const TASKS: usize = 16;
const PER_TASK: usize = 250;

fn event(id: String) -> NewEvent {
    let line = format!(
        r#"{{"id":"{id}","payload":{{"role":"assistant","content":"{}"}},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}}"#,
        "reading the file and running the tests ".repeat(10)
    );
    NewEvent {
        id,
        kind: "message".to_owned(),
        line,
    }
}

struct Row {
    name: String,
    p50: Duration,
    p99: Duration,
    sequential_per_s: f64,
    concurrent_per_s: Option<f64>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn measure_store(name: &str, store: Arc<dyn SessionStore>) -> Row {
    // Warm up (connections, prepared statements).
    for i in 0..50 {
        store.append("warm", &[event(format!("w{i}"))]).await.unwrap();
    }
    let mut latencies = Vec::with_capacity(SEQUENTIAL);
    let start = Instant::now();
    for i in 0..SEQUENTIAL {
        let t = Instant::now();
        store.append("sequential", &[event(format!("s{i}"))]).await.unwrap();
        latencies.push(t.elapsed());
    }
    let sequential = start.elapsed();
    latencies.sort();
    let start = Instant::now();
    let mut handles = Vec::new();
    for t in 0..TASKS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..PER_TASK {
                store
                    .append(&format!("c{t}"), &[event(format!("c{t}-{i}"))])
                    .await
                    .unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let concurrent = start.elapsed();
    Row {
        name: name.to_owned(),
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        sequential_per_s: SEQUENTIAL as f64 / sequential.as_secs_f64(),
        concurrent_per_s: Some((TASKS * PER_TASK) as f64 / concurrent.as_secs_f64()),
    }
}

fn measure_file(name: &str, durability: Durability) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let mut session =
        Session::create(dir.path().join("s.jsonl"), SessionOptions::new().durability(durability)).unwrap();
    let text = "reading the file and running the tests ".repeat(10);
    let mut latencies = Vec::with_capacity(SEQUENTIAL);
    let start = Instant::now();
    for _ in 0..SEQUENTIAL {
        let t = Instant::now();
        session.append_message(Message::assistant(text.clone())).unwrap();
        latencies.push(t.elapsed());
    }
    let sequential = start.elapsed();
    latencies.sort();
    Row {
        name: name.to_owned(),
        p50: percentile(&latencies, 0.5),
        p99: percentile(&latencies, 0.99),
        sequential_per_s: SEQUENTIAL as f64 / sequential.as_secs_f64(),
        concurrent_per_s: None,
    }
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench`-less args: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    // Pushed to only by the store features' rows.
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(unused_mut))]
    let mut rows = vec![
        measure_file(
            "JSONL file (messages not fsynced: the default)",
            Durability::OnCompaction,
        ),
        measure_file("JSONL file (every line fsynced)", Durability::Always),
        runtime.block_on(measure_store("MemoryStore", Arc::new(MemoryStore::new()))),
    ];
    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir().unwrap();
        let store = llm_compactor::store::SqliteStore::open(dir.path().join("bench.db")).unwrap();
        rows.push(runtime.block_on(measure_store(
            "SqliteStore (WAL, synchronous=NORMAL, local file)",
            Arc::new(store),
        )));
    }
    #[cfg(feature = "postgres")]
    {
        if let Some(cluster) = pg::PgCluster::start() {
            let url = cluster.database("bench");
            let store = runtime
                .block_on(llm_compactor::store::PostgresStore::connect(url))
                .unwrap();
            rows.push(runtime.block_on(measure_store("PostgresStore (127.0.0.1, fsync=off)", Arc::new(store))));
        }
    }
    println!("| store | append p50 | append p99 | appends/s, 1 task | appends/s, {TASKS} tasks |");
    println!("|---|---|---|---|---|");
    for row in rows {
        println!(
            "| {} | {:.1} µs | {:.1} µs | {:.0} | {} |",
            row.name,
            row.p50.as_secs_f64() * 1e6,
            row.p99.as_secs_f64() * 1e6,
            row.sequential_per_s,
            row.concurrent_per_s.map_or("—".to_owned(), |v| format!("{v:.0}"))
        );
    }
}
