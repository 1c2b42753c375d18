//! The session transcript: an append-only JSONL record that replays byte-identically.
