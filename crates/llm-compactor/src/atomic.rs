//! The temp names of atomic writes, in one place.
//!
//! Every atomic write in this project — a session repair copy, an imported session, a
//! CLI `-o` file, a model's verification sidecar, a model's staging directory — goes
//! through a temp name beside its target and is renamed (or linked) into place. The
//! names are made here and only here, `.NAME.KIND-PID` beside a file and
//! `.KIND-PID-UNIQUE` for a staging directory, because the sweep that removes what a
//! killed writer left ([`crate::stale`]) recognises its leftovers by exactly that shape:
//! asking for a temp name first sweeps the stale ones of the same kind.

use std::path::{Path, PathBuf};

/// The directory a file is written in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The temp name beside `target` for an atomic write of kind `kind`
/// (`DIR/.NAME.KIND-PID`), after sweeping the stale temp files of that kind a killed
/// process left beside it. The caller writes it, then renames it over `target`.
pub fn temp_beside(target: &Path, kind: &str) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let dir = parent_dir(target);
    let prefix = format!(".{name}.{kind}-");
    crate::stale::sweep(dir, &prefix);
    dir.join(format!("{prefix}{}", std::process::id()))
}

/// A fresh staging name in `dir` (`DIR/.KIND-PID-UNIQUE`), after sweeping the stale
/// staging entries of that kind.
pub fn staging_in(dir: &Path, kind: &str) -> PathBuf {
    crate::stale::sweep(dir, &format!(".{kind}-"));
    dir.join(format!(
        ".{kind}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ))
}
