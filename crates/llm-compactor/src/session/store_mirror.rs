//! [`StoreMirror`]: a session's transcript copied into a shared [`SessionStore`], so that
//! library users get the same shared sessions the proxy has.
//!
//! The JSONL file stays the source of truth of a running [`Session`] (and the default:
//! nothing changes for single-process use). A mirror tails it: [`StoreMirror::sync`]
//! appends the lines written since the last sync, byte for byte, so the store's export
//! is the file. Because store appends are idempotent by envelope id, a sync that failed
//! half-way (the database was down) is simply retried, and a mirror started over an
//! existing file re-sends nothing twice. [`restore_session`] goes the other way: it
//! writes a stored session to a new file and opens it, so another worker (or machine)
//! continues the session where the last one stopped.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use super::error::SessionError;
use super::log::{Session, SessionOptions};
use super::manager::ContextManager;
use crate::store::{SessionStore, StoreError, events_from_jsonl};

/// Copies one session's transcript lines into a store under a key.
#[derive(Debug)]
pub struct StoreMirror {
    store: Arc<dyn SessionStore>,
    key: String,
    synced: u64,
}

/// Why a mirror or a restore failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    /// The store refused or could not be reached (retry [`StoreMirror::sync`] later).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The transcript file could not be read or written.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl StoreMirror {
    /// A mirror of a session into `store` under `key`; nothing is sent before
    /// [`StoreMirror::sync`].
    pub fn new(store: Arc<dyn SessionStore>, key: impl Into<String>) -> Self {
        StoreMirror {
            store,
            key: key.into(),
            synced: 0,
        }
    }

    /// The session key in the store.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Bytes of the transcript already in the store.
    pub fn synced_len(&self) -> u64 {
        self.synced
    }

    /// Appends the session's lines written since the last sync. Returns the store's
    /// last sequence number for the session.
    ///
    /// # Errors
    /// The file could not be read; the store refused or is unavailable (then nothing
    /// is marked as synced, and the next call sends the same lines again, harmlessly).
    pub async fn sync(&mut self, session: &Session) -> Result<u64, MirrorError> {
        let end = session.len();
        let path = session.path().to_owned();
        let start = self.synced.min(end);
        let text = read_range(&path, start, end)?;
        let events = events_from_jsonl(&path.display().to_string(), &text)?;
        let last = self.store.append(&self.key, &events).await?;
        self.synced = end;
        Ok(last)
    }
}

fn read_range(path: &Path, start: u64, end: u64) -> Result<String, SessionError> {
    let io = |e| SessionError::io(path, e);
    let mut file = std::fs::File::open(path).map_err(io)?;
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::with_capacity((end - start) as usize);
    file.take(end - start).read_to_end(&mut bytes).map_err(io)?;
    String::from_utf8(bytes).map_err(|e| SessionError::Encode {
        path: path.to_owned(),
        problem: format!("the transcript is not UTF-8: {e}"),
    })
}

/// Writes the stored session `key` to a new transcript file at `path` (which must not
/// exist) and opens it for appending: the way a worker picks up a shared session.
///
/// # Errors
/// The session is not in the store, the store is unavailable, the file exists, or the
/// stored lines do not replay.
pub async fn restore_session(
    store: &dyn SessionStore,
    key: &str,
    path: &Path,
    options: SessionOptions,
) -> Result<Session, MirrorError> {
    let events = store.events(key, 0).await?;
    if events.is_empty() {
        return Err(StoreError::NoSuchSession(key.to_owned()).into());
    }
    // The stored lines must replay (read as lines, not exported and parsed again).
    super::load::Transcript::from_lines(path, events.iter().map(|e| e.line.as_str())).map_err(SessionError::from)?;
    let text: String = events.iter().map(|e| format!("{}\n", e.line)).collect();
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut file, super::lock::SESSION_FILE_MODE);
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            SessionError::AlreadyExists { path: path.to_owned() }
        } else {
            SessionError::io(path, e)
        }
    };
    let mut handle = file.open(path).map_err(io)?;
    std::io::Write::write_all(&mut handle, text.as_bytes()).map_err(io)?;
    handle.sync_all().map_err(io)?;
    drop(handle);
    let (session, _) = Session::open(path, options)?;
    Ok(session)
}

impl ContextManager {
    /// Copies the transcript lines written since the last call into the mirror's store
    /// (call it after [`ContextManager::prepare`] and [`ContextManager::record_response`]).
    ///
    /// # Errors
    /// As [`StoreMirror::sync`].
    pub async fn sync_store(&self, mirror: &mut StoreMirror) -> Result<u64, MirrorError> {
        mirror.sync(self.session()).await
    }
}
