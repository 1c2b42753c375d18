//! [`SessionError`]: everything that can go wrong with a transcript, located.

use std::path::PathBuf;

use crate::transcript::replay::ReplayError;

/// A transcript could not be created, read, repaired or appended to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The file system said no.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Another process (or another handle in this one) holds the session's lock.
    #[error("{}: the session is locked by another writer (only one process may append to a session at a time)", path.display())]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// A new session was asked for where a file already exists.
    #[error("{}: already exists (open it to append, or choose another path)", path.display())]
    AlreadyExists {
        /// The file.
        path: PathBuf,
    },
    /// A line of the file is malformed. The file was left untouched.
    #[error("{}:{line}: {problem}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// An append was refused: it would not replay (an unknown or reused id). Nothing was
    /// written.
    #[error("{}: refused to append: {source}", path.display())]
    Rejected {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: ReplayError,
    },
    /// A compaction result does not follow the result contract for the session's
    /// conversation (an index out of range, or messages that replay would not rebuild).
    /// Nothing was written.
    #[error("{}: compaction result does not match the session's conversation: {problem}", path.display())]
    ResultMismatch {
        /// The file.
        path: PathBuf,
        /// What does not match.
        problem: String,
    },
    /// An earlier write failed and the file's end could not be restored; the session
    /// refuses further appends. Reopen it (the torn tail is repaired on open).
    #[error("{}: an earlier write failed and could not be rolled back; reopen the session", path.display())]
    Poisoned {
        /// The file.
        path: PathBuf,
    },
    /// A payload could not be serialized (a non-finite float, for example).
    #[error("{}: cannot serialize a line: {problem}", path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// What serde said.
        problem: String,
    },
}

impl SessionError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        SessionError::Io {
            path: path.to_owned(),
            source,
        }
    }
}
