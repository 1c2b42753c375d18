//! Summarizer backends: the world-facing implementations of
//! [`crate::summarize::Summarizer`].
//!
//! Each backend only reports what happened (a [`crate::summarize::FailureKind`]); what
//! that means for the pass is decided once, by the classification table.

pub mod exec;
pub mod ledger;
mod process_group;

pub use exec::ExecSummarizer;
pub use ledger::LedgerSummarizer;

#[cfg(feature = "http")]
pub mod http;

#[cfg(feature = "local")]
pub mod local;
pub mod model_store;
pub mod model_verify;
