//! Asking a model for a summary: the [`Summarizer`] port, how its failures are
//! classified, what it is asked (instruction, transcript, chunks), and what it may know
//! of the pass's request ([`PassContext`]).

mod chunk;
mod failure;
mod pass_context;
mod prompts;
mod summarizer;
mod transcript;

pub use chunk::{next_chunk, render_units};
pub use failure::{FailureClass, FailureKind, SummarizerError};
pub use pass_context::PassContext;
pub use prompts::{
    DEFAULT_CARRY, DEFAULT_INSTRUCTION, DEFAULT_PREFILL, DEFAULT_SUFFIX, DEFAULT_TIGHTEN, DEFAULT_TRUNCATED, Prompts,
    prefilled,
};
pub use summarizer::{StopReason, Summarizer, SummaryReply, SummaryRequest};
pub use transcript::{
    REASONING_OMITTED, escape_body, is_role_header, render_message, render_transcript, truncate_marked,
};
