//! Creating a transcript with a whole conversation in it, atomically.
//!
//! Importing a conversation appends many lines; a process killed or out of disk midway
//! must not leave a transcript that replays a prefix with no warning (and that makes a
//! retry fail with "already exists"). So the lines are written to a temp file beside
//! the target, fsynced, and only then linked into place — with `link(2)`, which refuses
//! to replace a file that appeared meanwhile, as `create` would. Until that moment the
//! target does not exist; a killed import leaves only a temp file, which the next import
//! into that directory sweeps ([`crate::stale`]).

use std::path::Path;

use super::error::SessionError;
use super::lock::sync_parent;
use super::log::{Session, SessionOptions};
use crate::message::Message;

impl Session {
    /// Creates a new transcript holding `messages` (mode 0600), atomically: either the
    /// file appears whole and fsynced, or it does not appear at all. The returned session
    /// is open and locked for further appends.
    ///
    /// # Errors
    /// The file exists ([`SessionError::AlreadyExists`]), a message that cannot be
    /// appended (a reused id), or I/O. Nothing is left at `path` on error.
    pub fn create_with_messages(
        path: impl AsRef<Path>,
        options: SessionOptions,
        messages: impl IntoIterator<Item = Message>,
    ) -> Result<Session, SessionError> {
        let path = path.as_ref().to_owned();
        if path.symlink_metadata().is_ok() {
            return Err(SessionError::AlreadyExists { path });
        }
        let temp = crate::atomic::temp_beside(&path, "import");
        let _ = std::fs::remove_file(&temp);
        let outcome = write_then_link(&temp, &path, options, messages);
        let _ = std::fs::remove_file(&temp);
        outcome
    }
}

fn write_then_link(
    temp: &Path,
    path: &Path,
    options: SessionOptions,
    messages: impl IntoIterator<Item = Message>,
) -> Result<Session, SessionError> {
    let mut session = Session::create(temp, options)?;
    session.append_messages(messages)?;
    session.sync()?;
    match std::fs::hard_link(temp, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(SessionError::AlreadyExists { path: path.to_owned() });
        }
        // A file system without hard links: rename (the existence check above is the
        // best that can be done there).
        Err(_) if path.symlink_metadata().is_err() => {
            std::fs::rename(temp, path).map_err(|e| SessionError::io(path, e))?;
        }
        Err(e) => return Err(SessionError::io(path, e)),
    }
    sync_parent(path)?;
    session.set_path(path.to_owned());
    Ok(session)
}
