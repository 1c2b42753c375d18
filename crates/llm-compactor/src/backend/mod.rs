//! Summarizer backends: the world-facing implementations of
//! [`crate::summarize::Summarizer`].
