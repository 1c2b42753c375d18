//! [`MemoryStore`]: a [`SessionStore`] in one process's memory, for tests and for
//! single-process callers that want the store API without durability.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{NewEvent, Rewrite, SessionInfo, SessionStore, StoreError, StoredEvent};

#[derive(Debug, Default)]
struct SessionState {
    events: Vec<StoredEvent>,
    ids: HashSet<String>,
    rewrite: Option<Rewrite>,
    lease: Option<(String, Instant)>,
}

/// Sessions held in memory behind one mutex; lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<BTreeMap<String, SessionState>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, SessionState>> {
        // A panic while holding the lock leaves consistent data (every mutation is a
        // single push or assignment), so a poisoned lock is still safe to use.
        self.sessions.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn append(&self, session: &str, events: &[NewEvent]) -> Result<u64, StoreError> {
        let mut sessions = self.lock();
        let state = sessions.entry(session.to_owned()).or_default();
        for event in events {
            if state.ids.insert(event.id.clone()) {
                let seq = state.events.len() as u64 + 1;
                state.events.push(StoredEvent {
                    seq,
                    id: event.id.clone(),
                    kind: event.kind.clone(),
                    line: event.line.clone(),
                });
            }
        }
        Ok(state.events.len() as u64)
    }

    async fn events(&self, session: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let sessions = self.lock();
        Ok(sessions
            .get(session)
            .map(|state| state.events.iter().filter(|e| e.seq > after).cloned().collect())
            .unwrap_or_default())
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let sessions = self.lock();
        Ok(sessions
            .iter()
            .filter(|(_, state)| !state.events.is_empty())
            .map(|(key, state)| SessionInfo {
                session: key.clone(),
                events: state.events.len() as u64,
                last_ts: state.events.last().and_then(|e| timestamp_of(&e.line)),
            })
            .collect())
    }

    async fn rewrite(&self, session: &str) -> Result<Option<Rewrite>, StoreError> {
        Ok(self.lock().get(session).and_then(|state| state.rewrite.clone()))
    }

    async fn set_rewrite(
        &self,
        session: &str,
        expected_generation: u64,
        rewrite: &Rewrite,
    ) -> Result<bool, StoreError> {
        let mut sessions = self.lock();
        let state = sessions.entry(session.to_owned()).or_default();
        let current = state.rewrite.as_ref().map_or(0, |r| r.generation);
        if current != expected_generation {
            return Ok(false);
        }
        state.rewrite = Some(rewrite.clone());
        Ok(true)
    }

    async fn try_lease(&self, session: &str, holder: &str, ttl: Duration) -> Result<bool, StoreError> {
        let mut sessions = self.lock();
        let state = sessions.entry(session.to_owned()).or_default();
        let now = Instant::now();
        let free = match &state.lease {
            None => true,
            Some((who, until)) => who == holder || *until <= now,
        };
        if free {
            state.lease = Some((holder.to_owned(), now + ttl));
        }
        Ok(free)
    }

    async fn release_lease(&self, session: &str, holder: &str) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        if let Some(state) = sessions.get_mut(session)
            && state.lease.as_ref().is_some_and(|(who, _)| who == holder)
        {
            state.lease = None;
        }
        Ok(())
    }
}

/// The `ts` field of an envelope line, if it has one.
pub(crate) fn timestamp_of(line: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    value.get("ts")?.as_str().map(str::to_owned)
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
    async fn appends_are_idempotent_by_id_and_ordered() {
        let store = MemoryStore::new();
        assert_eq!(store.append("s", &[event("a"), event("b")]).await.unwrap(), 2);
        assert_eq!(store.append("s", &[event("b"), event("c")]).await.unwrap(), 3);
        let ids: Vec<_> = store
            .events("s", 1)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.seq, e.id))
            .collect();
        assert_eq!(ids, vec![(2, "b".to_owned()), (3, "c".to_owned())]);
        let exported = super::super::export_jsonl(&store, "s").await.unwrap();
        assert_eq!(exported.lines().count(), 3);
        assert!(matches!(
            super::super::export_jsonl(&store, "nope").await,
            Err(StoreError::NoSuchSession(_))
        ));
    }

    #[tokio::test]
    async fn rewrite_is_compare_and_set() {
        let store = MemoryStore::new();
        let rewrite = |generation| Rewrite {
            original_len: 3,
            original_digest: "d".into(),
            replacement: "[]".into(),
            generation,
        };
        assert!(store.set_rewrite("s", 0, &rewrite(1)).await.unwrap());
        assert!(!store.set_rewrite("s", 0, &rewrite(2)).await.unwrap());
        assert!(store.set_rewrite("s", 1, &rewrite(2)).await.unwrap());
        assert_eq!(store.rewrite("s").await.unwrap().unwrap().generation, 2);
    }

    #[tokio::test]
    async fn lease_is_exclusive_until_released_or_expired() {
        let store = MemoryStore::new();
        assert!(store.try_lease("s", "a", Duration::from_secs(60)).await.unwrap());
        assert!(!store.try_lease("s", "b", Duration::from_secs(60)).await.unwrap());
        assert!(store.try_lease("s", "a", Duration::from_secs(60)).await.unwrap());
        store.release_lease("s", "a").await.unwrap();
        assert!(store.try_lease("s", "b", Duration::ZERO).await.unwrap());
        // b's lease has a zero ttl: it is already expired, so a may take it.
        assert!(store.try_lease("s", "a", Duration::from_secs(60)).await.unwrap());
    }
}
