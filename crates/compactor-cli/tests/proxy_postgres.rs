//! Several `compactor proxy` PROCESSES sharing one PostgreSQL store, against a real
//! server (a throwaway cluster for this test: skipped with a notice when
//! PostgreSQL is absent, a failure under `CI=true`; `scripts/postgres.sh` installs it).
//!
//! In front of one scripted upstream on 127.0.0.1, one after the other on the same
//! cluster:
//! 1. two proxies, 16 concurrent sessions x 100 rounds sent round-robin to them, each
//!    round the agent's full history: no event lost or recorded twice, no compaction
//!    outside its instance's lease, every export replays to what the upstream saw, and
//!    the upstream never got a request over the budget or an orphan tool result;
//! 2. a proxy SIGKILLed while it compacts (its summarizer says it started, then blocks):
//!    the other proxy finishes the session once the dead holder's lease expired;
//! 3. PostgreSQL stopped under load: clear 503s naming the store (never its password),
//!    and service again after it restarts, without restarting the proxies;
//! 4. prepared compaction (`--prepare-ratio`) with one session served by two proxies:
//!    only the holder of the session's preparation lease prepares (one summary paid for,
//!    not two), and it installs its pass.

use crate::support;

use crate::pg;

use crate::proxy_pg_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pg::{PASSWORD, PgCluster};
use proxy_pg_support::observe::{self, assert_exclusive_compaction, assert_logs_intact, assert_session_exported};
use proxy_pg_support::upstream::Upstream;
use proxy_pg_support::{Agent, ProxyProcess, client, send};
use support::{run, stderr};

const BUDGET: usize = 3000;
const SESSIONS: usize = 16;
const ROUNDS: usize = 100;

/// The engine flags of every proxy: a small budget (compactions every dozen rounds),
/// the heuristic counter (the upstream reports usage with it).
fn engine(summarizer: &[&str]) -> Vec<String> {
    let budget = BUDGET.to_string();
    let mut flags: Vec<String> = ["--budget", &budget, "--keep-recent", "4", "--counter", "heuristic"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    flags.extend(summarizer.iter().map(|s| s.to_string()));
    flags
}

fn as_refs(flags: &[String]) -> Vec<&str> {
    flags.iter().map(String::as_str).collect()
}

/// Polls `done` every 10 ms until it holds; panics with `what` after `limit`.
async fn wait_until(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn proxies_sharing_one_postgres_database() {
    let Some(cluster) = PgCluster::start() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = cluster.database("shared");
    // Create the schema (the store migrates on open), then watch it.
    let listed = run(&["proxy", "sessions", "--store", &base], None);
    assert!(listed.status.success(), "{}", stderr(&listed));
    observe::install(&cluster, "shared");
    let upstream = rt.block_on(Upstream::start(BUDGET));
    let store_for = |app: &str| format!("{base}?application_name={app}");

    let started = Instant::now();
    let (a, b, agents) = rt.block_on(two_proxies_round_robin(&cluster, &upstream, &store_for, dir.path()));
    eprintln!(
        "two proxies, {SESSIONS} sessions x {ROUNDS} rounds: {:?}",
        started.elapsed()
    );
    rt.block_on(kill_during_compaction(&cluster, &upstream, &store_for, dir.path()));
    rt.block_on(database_restarted_under_load(
        &cluster,
        &upstream,
        &base,
        &a,
        &b,
        dir.path(),
    ));
    drop(agents);
    rt.block_on(prepared_by_the_lease_holder_only(
        &cluster,
        &upstream,
        &store_for,
        dir.path(),
    ));
    eprintln!(
        "proxies_sharing_one_postgres_database: every scenario passed in {:?}",
        started.elapsed()
    );
}

async fn two_proxies_round_robin(
    cluster: &PgCluster,
    upstream: &Upstream,
    store_for: &dyn Fn(&str) -> String,
    dir: &std::path::Path,
) -> (ProxyProcess, ProxyProcess, Vec<Agent>) {
    let flags = engine(&["--summarizer", "none"]);
    let a = ProxyProcess::start(&upstream.url, &store_for("proxy-a"), &as_refs(&flags));
    let b = ProxyProcess::start(&upstream.url, &store_for("proxy-b"), &as_refs(&flags));
    let proxies = Arc::new([a.url.clone(), b.url.clone()]);
    let http = client();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..SESSIONS {
        let proxies = proxies.clone();
        let http = http.clone();
        tasks.push(tokio::spawn(async move {
            let mut agent = Agent::new(&format!("rr{s:02}"));
            for round in 0..ROUNDS {
                agent.next_message();
                // Sessions start on different instances, then alternate every round.
                let proxy = &proxies[(round + s) % 2];
                let (status, body) = send(&http, proxy, &agent).await.unwrap();
                assert_eq!(status, 200, "{} round {round} via {proxy}: {body}", agent.name);
                agent.answered(&body);
            }
            agent
        }));
    }
    let mut agents = Vec::new();
    for task in tasks {
        agents.push(task.await.expect("a session's rounds"));
    }
    eprintln!("{SESSIONS} sessions x {ROUNDS} rounds sent in {:?}", started.elapsed());
    let names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    let violations = upstream.seen(|s| s.violations.clone());
    assert!(violations.is_empty(), "the upstream got bad requests: {violations:#?}");
    for agent in &agents {
        let requests = upstream.seen(|s| s.requests.get(&agent.name).copied());
        assert_eq!(requests, Some(ROUNDS), "{}: one upstream request per round", agent.name);
    }
    assert_logs_intact(cluster, "shared", "rr", &names);
    let passes = assert_exclusive_compaction(cluster, "shared");
    let by = |app: &str| passes.iter().find(|(a, _)| a == app).map_or(0, |(_, n)| *n);
    assert!(
        by("proxy-a") > 0 && by("proxy-b") > 0,
        "both instances compacted: {passes:?}"
    );
    let per_session = observe::rows(
        cluster,
        "shared",
        "SELECT session, count(*) FROM compactor_events WHERE kind = 'compaction' AND session LIKE 'rr%' GROUP BY session ORDER BY session",
    );
    assert_eq!(per_session.len(), SESSIONS, "every session compacted: {per_session:?}");
    eprintln!("compactions per instance: {passes:?}");
    let store = store_for("export");
    for agent in &agents {
        let last = upstream.seen(|s| s.last[&agent.name].clone());
        assert_session_exported(cluster, "shared", &store, agent, &last, dir);
    }
    (a, b, agents)
}

async fn kill_during_compaction(
    cluster: &PgCluster,
    upstream: &Upstream,
    store_for: &dyn Fn(&str) -> String,
    dir: &std::path::Path,
) {
    // The summarizer says it started (a file), then blocks until told to go on (another
    // file; bounded, so an orphan never outlives the test by much).
    let signals = dir.join("signals");
    std::fs::create_dir(&signals).unwrap();
    let started = signals.join("started");
    let go = signals.join("go");
    let command = format!(
        "cat >/dev/null; touch '{}'; i=0; while [ ! -e '{}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo 'The agent asked questions and got short answers.'",
        started.display(),
        go.display()
    );
    // Inline passes (a model summarizer is prepared by default): the round that triggers
    // the pass is the one that holds the lease while the summarizer blocks.
    let flags = engine(&[
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        &command,
        "--lease-ttl",
        "2",
        "--no-prepare",
    ]);
    let mut c = ProxyProcess::start(&upstream.url, &store_for("proxy-c"), &as_refs(&flags));
    let d = ProxyProcess::start(&upstream.url, &store_for("proxy-d"), &as_refs(&flags));
    let http = client();
    let mut agent = Agent::new("killed");
    // Rounds through C until one of them starts a compaction.
    let interrupted = loop {
        assert!(agent.round < 80, "no compaction started in 80 rounds");
        agent.next_message();
        let request = {
            let (http, url, body, name) = (http.clone(), c.url.clone(), agent.body(), agent.name.clone());
            tokio::spawn(async move {
                http.post(format!("{url}/v1/chat/completions"))
                    .header("x-compactor-session", name)
                    .json(&body)
                    .send()
                    .await
            })
        };
        wait_until(Duration::from_secs(30), "an answer or a compaction", || {
            request.is_finished() || started.exists()
        })
        .await;
        if started.exists() {
            break request;
        }
        let response = request.await.unwrap().unwrap();
        assert_eq!(response.status(), 200);
        let body: serde_json::Value = response.json().await.unwrap();
        agent.answered(&body);
    };
    // C holds the lease while its summarizer blocks, renewing it every third of its
    // TTL: three renewals mean the compaction outlived the TTL and was still C's alone.
    wait_until(Duration::from_secs(30), "C to renew its lease past the TTL", || {
        observe::rows(
            cluster,
            "shared",
            "SELECT count(*) FROM lease_log WHERE session = 'killed' AND op = 'renew' AND app = 'proxy-c'",
        )[0][0]
            .parse::<usize>()
            .unwrap()
            >= 3
    })
    .await;
    c.kill();
    std::fs::write(&go, b"").unwrap();
    assert!(interrupted.await.unwrap().is_err(), "the killed proxy answered nothing");
    // The same round again, through D: it waits out C's lease, compacts, answers.
    let (status, body) = send(&http, &d.url, &agent).await.unwrap();
    assert_eq!(status, 200, "the surviving proxy finishes the round: {body}");
    let forwarded = upstream.seen(|s| s.last["killed"].as_array().unwrap().len());
    assert!(
        forwarded < agent.history.len(),
        "D waited for the lease and compacted the round ({forwarded} messages forwarded of {})",
        agent.history.len()
    );
    agent.answered(&body);
    for _ in 0..5 {
        agent.next_message();
        let (status, body) = send(&http, &d.url, &agent).await.unwrap();
        assert_eq!(status, 200, "{body}");
        agent.answered(&body);
    }
    let leases = observe::rows(
        cluster,
        "shared",
        "SELECT op, app FROM lease_log WHERE session = 'killed' AND op <> 'renew' ORDER BY n",
    );
    assert_eq!(
        leases.first().map(|r| (r[0].as_str(), r[1].as_str())),
        Some(("take", "proxy-c")),
        "C took the lease first: {leases:?}"
    );
    assert!(
        !leases.iter().any(|r| r[0] == "release" && r[1] == "proxy-c"),
        "C died holding it: {leases:?}"
    );
    assert!(leases.iter().any(|r| r[0] == "take" && r[1] == "proxy-d"), "{leases:?}");
    let passes = observe::rows(
        cluster,
        "shared",
        "SELECT DISTINCT app FROM pass_log WHERE session = 'killed'",
    );
    assert_eq!(
        passes,
        vec![vec!["proxy-d".to_owned()]],
        "only D's compaction was recorded"
    );
    assert_exclusive_compaction(cluster, "shared");
    assert_logs_intact(cluster, "shared", "killed", &["killed".to_owned()]);
    let violations = upstream.seen(|s| s.violations.clone());
    assert!(violations.is_empty(), "{violations:#?}");
    let last = upstream.seen(|s| s.last["killed"].clone());
    assert_session_exported(cluster, "shared", &store_for("export"), &agent, &last, dir);
    assert!(!d.logged("waiting for its lease").is_empty(), "D waited for C's lease");
}

async fn database_restarted_under_load(
    cluster: &PgCluster,
    upstream: &Upstream,
    base: &str,
    a: &ProxyProcess,
    b: &ProxyProcess,
    dir: &std::path::Path,
) {
    const CLIENTS: usize = 4;
    let proxies = Arc::new([a.url.clone(), b.url.clone()]);
    let http = client();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<(u16, String)>::new()));
    let mut tasks = Vec::new();
    for s in 0..CLIENTS {
        let (proxies, http, stop, answered, failures) = (
            proxies.clone(),
            http.clone(),
            stop.clone(),
            answered.clone(),
            failures.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut agent = Agent::new(&format!("down{s}"));
            agent.next_message();
            let mut turn = s;
            while !stop.load(Ordering::SeqCst) {
                turn += 1;
                match send(&http, &proxies[turn % 2], &agent).await {
                    Ok((200, body)) => {
                        agent.answered(&body);
                        agent.next_message();
                        answered.fetch_add(1, Ordering::SeqCst);
                    }
                    // A failed round is sent again, as an agent's retry would.
                    Ok((status, body)) => {
                        failures.lock().unwrap().push((status, body.to_string()));
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => panic!(
                        "{}: the proxy must answer, even while the store is down: {e}",
                        agent.name
                    ),
                }
            }
            // The newest message was never sent: the history ends with the last answer.
            agent.history.pop();
            agent
        }));
    }
    let n = answered.clone();
    wait_until(Duration::from_secs(60), "rounds before the outage", || {
        n.load(Ordering::SeqCst) >= 3 * CLIENTS
    })
    .await;
    tokio::task::block_in_place(|| cluster.stop());
    let f = failures.clone();
    wait_until(Duration::from_secs(60), "every client to meet the outage", || {
        f.lock().unwrap().len() >= CLIENTS
    })
    .await;
    let during = answered.load(Ordering::SeqCst);
    tokio::task::block_in_place(|| cluster.start_again());
    let n = answered.clone();
    wait_until(Duration::from_secs(60), "rounds after the restart", || {
        n.load(Ordering::SeqCst) >= during + 5 * CLIENTS
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let mut agents = Vec::new();
    for task in tasks {
        agents.push(task.await.expect("a client"));
    }
    let named = format!("PostgreSQL postgres://postgres:***@127.0.0.1:{}/shared", cluster.port());
    for (status, body) in failures.lock().unwrap().iter() {
        assert_eq!(*status, 503, "an outage is a 503: {body}");
        assert!(
            body.contains("store_unavailable") && body.contains(&named),
            "the 503 names the store ({named}): {body}"
        );
        assert!(!body.contains(PASSWORD), "the 503 never shows the password: {body}");
    }
    let names: Vec<String> = agents.iter().map(|a| a.name.clone()).collect();
    assert_logs_intact(cluster, "shared", "down", &names);
    assert_exclusive_compaction(cluster, "shared");
    let violations = upstream.seen(|s| s.violations.clone());
    assert!(violations.is_empty(), "{violations:#?}");
    for agent in &agents {
        let last = upstream.seen(|s| s.last[&agent.name].clone());
        assert_session_exported(cluster, "shared", base, agent, &last, dir);
    }
}

/// The value of one series in a proxy's `/metrics`.
async fn metric(http: &reqwest::Client, proxy: &str, series: &str) -> f64 {
    let text = support::metrics_text(http, proxy).await;
    let line = text
        .lines()
        .find(|l| l.starts_with(series))
        .unwrap_or_else(|| panic!("no {series} in {text}"));
    line[series.len()..].trim().parse().unwrap()
}

async fn prepared_by_the_lease_holder_only(
    cluster: &PgCluster,
    upstream: &Upstream,
    store_for: &dyn Fn(&str) -> String,
    dir: &std::path::Path,
) {
    // Each summary the proxies ask for leaves a file, then blocks until told to go on.
    let signals = dir.join("prepare-signals");
    std::fs::create_dir(&signals).unwrap();
    let go = dir.join("prepare-go");
    let command = format!(
        "cat >/dev/null; mktemp -p '{}' started.XXXXXX >/dev/null; i=0; while [ ! -e '{}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo 'The agent asked questions and got short answers.'",
        signals.display(),
        go.display()
    );
    let started = || std::fs::read_dir(&signals).unwrap().count();
    let flags = engine(&[
        "--summarizer",
        "exec",
        "--summarizer-cmd",
        &command,
        "--prepare-ratio",
        "0.5",
    ]);
    let e = ProxyProcess::start(&upstream.url, &store_for("proxy-e"), &as_refs(&flags));
    let f = ProxyProcess::start(&upstream.url, &store_for("proxy-f"), &as_refs(&flags));
    let http = client();
    let mut agent = Agent::new("prepared");
    let elsewhere = "compactor_proxy_prepared_total{fate=\"elsewhere\"}";
    let round = |agent: &mut Agent, proxy: String| {
        agent.next_message();
        let (http, body) = (http.clone(), agent.body());
        let name = agent.name.clone();
        async move {
            let response = http
                .post(format!("{proxy}/v1/chat/completions"))
                .header("x-compactor-session", name)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200);
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    // Rounds alternate between the two until one of them starts preparing.
    let mut n = 0;
    while started() == 0 {
        assert!(n < 60, "no preparation started in 60 rounds");
        let proxy = if n % 2 == 0 { &e.url } else { &f.url };
        let answer = round(&mut agent, proxy.clone()).await;
        agent.answered(&answer);
        n += 1;
    }
    let holder_app = observe::rows(
        cluster,
        "shared",
        "SELECT DISTINCT app FROM lease_log WHERE session LIKE 'prepared%#prepare' AND op = 'take'",
    );
    assert_eq!(
        holder_app.len(),
        1,
        "one instance took the preparation lease: {holder_app:?}"
    );
    let (holder, other) = if holder_app[0][0] == "proxy-e" {
        (&e, &f)
    } else {
        (&f, &e)
    };
    // The other instance serves rounds over the threshold too: it finds the lease taken
    // (counted as `elsewhere`) and never asks its summarizer.
    let mut tries = 0;
    while metric(&http, &other.url, elsewhere).await < 1.0 {
        assert!(tries < 4, "the other instance never found the preparation lease taken");
        let answer = round(&mut agent, other.url.clone()).await;
        agent.answered(&answer);
        tries += 1;
    }
    assert_eq!(started(), 1, "one summary was asked for, by the lease holder only");
    // Released, the prepared pass is installed by its holder at a round over the trigger.
    std::fs::write(&go, b"").unwrap();
    let installed = |http: reqwest::Client, url: String| async move {
        metric(&http, &url, "compactor_proxy_prepared_total{fate=\"installed\"}").await
            + metric(&http, &url, "compactor_proxy_prepared_total{fate=\"amended\"}").await
    };
    let mut rounds = 0;
    while installed(http.clone(), holder.url.clone()).await < 1.0 {
        assert!(rounds < 30, "the holder never installed its prepared pass");
        let answer = round(&mut agent, holder.url.clone()).await;
        agent.answered(&answer);
        rounds += 1;
    }
    assert_eq!(started(), 1, "still one summary: the install paid for nothing more");
    assert_exclusive_compaction(cluster, "shared");
    assert_logs_intact(cluster, "shared", "prepared", &["prepared".to_owned()]);
    let violations = upstream.seen(|s| s.violations.clone());
    assert!(violations.is_empty(), "{violations:#?}");
    let last = upstream.seen(|s| s.last["prepared"].clone());
    assert_session_exported(cluster, "shared", &store_for("export"), &agent, &last, dir);
}
