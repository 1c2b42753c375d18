//! The store conformance suite on the in-memory store, and the session mirror that puts
//! a library user's transcript into a store (and restores it elsewhere).

use crate::store_support;

use std::sync::Arc;

use llm_compactor::message::Message;
use llm_compactor::session::{Session, SessionOptions, StoreMirror, Transcript, restore_session};
use llm_compactor::store::{MemoryStore, SessionStore, export_jsonl, open_store};
use store_support::conformance;

#[tokio::test]
async fn the_memory_store_conforms() {
    conformance::run_all(Arc::new(MemoryStore::new()), "mem").await;
}

#[tokio::test]
async fn open_store_gives_a_conforming_memory_store() {
    conformance::run_all(open_store("memory:").await.unwrap(), "opened").await;
}

/// A library session mirrored into a store exports to the file's bytes, a sync resumes
/// where it stopped, and another worker restores and continues the same session.
#[tokio::test]
async fn a_mirrored_session_is_shared_and_continued_elsewhere() {
    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("worker-1.jsonl");
    let mut session = Session::create(&first, SessionOptions::new()).unwrap();
    let mut mirror = StoreMirror::new(store.clone(), "shared");
    session.append_message(Message::user("hello")).unwrap();
    assert_eq!(mirror.sync(&session).await.unwrap(), 2);
    session.append_message(Message::assistant("hi — «ü»")).unwrap();
    session.append_message(Message::user("go on")).unwrap();
    assert_eq!(mirror.sync(&session).await.unwrap(), 4);
    assert_eq!(mirror.sync(&session).await.unwrap(), 4, "nothing new, nothing sent");
    assert_eq!(mirror.synced_len(), session.len());
    assert_eq!(
        export_jsonl(store.as_ref(), "shared").await.unwrap(),
        std::fs::read_to_string(&first).unwrap()
    );

    // A mirror started over an existing file re-sends it without duplicating anything.
    let mut again = StoreMirror::new(store.clone(), "shared");
    assert_eq!(again.sync(&session).await.unwrap(), 4);
    drop(session);

    // Another worker picks the session up from the store and continues it.
    let second = dir.path().join("worker-2.jsonl");
    let mut continued = restore_session(store.as_ref(), "shared", &second, SessionOptions::new())
        .await
        .unwrap();
    assert_eq!(continued.messages().len(), 3);
    continued.append_message(Message::assistant("continuing")).unwrap();
    let mut mirror = StoreMirror::new(store.clone(), "shared");
    assert_eq!(mirror.sync(&continued).await.unwrap(), 5);
    let exported = export_jsonl(store.as_ref(), "shared").await.unwrap();
    assert_eq!(exported, std::fs::read_to_string(&second).unwrap());
    let replayed = Transcript::parse(&second, exported.as_bytes()).unwrap();
    assert_eq!(replayed.messages(), continued.messages());

    // Restoring onto an existing file is refused and leaves it as it was.
    let before = std::fs::read(&second).unwrap();
    drop(continued);
    assert!(
        restore_session(store.as_ref(), "shared", &second, SessionOptions::new())
            .await
            .is_err()
    );
    assert_eq!(std::fs::read(&second).unwrap(), before);
    // An unknown session cannot be restored.
    assert!(
        restore_session(
            store.as_ref(),
            "nobody",
            &dir.path().join("x.jsonl"),
            SessionOptions::new()
        )
        .await
        .is_err()
    );
    assert!(!dir.path().join("x.jsonl").exists());
}

/// The agent-loop glue mirrors into the store as it goes: after a pass that compacted,
/// the store holds the file's bytes, pass lines included.
#[tokio::test]
async fn a_context_manager_syncs_its_passes_into_the_store() {
    use llm_compactor::compactor::{Compactor, CompactorConfig};
    use llm_compactor::count::HeuristicCounter;
    use llm_compactor::session::{ContextManager, RequestShape};
    use tokio_util::sync::CancellationToken;

    let store: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.jsonl");
    let config = CompactorConfig::builder(2_000).keep_recent(2).build().unwrap();
    let compactor = Compactor::new(config, Arc::new(HeuristicCounter));
    let session = Session::create(&path, SessionOptions::new()).unwrap();
    let mut manager = ContextManager::new(Arc::new(compactor), session);
    let mut mirror = StoreMirror::new(store.clone(), "agent");
    manager.push(Message::user("Fix the build.")).unwrap();
    for i in 0..12 {
        manager
            .record_response(
                None,
                "m",
                [
                    Message::assistant(format!("step {i}")),
                    Message::user("output ".repeat(120)),
                ],
            )
            .unwrap();
        manager.sync_store(&mut mirror).await.unwrap();
    }
    let prepared = manager
        .prepare(RequestShape::default(), CancellationToken::new())
        .await
        .unwrap();
    assert!(prepared.pass.is_some(), "the conversation is over budget: a pass ran");
    manager.sync_store(&mut mirror).await.unwrap();
    let exported = export_jsonl(store.as_ref(), "agent").await.unwrap();
    assert_eq!(exported, std::fs::read_to_string(&path).unwrap());
    let kinds: Vec<String> = store
        .events("agent", 0)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(kinds.iter().any(|k| k == "compaction" || k == "elision"), "{kinds:?}");
    let replayed = Transcript::parse(&path, exported.as_bytes()).unwrap();
    assert_eq!(replayed.messages(), manager.messages());
}
