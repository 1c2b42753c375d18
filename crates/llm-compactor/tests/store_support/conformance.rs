//! The conformance suite of [`SessionStore`]: generic async checks that every store
//! (memory, PostgreSQL, SQLite) must pass with the same results.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use llm_compactor::message::Message;
use llm_compactor::session::{
    CompactionRecord, ElisionItem, FixedClock, SequentialIds, Session, SessionOptions, Transcript,
};
use llm_compactor::store::{NewEvent, Rewrite, SessionStore, StoreError, events_from_jsonl, export_jsonl};

/// A real transcript file written by [`Session`] (messages, an elision, a compaction,
/// non-ASCII and escapes) and its events. Returns (file bytes, events).
pub fn real_transcript(messages: usize) -> (String, Vec<NewEvent>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.jsonl");
    let options = SessionOptions::new()
        .clock(Arc::new(FixedClock::epoch()))
        .ids(Arc::new(SequentialIds::new()));
    let mut session = Session::create(&path, options).expect("create session");
    session
        .append_message(Message::user("Fix the build — «naïve» \"quotes\" \\ tab\t and 🦀"))
        .unwrap();
    let mut tool_id = None;
    for i in 0..messages {
        let message = if i % 2 == 0 {
            Message::assistant(format!("step {i}: reading the file"))
        } else {
            Message::tool("call", format!("output {i}\n{}", "line of output ".repeat(8)))
        };
        let stored = session.append_message(message).unwrap();
        if i == 1 {
            tool_id = stored.id.clone();
        }
    }
    if let Some(id) = tool_id {
        session
            .append_elision(vec![ElisionItem::new(id, "[elided by the harness: 120 tokens]")])
            .unwrap();
    }
    let through = session.messages()[2].id.clone().unwrap();
    session
        .append_compaction({
            let mut record = CompactionRecord::new(through, "Summary: the build was fixed.".to_owned());
            record.dropped = 2;
            record.tokens_after = 10;
            record.tokens_before = 100;
            record
        })
        .unwrap();
    // A NUL byte in a tool's output (JSONB cannot hold it; the exact line must survive).
    session.append_message(Message::user("binary \0 output")).unwrap();
    session.append_message(Message::user("thanks")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let events = events_from_jsonl("s.jsonl", &text).unwrap();
    (text, events)
}

/// A synthetic event with a unique id.
pub fn event(id: &str) -> NewEvent {
    NewEvent {
        id: id.to_owned(),
        kind: "note".to_owned(),
        line: format!(r#"{{"id":"{id}","payload":{{}},"ts":"2026-01-01T00:00:00.000000Z","type":"note","v":1}}"#),
    }
}

/// Appends are idempotent by id (a retried batch stores nothing twice), in order,
/// `events(after)` filters, an unknown session is empty.
pub async fn idempotent_ordered_appends(store: &dyn SessionStore, prefix: &str) {
    let s = format!("{prefix}-idem");
    assert_eq!(store.append(&s, &[event("a"), event("b")]).await.unwrap(), 2);
    // A retry of the same batch, and a batch overlapping it: only "c" is new.
    assert_eq!(store.append(&s, &[event("a"), event("b")]).await.unwrap(), 2);
    assert_eq!(
        store.append(&s, &[event("b"), event("c"), event("c")]).await.unwrap(),
        3
    );
    assert_eq!(store.append(&s, &[]).await.unwrap(), 3);
    let all = store.events(&s, 0).await.unwrap();
    let got: Vec<(u64, &str)> = all.iter().map(|e| (e.seq, e.id.as_str())).collect();
    assert_eq!(got, [(1, "a"), (2, "b"), (3, "c")]);
    assert_eq!(all[2].line, event("c").line);
    assert_eq!(all[2].kind, "note");
    let after: Vec<u64> = store.events(&s, 2).await.unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(after, [3]);
    assert!(store.events(&format!("{prefix}-nobody"), 0).await.unwrap().is_empty());
    assert!(matches!(
        export_jsonl(store, &format!("{prefix}-nobody")).await,
        Err(StoreError::NoSuchSession(_))
    ));
    // Sessions do not share ids: the same id in another session is its own event.
    let other = format!("{prefix}-idem-other");
    assert_eq!(store.append(&other, &[event("a")]).await.unwrap(), 1);
}

/// Many tasks append to one session at once: every event stored once, seqs 1..=n.
pub async fn concurrent_appends(store: Arc<dyn SessionStore>, prefix: &str) {
    let s = format!("{prefix}-concurrent");
    let tasks = 16;
    let per_task = 12;
    let mut handles = Vec::new();
    for t in 0..tasks {
        let store = store.clone();
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..per_task {
                let batch = [event(&format!("t{t}-{i}")), event(&format!("t{t}-{i}-b"))];
                store.append(&s, &batch).await.unwrap();
                // A retry, as after a lost reply.
                store.append(&s, &batch[1..]).await.unwrap();
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    let events = store.events(&s, 0).await.unwrap();
    let expected = tasks * per_task * 2;
    assert_eq!(events.len(), expected);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=expected as u64).collect::<Vec<_>>(),
        "seqs are gap-free and ordered"
    );
    let ids: HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), expected, "no duplicated event");
    // Each task's events keep their order.
    for t in 0..tasks {
        let mine: Vec<&str> = events
            .iter()
            .map(|e| e.id.as_str())
            .filter(|id| id.starts_with(&format!("t{t}-")))
            .collect();
        let want: Vec<String> = (0..per_task)
            .flat_map(|i| [format!("t{t}-{i}"), format!("t{t}-{i}-b")])
            .collect();
        assert_eq!(mine, want);
    }
}

/// The rewrite is replaced by compare-and-set on its generation.
pub async fn rewrite_compare_and_set(store: &dyn SessionStore, prefix: &str) {
    let s = format!("{prefix}-rewrite");
    let rewrite = |generation: u64| Rewrite {
        original_len: 3 + generation as usize,
        original_digest: format!("digest-{generation}"),
        replacement: format!(r#"[{{"role":"user","content":"gen {generation} «ü»"}}]"#),
        generation,
    };
    assert_eq!(store.rewrite(&s).await.unwrap(), None);
    assert!(store.set_rewrite(&s, 0, &rewrite(1)).await.unwrap());
    assert!(
        !store.set_rewrite(&s, 0, &rewrite(2)).await.unwrap(),
        "expected 0 but 1 is there"
    );
    assert!(!store.set_rewrite(&s, 5, &rewrite(6)).await.unwrap());
    assert_eq!(store.rewrite(&s).await.unwrap(), Some(rewrite(1)));
    assert!(store.set_rewrite(&s, 1, &rewrite(2)).await.unwrap());
    assert_eq!(store.rewrite(&s).await.unwrap(), Some(rewrite(2)));
    // A rewrite alone does not make a session appear in the listing.
    let listed: Vec<String> = store.sessions().await.unwrap().into_iter().map(|i| i.session).collect();
    assert!(!listed.contains(&s));
}

/// Concurrent compare-and-set: exactly one writer wins each generation.
pub async fn rewrite_race(store: Arc<dyn SessionStore>, prefix: &str) {
    let s = format!("{prefix}-rewrite-race");
    let mut handles = Vec::new();
    for w in 0..8u64 {
        let store = store.clone();
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            let rewrite = Rewrite {
                original_len: w as usize,
                original_digest: format!("w{w}"),
                replacement: "[]".to_owned(),
                generation: 1,
            };
            store.set_rewrite(&s, 0, &rewrite).await.unwrap()
        }));
    }
    let mut wins = 0;
    for handle in handles {
        wins += usize::from(handle.await.unwrap());
    }
    assert_eq!(wins, 1, "exactly one compare-and-set wins");
}

/// The lease has one holder at a time; the holder renews; release frees it; an expired
/// lease (a crashed holder's) is taken over.
pub async fn lease_exclusive_and_expiring(store: &dyn SessionStore, prefix: &str) {
    let s = format!("{prefix}-lease");
    let long = Duration::from_secs(600);
    assert!(store.try_lease(&s, "a", long).await.unwrap());
    assert!(!store.try_lease(&s, "b", long).await.unwrap());
    assert!(store.try_lease(&s, "a", long).await.unwrap(), "renewal");
    store.release_lease(&s, "b").await.unwrap(); // not b's: no effect
    assert!(!store.try_lease(&s, "b", long).await.unwrap());
    store.release_lease(&s, "a").await.unwrap();
    // b crashes holding a lease that has (zero ttl) already expired: a takes it over.
    assert!(store.try_lease(&s, "b", Duration::ZERO).await.unwrap());
    assert!(store.try_lease(&s, "a", long).await.unwrap());
    assert!(!store.try_lease(&s, "b", long).await.unwrap());
    // Leases are per session.
    assert!(store.try_lease(&format!("{s}-2"), "b", long).await.unwrap());
}

/// Many tasks race for one lease: exactly one wins.
pub async fn lease_race(store: Arc<dyn SessionStore>, prefix: &str) {
    let s = format!("{prefix}-lease-race");
    let mut handles = Vec::new();
    for w in 0..16 {
        let store = store.clone();
        let s = s.clone();
        handles.push(tokio::spawn(async move {
            store
                .try_lease(&s, &format!("w{w}"), Duration::from_secs(600))
                .await
                .unwrap()
        }));
    }
    let mut wins = 0;
    for handle in handles {
        wins += usize::from(handle.await.unwrap());
    }
    assert_eq!(wins, 1, "exactly one holder");
}

/// A real transcript stored event by event (and half of it twice) exports to the very
/// bytes of the file, and the export replays to the same conversation.
pub async fn export_is_byte_identical(store: &dyn SessionStore, prefix: &str) {
    let s = format!("{prefix}-export");
    let (text, events) = real_transcript(9);
    let half = events.len() / 2;
    store.append(&s, &events[..half]).await.unwrap();
    store.append(&s, &events[..half + 1]).await.unwrap();
    for event in &events[half + 1..] {
        store.append(&s, std::slice::from_ref(event)).await.unwrap();
    }
    let exported = export_jsonl(store, &s).await.unwrap();
    assert_eq!(exported, text, "export is byte-identical to the session file");
    let path = std::path::Path::new("export.jsonl");
    let from_store = Transcript::parse(path, exported.as_bytes()).unwrap();
    let from_file = Transcript::parse(path, text.as_bytes()).unwrap();
    assert_eq!(from_store.messages(), from_file.messages());
    assert!(
        from_store
            .messages()
            .iter()
            .any(|m| m.content.text().contains("Summary: the build was fixed."))
    );
    let info = store
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .find(|i| i.session == s)
        .expect("listed");
    assert_eq!(info.events, events.len() as u64);
    assert_eq!(info.last_ts.as_deref(), Some("2025-01-01T00:00:00.000000Z"));
}

/// Sessions are listed in key order (bytewise), each with its event count.
pub async fn sessions_are_listed_in_order(store: &dyn SessionStore, prefix: &str) {
    let keys = [
        format!("{prefix}-list-b"),
        format!("{prefix}-list-B"),
        format!("{prefix}-list-a"),
    ];
    for (n, key) in keys.iter().enumerate() {
        let batch: Vec<NewEvent> = (0..=n).map(|i| event(&format!("e{i}"))).collect();
        store.append(key, &batch).await.unwrap();
    }
    let listed: Vec<(String, u64)> = store
        .sessions()
        .await
        .unwrap()
        .into_iter()
        .filter(|i| i.session.starts_with(&format!("{prefix}-list-")))
        .map(|i| (i.session, i.events))
        .collect();
    let mut want: Vec<(String, u64)> = keys
        .iter()
        .enumerate()
        .map(|(n, k)| (k.clone(), n as u64 + 1))
        .collect();
    want.sort();
    assert_eq!(listed, want);
}

/// Every check, in turn, on one store (session keys start with `prefix`).
pub async fn run_all(store: Arc<dyn SessionStore>, prefix: &str) {
    idempotent_ordered_appends(store.as_ref(), prefix).await;
    concurrent_appends(store.clone(), prefix).await;
    rewrite_compare_and_set(store.as_ref(), prefix).await;
    rewrite_race(store.clone(), prefix).await;
    lease_exclusive_and_expiring(store.as_ref(), prefix).await;
    lease_race(store.clone(), prefix).await;
    export_is_byte_identical(store.as_ref(), prefix).await;
    sessions_are_listed_in_order(store.as_ref(), prefix).await;
}
