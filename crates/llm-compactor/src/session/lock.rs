//! Opening a transcript for writing: one writer at a time, by advisory lock.
//!
//! Two processes appending to one session would interleave bytes and make the file
//! unreadable, so a writer holds an exclusive `flock` on the file for as long as it is
//! open, and a second writer gets [`SessionError::Locked`] at once rather than waiting.
//! Because a repair replaces the file by rename, a lock is only trusted once the path is
//! checked to still name the locked inode.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::error::SessionError;

/// Mode of every file a session creates.
pub const SESSION_FILE_MODE: u32 = 0o600;

fn try_lock(path: &Path, file: &File) -> Result<(), SessionError> {
    match fs4::FileExt::try_lock(file) {
        Ok(()) => Ok(()),
        Err(fs4::TryLockError::WouldBlock) => Err(SessionError::Locked { path: path.to_owned() }),
        Err(fs4::TryLockError::Error(e)) => Err(SessionError::io(path, e)),
    }
}

/// Opens an existing transcript for reading and appending, exclusively locked.
pub(crate) fn open_locked(path: &Path) -> Result<File, SessionError> {
    for _ in 0..8 {
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| SessionError::io(path, e))?;
        try_lock(path, &file)?;
        let held = file.metadata().map_err(|e| SessionError::io(path, e))?;
        let named = std::fs::metadata(path).map_err(|e| SessionError::io(path, e))?;
        if held.dev() == named.dev() && held.ino() == named.ino() {
            return Ok(file);
        }
        // The file was replaced (repaired) between open and lock: try the new one.
    }
    Err(SessionError::Locked { path: path.to_owned() })
}

/// Creates a new file with mode `mode` (failing if it exists), exclusively locked.
pub(crate) fn create_locked(path: &Path, mode: u32) -> Result<File, SessionError> {
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                SessionError::AlreadyExists { path: path.to_owned() }
            } else {
                SessionError::io(path, e)
            }
        })?;
    try_lock(path, &file)?;
    Ok(file)
}

/// Fsyncs the directory holding `path`, so that a create or a rename is durable.
pub(crate) fn sync_parent(path: &Path) -> Result<(), SessionError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| SessionError::io(dir, e))
}
