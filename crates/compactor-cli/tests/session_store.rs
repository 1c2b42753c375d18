//! `compactor session import FILE --store URL` and `compactor session export --store URL`
//! against a real PostgreSQL cluster (skipped with a notice when PostgreSQL is absent, a
//! failure under `CI=true`): the transcript goes in and comes back byte-identical, a
//! re-import adds nothing, and errors are clear and never show the password.

#![cfg(feature = "postgres")]

use crate::support;

use crate::pg;

use llm_compactor::message::Message;
use llm_compactor::session::{CompactionRecord, Session, SessionOptions};
use support::{run, stderr, stdout};

#[test]
fn a_transcript_round_trips_through_postgres_byte_for_byte() {
    let Some(cluster) = pg::PgCluster::start() else { return };
    let url = cluster.database("cli");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run-7.jsonl");
    let mut session = Session::create(&file, SessionOptions::new()).unwrap();
    session.append_message(Message::system("You are careful.")).unwrap();
    session.append_message(Message::user("Fix the build — «ü» 🦀")).unwrap();
    let through = session
        .append_message(Message::assistant("looking"))
        .unwrap()
        .id
        .clone()
        .unwrap();
    session
        .append_compaction({
            let mut record = CompactionRecord::new(through, "[hard trim]".to_owned());
            record.dropped = 1;
            record.fallback = true;
            record.tokens_after = 5;
            record.tokens_before = 50;
            record
        })
        .unwrap();
    session.append_message(Message::user("and now?")).unwrap();
    drop(session);
    let original = std::fs::read(&file).unwrap();

    let out = run(&["session", "import", file.to_str().unwrap(), "--store", &url], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("imported 6 of 6 lines into session \"run-7\""),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains(pg::PASSWORD));
    // Idempotent: a re-run stores nothing new.
    let out = run(&["session", "import", file.to_str().unwrap(), "--store", &url], None);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("imported 0 of 6 lines"), "{}", stderr(&out));

    let exported = dir.path().join("back.jsonl");
    let out = run(
        &[
            "session",
            "export",
            "--store",
            &url,
            "run-7",
            "-o",
            exported.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read(&exported).unwrap(), original, "byte-identical export");
    // To stdout as well, and it replays to the same conversation.
    let out = run(&["session", "export", "--store", &url, "run-7", "-o", "-"], None);
    assert_eq!(out.stdout, original);
    let a = run(&["session", "replay", file.to_str().unwrap(), "--json"], None);
    let b = run(&["session", "replay", exported.to_str().unwrap(), "--json"], None);
    assert_eq!(stdout(&a), stdout(&b));

    // Another name, through --session; a different file under a taken name is refused.
    let out = run(
        &[
            "session",
            "import",
            file.to_str().unwrap(),
            "--store",
            &url,
            "--session",
            "copy",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let other = dir.path().join("other.jsonl");
    let mut session = Session::create(&other, SessionOptions::new()).unwrap();
    session.append_message(Message::user("something else")).unwrap();
    drop(session);
    let out = run(
        &[
            "session",
            "import",
            other.to_str().unwrap(),
            "--store",
            &url,
            "--session",
            "copy",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already holds a different transcript"),
        "{}",
        stderr(&out)
    );

    // An unknown session: exit 1, the file is not written.
    let missing = dir.path().join("missing.jsonl");
    let out = run(
        &[
            "session",
            "export",
            "--store",
            &url,
            "nobody",
            "-o",
            missing.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no session \"nobody\""), "{}", stderr(&out));
    assert!(!missing.exists());

    // The server down: a clear failure without the password.
    cluster.stop();
    let out = run(
        &[
            "session",
            "export",
            "--store",
            &url,
            "run-7",
            "-o",
            missing.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("unavailable"), "{}", stderr(&out));
    assert!(!stderr(&out).contains(pg::PASSWORD), "{}", stderr(&out));
}
