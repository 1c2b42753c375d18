//! Watching the shared database from outside the proxies, and the checks made on it.
//!
//! Triggers (test-only, installed after the store's own migration) log every change of
//! the compaction lease and every compaction line appended, each with the
//! `application_name` of the connection that made it (every proxy instance connects
//! under its own name). From that log the test proves, per session, that a compaction
//! was only ever appended by the instance that held the lease at that moment, and that a
//! lease never passed to another holder before it had expired: no session was compacted
//! twice at once.

use std::path::Path;

use llm_compactor::Message;
use llm_compactor::format::{Document, Format};
use serde_json::{Value, json};

use super::Agent;
use crate::pg::PgCluster;
use crate::support::{run, stderr, stdout};

const OBSERVE: &str = r#"
CREATE SEQUENCE observed_order;
CREATE TABLE lease_log (
    n BIGINT PRIMARY KEY DEFAULT nextval('observed_order'),
    session TEXT, op TEXT, holder TEXT, app TEXT, stole BOOLEAN NOT NULL DEFAULT false,
    at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
CREATE TABLE pass_log (
    n BIGINT PRIMARY KEY DEFAULT nextval('observed_order'),
    session TEXT, kind TEXT, app TEXT);
CREATE FUNCTION observe_lease() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO lease_log (session, op, holder, app)
        VALUES (OLD.session, 'release', OLD.holder, current_setting('application_name'));
        RETURN OLD;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO lease_log (session, op, holder, app)
        VALUES (NEW.session, 'take', NEW.holder, current_setting('application_name'));
    ELSE
        INSERT INTO lease_log (session, op, holder, app, stole)
        VALUES (NEW.session, CASE WHEN OLD.holder = NEW.holder THEN 'renew' ELSE 'take' END,
                NEW.holder, current_setting('application_name'),
                OLD.holder <> NEW.holder AND OLD.expires_at > clock_timestamp());
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER observe_lease AFTER INSERT OR UPDATE OR DELETE ON compactor_leases
    FOR EACH ROW EXECUTE FUNCTION observe_lease();
CREATE FUNCTION observe_pass() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO pass_log (session, kind, app)
    VALUES (NEW.session, NEW.kind, current_setting('application_name'));
    RETURN NEW;
END $$;
CREATE TRIGGER observe_pass AFTER INSERT ON compactor_events
    FOR EACH ROW WHEN (NEW.kind IN ('compaction', 'elision')) EXECUTE FUNCTION observe_pass();
"#;

/// Installs the observing triggers on `db` (whose store schema must exist).
pub fn install(cluster: &PgCluster, db: &str) {
    cluster.psql(db, OBSERVE);
}

/// Rows of a query, each split on `|`.
pub fn rows(cluster: &PgCluster, db: &str, sql: &str) -> Vec<Vec<String>> {
    cluster
        .psql(db, sql)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('|').map(str::to_owned).collect())
        .collect()
}

/// Every compaction line was appended by the instance holding the session's lease at
/// that moment, and no lease changed hands before it expired. Returns the number of
/// compactions each instance (application name) made.
pub fn assert_exclusive_compaction(cluster: &PgCluster, db: &str) -> Vec<(String, usize)> {
    let stolen = rows(
        cluster,
        db,
        "SELECT session, holder, app FROM lease_log WHERE stole ORDER BY n",
    );
    assert!(stolen.is_empty(), "a lease was taken from a live holder: {stolen:?}");
    let outside = rows(
        cluster,
        db,
        "SELECT p.session, p.kind, p.app, coalesce(l.op, '-'), coalesce(l.app, '-') FROM pass_log p
         LEFT JOIN LATERAL (SELECT op, app FROM lease_log l
                            WHERE l.session = p.session AND l.n < p.n ORDER BY l.n DESC LIMIT 1) l ON true
         WHERE l.op IS NULL OR l.op = 'release' OR l.app <> p.app ORDER BY p.n",
    );
    assert!(
        outside.is_empty(),
        "compaction lines appended outside the appender's lease (session, kind, app, last lease op, its app): {outside:?}"
    );
    rows(
        cluster,
        db,
        "SELECT app, count(*) FROM pass_log WHERE kind = 'compaction' GROUP BY app ORDER BY app",
    )
    .into_iter()
    .map(|r| (r[0].clone(), r[1].parse().unwrap()))
    .collect()
}

/// The event log of every session named is gap-free from 1, its ids unique, its
/// `last_seq` right; and no other session exists among `prefix*` (no session was split
/// into a fresh transcript).
pub fn assert_logs_intact(cluster: &PgCluster, db: &str, prefix: &str, names: &[String]) {
    let found = rows(
        cluster,
        db,
        &format!(
            "SELECT e.session, count(*), min(e.seq), max(e.seq), count(DISTINCT e.id), s.last_seq
             FROM compactor_events e JOIN compactor_sessions s USING (session)
             WHERE e.session LIKE '{prefix}%' GROUP BY e.session, s.last_seq ORDER BY e.session"
        ),
    );
    let mut keys: Vec<String> = found.iter().map(|r| r[0].clone()).collect();
    keys.sort();
    let mut expected = names.to_vec();
    expected.sort();
    assert_eq!(keys, expected, "the sessions in the store");
    for row in found {
        let [session, count, min, max, distinct, last] = &row[..] else {
            panic!("{row:?}")
        };
        assert_eq!(min, "1", "{session}: the log starts at 1");
        assert_eq!(count, max, "{session}: the log has no gap and no repeat");
        assert_eq!(count, distinct, "{session}: every event id once");
        assert_eq!(last, max, "{session}: last_seq is the last event");
    }
}

/// Exports `agent`'s session with `compactor proxy export`, and checks that the export is
/// the stored lines byte for byte, that its message lines are exactly the messages the
/// agent sent (each once, in order: nothing lost, nothing twice), and that
/// `compactor session replay` rebuilds exactly what the upstream last received.
pub fn assert_session_exported(
    cluster: &PgCluster,
    db: &str,
    store: &str,
    agent: &Agent,
    upstream_last: &Value,
    dir: &Path,
) {
    let name = &agent.name;
    let file = dir.join(format!("{name}.jsonl"));
    let export = run(
        &["proxy", "export", name, "--store", store, "-o", file.to_str().unwrap()],
        None,
    );
    assert!(export.status.success(), "export {name}: {}", stderr(&export));
    let exported = std::fs::read_to_string(&file).unwrap();
    let stored = cluster.psql(
        db,
        &format!("SELECT string_agg(line, E'\\n' ORDER BY seq) FROM compactor_events WHERE session = '{name}'"),
    );
    assert!(
        exported == format!("{stored}\n"),
        "{name}: the export is not the stored lines byte for byte"
    );
    let recorded: Vec<Message> = exported
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "message")
        .map(|v| serde_json::from_value(v["payload"].clone()).unwrap())
        .collect();
    let sent = Document::from_value(json!({"messages": agent.sent()}), Some(Format::OpenAi), "agent")
        .unwrap()
        .into_messages();
    assert_eq!(
        recorded.len(),
        sent.len(),
        "{name}: {} messages recorded for {} sent",
        recorded.len(),
        sent.len()
    );
    for (i, (a, b)) in recorded.iter().zip(&sent).enumerate() {
        assert!(
            a.eq_ignoring_id(b),
            "{name}: message {i} recorded as {a:?}, sent as {b:?}"
        );
    }
    let replay = run(&["session", "replay", file.to_str().unwrap(), "--json"], None);
    assert!(replay.status.success(), "replay {name}: {}", stderr(&replay));
    let replayed: Value = serde_json::from_str(&stdout(&replay)).unwrap();
    assert_eq!(
        &replayed["messages"], upstream_last,
        "{name}: export + replay is what the upstream last received"
    );
}
