//! Reading a transcript from where it lives: the file, or a [`SessionStore`]. The
//! parsing and replay are pure and live in [`crate::transcript`] (its `load` rules: strict
//! about everything except a torn final line); this is the shell that fetches the bytes
//! or the stored events and locates errors as [`SessionError`]s.

use std::path::Path;

use super::error::SessionError;
use crate::store::{SessionStore, StoreError};
pub use crate::transcript::{LoadError, TornTail, Transcript};

impl From<LoadError> for SessionError {
    fn from(e: LoadError) -> Self {
        SessionError::Malformed {
            path: e.path,
            line: e.line,
            problem: e.problem,
        }
    }
}

impl Transcript {
    /// Reads and replays a transcript without changing it. A torn final line is reported
    /// in [`Transcript::torn_tail`] (and ignored); repair it with [`super::repair`] or by
    /// opening the session for appending.
    ///
    /// # Errors
    /// I/O, or a malformed line ([`SessionError::Malformed`] names it).
    pub fn read(path: &Path) -> Result<Transcript, SessionError> {
        let bytes = std::fs::read(path).map_err(|e| SessionError::io(path, e))?;
        Transcript::parse(path, &bytes)
    }

    /// Replays transcript bytes; `path` is only used to name errors (see
    /// [`Transcript::from_bytes`]).
    ///
    /// # Errors
    /// A malformed line.
    pub fn parse(path: &Path, bytes: &[u8]) -> Result<Transcript, SessionError> {
        Ok(Transcript::from_bytes(path, bytes)?)
    }

    /// The transcript of session `key` in `store`, replayed from its stored events
    /// (not exported to text and parsed again; see [`Transcript::from_lines`]).
    ///
    /// # Errors
    /// [`StoreError::NoSuchSession`] when the store holds no event of `key`; the store's
    /// own errors; [`StoreError::Backend`] naming the line when a stored line does not
    /// replay (stored data is corrupt).
    pub async fn from_store(store: &dyn SessionStore, key: &str) -> Result<Transcript, StoreError> {
        let events = store.events(key, 0).await?;
        if events.is_empty() {
            return Err(StoreError::NoSuchSession(key.to_owned()));
        }
        Transcript::from_lines(Path::new(key), events.iter().map(|e| e.line.as_str()))
            .map_err(|e| StoreError::Backend(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use crate::store::{MemoryStore, NewEvent};
    use crate::transcript::{Lines, Record, Replayer};

    fn stored_lines() -> Vec<String> {
        let (mut lines, mut replayer) = (Lines::default(), Replayer::new());
        lines.push_meta(&mut replayer, Default::default()).unwrap();
        lines
            .push(&mut replayer, Record::Message(Message::user("Fix the build.")))
            .unwrap();
        lines
            .push(&mut replayer, Record::Message(Message::assistant("Fixed.")))
            .unwrap();
        lines.take().into_iter().map(|line| line.text).collect()
    }

    #[tokio::test]
    async fn a_store_reads_as_its_export_would_without_the_text() {
        let lines = stored_lines();
        let store = MemoryStore::new();
        let events: Vec<NewEvent> = lines
            .iter()
            .map(|text| {
                let value: serde_json::Value = serde_json::from_str(text).unwrap();
                NewEvent {
                    id: value["id"].as_str().unwrap().to_owned(),
                    kind: value["type"].as_str().unwrap().to_owned(),
                    line: text.clone(),
                }
            })
            .collect();
        store.append("s", &events).await.unwrap();
        let from_store = Transcript::from_store(&store, "s").await.unwrap();
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let parsed = Transcript::parse(Path::new("s"), text.as_bytes()).unwrap();
        assert_eq!(from_store.entries(), parsed.entries());
        assert_eq!(from_store.messages(), parsed.messages());
        assert_eq!(from_store.good_len(), parsed.good_len());
        assert!(matches!(
            Transcript::from_store(&store, "nope").await,
            Err(StoreError::NoSuchSession(key)) if key == "nope"
        ));
    }

    #[test]
    fn a_stored_line_that_does_not_replay_is_named_and_never_a_torn_tail() {
        let mut lines = stored_lines();
        // A final line that is not JSON: a file would call it torn; a store's is corrupt.
        lines.push("{\"id\":".to_owned());
        let err = Transcript::from_lines(Path::new("key"), lines.iter().map(String::as_str)).unwrap_err();
        assert_eq!((err.line, err.path.as_path()), (4, Path::new("key")));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let file = Transcript::parse(Path::new("f"), text.as_bytes()).unwrap();
        assert_eq!(file.torn_tail().map(|t| t.line), Some(4));
        let session: SessionError = err.into();
        assert!(matches!(session, SessionError::Malformed { line: 4, .. }));
    }
}
