//! Sweeping temp files that a killed process left behind.
//!
//! Every atomic write in this project goes through a temp name beside its target — a
//! session repair copy (`.NAME.repair-PID`), a CLI `-o` file (`.NAME.tmp-PID`), a model
//! staging directory (`.fetch-PID-UUID`) — and is renamed into place. A process killed
//! between create and rename leaves the temp behind, and nothing else would ever remove
//! it. So the next run of the same command sweeps the ones that are stale.
//!
//! "Stale" is decided from the name and the clock only, never from the content (which is
//! by definition incomplete and untrusted): the PID in the name is not a live process,
//! or the entry is older than a generous age (a live PID may have been reused). Entries
//! whose name carries no PID are removed only by age. The current process's own entries
//! are never touched. Symbolic links are removed as links, never followed.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The age after which a temp entry is stale even if its PID looks alive (PIDs are
/// reused): a day, far beyond any write, repair or model download.
pub const STALE_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// Removes the stale entries of `dir` whose name is `prefix` followed by a PID (and
/// optionally `-anything`): files, links, or whole directories. Returns the paths
/// removed. Best effort: an entry that cannot be inspected or removed is left (and
/// logged); a missing `dir` removes nothing.
pub fn sweep(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    sweep_older_than(dir, prefix, STALE_AGE)
}

/// [`sweep`] with an explicit age limit.
pub fn sweep_older_than(dir: &Path, prefix: &str, max_age: Duration) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
        if pid == Some(std::process::id()) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age > max_age);
        let dead = pid.is_some_and(|pid| !process_alive(pid));
        if !(old || dead) {
            continue;
        }
        let outcome = if meta.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match outcome {
            Ok(()) => {
                tracing::info!(path = %path.display(), "removed a stale temp file left by a killed process");
                removed.push(path);
            }
            Err(e) => tracing::warn!(path = %path.display(), error = %e, "could not remove a stale temp file"),
        }
    }
    removed.sort();
    removed
}

/// Whether a process with this PID exists. Where that cannot be told (no `/proc`), every
/// PID counts as alive, so only age removes entries.
pub fn process_alive(pid: u32) -> bool {
    if !Path::new("/proc/self").exists() {
        return true;
    }
    Path::new("/proc").join(pid.to_string()).exists()
}
