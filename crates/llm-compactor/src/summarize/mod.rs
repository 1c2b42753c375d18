//! Asking a model for a summary: the [`Summarizer`] port and how its failures are
//! classified.

mod failure;
mod summarizer;

pub use failure::{FailureClass, FailureKind, SummarizerError};
pub use summarizer::{StopReason, Summarizer, SummaryReply, SummaryRequest};
