//! Repairing a torn final line: copy the good prefix to a temp file, rename it over.
//!
//! The original is never truncated in place: until the rename, the file on disk is the
//! one that was there, and after it, it is the good prefix, whole. The temp file is
//! created with the original's permission bits and locked before the rename, so the lock
//! carries over to the repaired file.
//!
//! A transcript reached through a symbolic link is repaired where it really is: the link
//! is resolved and the real file replaced, so the link keeps pointing at the one session
//! (renaming over the link would replace it by a regular file and fork the session).
//! Repair copies left by a killed repair are swept before a new one is made.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::error::SessionError;
use super::load::{TornTail, Transcript};
use super::lock::{create_locked, open_locked, sync_parent};

/// Repairs a transcript whose final line is torn, under the session lock. Returns the torn
/// tail that was removed, or `None` when the file was whole (and is left untouched).
///
/// # Errors
/// I/O, a held lock, or any malformed line other than a torn final one (the file is then
/// left untouched).
pub fn repair(path: &Path) -> Result<Option<TornTail>, SessionError> {
    let mut file = open_locked(path)?;
    let bytes = read_all(path, &mut file)?;
    let transcript = Transcript::parse(path, &bytes)?;
    match transcript.torn_tail() {
        None => Ok(None),
        Some(torn) => {
            let torn = torn.clone();
            rewrite_prefix(path, &file, &bytes[..torn.offset as usize], &torn)?;
            Ok(Some(torn))
        }
    }
}

pub(crate) fn read_all(path: &Path, file: &mut File) -> Result<Vec<u8>, SessionError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| SessionError::io(path, e))?;
    Ok(bytes)
}

/// Replaces `path` by a file holding `prefix`; returns the new file, locked and open for
/// appending. `original` is the locked handle of the file being replaced.
pub(crate) fn rewrite_prefix(
    path: &Path,
    original: &File,
    prefix: &[u8],
    torn: &TornTail,
) -> Result<File, SessionError> {
    let mode = original
        .metadata()
        .map_err(|e| SessionError::io(path, e))?
        .permissions()
        .mode()
        & 0o7777;
    // Replace the file the path names, not a link on the way to it.
    let real = std::fs::canonicalize(path).map_err(|e| SessionError::io(path, e))?;
    let temp = crate::atomic::temp_beside(&real, "repair");
    let _ = std::fs::remove_file(&temp);
    let mut file = create_locked(&temp, mode)?;
    let written = file
        .write_all(prefix)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, &real));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(SessionError::io(path, e));
    }
    sync_parent(&real)?;
    tracing::warn!(
        path = %path.display(),
        line = torn.line,
        bytes = torn.bytes,
        "repaired a torn final line of a session transcript (a partial write was removed)"
    );
    Ok(file)
}
