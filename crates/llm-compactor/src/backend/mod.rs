//! Summarizer backends: the world-facing implementations of
//! [`crate::summarize::Summarizer`].

#[cfg(feature = "http")]
pub mod http;
