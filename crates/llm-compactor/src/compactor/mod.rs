//! The async shell around the planning core: [`Compactor`].
//!
//! Everything that talks to the world (the summarizer, waits, cancellation, hooks,
//! events) lives here; every decision is made by the pure functions of [`crate::plan`].

mod config;
mod result;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use config::{CompactorConfig, CompactorConfigBuilder, ConfigError};
pub use result::{Attempt, AttemptKind, AttemptOutcome, CompactionResult, Elision};

use crate::count::TokenCounter;
use crate::message::Message;
use crate::summarize::Summarizer;

/// A compaction that could not even start: invalid input. A failing summarizer is NOT an
/// error (it ends in the hard trim with `fallback: true`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The conversation is malformed at `index`.
    #[error("message {index}: {problem}")]
    InvalidInput {
        /// The index of the offending message.
        index: usize,
        /// What is wrong with it.
        problem: String,
    },
}

/// Per-call overrides of one `compact` invocation.
#[derive(Clone, Default)]
pub struct CompactOptions {
    /// Aim at this many tokens instead of the configured target; also judges acceptance
    /// and `exhausted`.
    pub target: Option<usize>,
    /// Count with this counter instead of the compactor's (every count of the pass).
    pub counter: Option<Arc<dyn TokenCounter>>,
    /// Cancels waits and summarizer calls; a cancelled pass ends in the hard trim.
    pub cancel: CancellationToken,
    /// Extra instruction for the summarizer ("focus on the database migration").
    pub focus: Option<String>,
}

/// Keeps a conversation inside its context window.
pub struct Compactor {
    config: CompactorConfig,
    counter: Arc<dyn TokenCounter>,
    summarizer: Option<Arc<dyn Summarizer>>,
}

impl Compactor {
    /// A compactor with this configuration and counter, and no summarizer.
    pub fn new(config: CompactorConfig, counter: Arc<dyn TokenCounter>) -> Self {
        Compactor {
            config,
            counter,
            summarizer: None,
        }
    }

    /// The same compactor with this summarizer.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = Some(summarizer);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &CompactorConfig {
        &self.config
    }

    /// The counter.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// True when a pass should run now.
    pub fn needs_compaction(&self, messages: &[Message]) -> bool {
        self.counter.count_messages(messages) > self.config.trigger()
    }

    /// Runs one compaction pass.
    ///
    /// # Errors
    /// Only for invalid input.
    pub async fn compact(
        &self,
        messages: &[Message],
        options: CompactOptions,
    ) -> Result<CompactionResult, CompactError> {
        let _ = (messages, options, &self.summarizer);
        unimplemented!("the engine lands with issue 3")
    }
}
