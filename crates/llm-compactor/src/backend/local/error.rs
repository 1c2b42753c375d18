//! The local backend's typed errors, and how they read as summarizer failures.

use std::path::PathBuf;

use crate::summarize::{FailureKind, SummarizerError};

/// Why the local model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// There is no model file at the configured path.
    #[error(
        "no local model at {path}: run `compactor model fetch` to download the default one \
         (SmolLM2-135M-Instruct, ~98 MB), or pass --model-path FILE for any Llama/Qwen GGUF"
    )]
    ModelMissing {
        /// The path that was tried.
        path: PathBuf,
    },
    /// Reading the file failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The model file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a usable GGUF model.
    #[error("invalid GGUF model: {0}")]
    Format(String),
    /// The model's architecture is not one this backend implements.
    #[error("unsupported model architecture {0:?} (supported: llama, qwen2)")]
    UnsupportedArchitecture(String),
    /// The tokenizer tables are unusable.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The chat template is not one this backend can render.
    #[error("chat template: {0}")]
    Template(String),
    /// The prompt does not fit the model's context window.
    #[error("prompt of {prompt} tokens does not fit the {context}-token context")]
    PromptTooLong {
        /// Prompt tokens.
        prompt: usize,
        /// The usable context.
        context: usize,
    },
    /// The tensor engine failed while running the model.
    #[error("inference failed: {0}")]
    Inference(String),
    /// The request was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The compute thread went away (a panic inside the engine).
    #[error("the inference worker stopped: {0}")]
    Worker(String),
}

impl From<candle_core::Error> for LocalError {
    fn from(err: candle_core::Error) -> Self {
        LocalError::Inference(err.to_string())
    }
}

impl From<LocalError> for SummarizerError {
    fn from(err: LocalError) -> Self {
        let kind = match &err {
            LocalError::ModelMissing { .. }
            | LocalError::Io { .. }
            | LocalError::Format(_)
            | LocalError::UnsupportedArchitecture(_)
            | LocalError::Tokenizer(_)
            | LocalError::Template(_) => FailureKind::Unavailable,
            LocalError::PromptTooLong { .. } => FailureKind::ContextLengthExceeded { status: None },
            LocalError::Cancelled => FailureKind::Cancelled,
            LocalError::Inference(_) | LocalError::Worker(_) => FailureKind::Other,
        };
        SummarizerError::new(kind, err.to_string())
    }
}
