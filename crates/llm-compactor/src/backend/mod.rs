//! Summarizer backends: the world-facing implementations of
//! [`crate::summarize::Summarizer`].

#[cfg(feature = "local")]
pub mod local;
pub mod model_store;
