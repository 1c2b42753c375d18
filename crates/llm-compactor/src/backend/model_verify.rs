//! Verifying a stored model once, and remembering it.
//!
//! A model file of the right size is not necessarily the right model (a truncated
//! download padded back, a swapped file, bit rot), and loading the wrong weights
//! silently gives bad summaries. Hashing ~100 MB on every run is too slow for a command
//! that runs every few turns, so the SHA-256 is checked once and the verification is
//! remembered in a sidecar file beside the model (`.NAME.verified`, JSON: the hash, the
//! size and the modification time in nanoseconds). A later run trusts the file only
//! while its size and mtime are still those recorded and the recorded hash is still
//! the pinned one; anything else hashes it again. The sidecar is written atomically
//! (temp file and rename), and a sidecar that cannot be read or written only costs a
//! re-hash.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::model_store::{ModelSpec, ModelStore, ModelStoreError};

/// What the sidecar records.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Verified {
    sha256: String,
    size: u64,
    mtime_ns: u128,
}

/// The sidecar of a model file: `.NAME.verified` in the same directory.
pub fn sidecar_path(model: &Path) -> PathBuf {
    let name = model
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    model.with_file_name(format!(".{name}.verified"))
}

/// The (size, mtime in ns) of a regular file.
fn stamp(path: &Path) -> Option<(u64, u128)> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some((meta.len(), mtime))
}

/// The hex SHA-256 of a file (blocking).
pub fn sha256_file_blocking(path: &Path) -> Result<String, ModelStoreError> {
    let io = |action, e| ModelStoreError::Io {
        action,
        path: path.to_owned(),
        source: e,
    };
    let mut file = std::fs::File::open(path).map_err(|e| io("open", e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| io("read", e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

impl ModelStore {
    /// The stored file for `spec`, verified: `None` when it is missing or has the wrong
    /// size; its pinned SHA-256 checked the first time (and whenever its size or mtime
    /// changed since), the verification remembered in [`sidecar_path`]. Blocking (it
    /// may hash the file once).
    ///
    /// # Errors
    /// [`ModelStoreError::HashMismatch`] when the file there is not the pinned model (it
    /// is left in place: `fetch` replaces it); an I/O error reading it.
    pub fn locate_verified(&self, spec: &ModelSpec) -> Result<Option<PathBuf>, ModelStoreError> {
        let path = self.path_of(spec);
        let Some((size, mtime_ns)) = stamp(&path) else {
            return Ok(None);
        };
        if size != spec.size {
            return Ok(None);
        }
        let sidecar = sidecar_path(&path);
        let remembered = std::fs::read(&sidecar)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Verified>(&bytes).ok());
        let current = Verified {
            sha256: spec.sha256.clone(),
            size,
            mtime_ns,
        };
        if remembered.as_ref() == Some(&current) {
            return Ok(Some(path));
        }
        let actual = sha256_file_blocking(&path)?;
        if actual != spec.sha256 {
            let _ = std::fs::remove_file(&sidecar);
            return Err(ModelStoreError::HashMismatch {
                file_name: spec.file_name.clone(),
                expected: spec.sha256.clone(),
                actual,
            });
        }
        // The file may have changed while it was hashed: remember only a stable stamp.
        if stamp(&path) == Some((size, mtime_ns)) {
            remember(&sidecar, &current);
        }
        Ok(Some(path))
    }
}

/// Writes the sidecar atomically; failing to is only a warning (the next run re-hashes).
fn remember(sidecar: &Path, verified: &Verified) {
    let temp = crate::atomic::temp_beside(sidecar, "tmp");
    let written = serde_json::to_vec(verified)
        .map_err(std::io::Error::other)
        .and_then(|bytes| std::fs::write(&temp, bytes))
        .and_then(|()| std::fs::rename(&temp, sidecar));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        tracing::warn!(path = %sidecar.display(), %error, "cannot record the model's verification");
    }
}
