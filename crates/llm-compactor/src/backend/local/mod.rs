//! An in-process summarizer: a small GGUF model run on the CPU (feature `local`).
//!
//! Summarizing is not latency-sensitive and a small model does it acceptably, so a
//! compactor should work with no API key and no server at all. This backend loads a
//! Llama-family GGUF (SmolLM2, Llama 3.x, Qwen 2.5) with the pure-Rust `candle`
//! engine: nothing to install, nothing to compile outside cargo. The model's own
//! tokenizer tables and chat template come from the file, so any compatible GGUF
//! works; the default one is fetched by [`crate::backend::model_store`].
//!
//! The model is read lazily on the first request (or explicitly with
//! [`LocalSummarizer::load`]) and shared by every later request. Compute runs on
//! `spawn_blocking`; a cancelled request returns at once and its worker stops at the
//! next token.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use llm_compactor::backend::local::{LocalConfig, LocalSummarizer};
//! use llm_compactor::backend::model_store::{ModelSpec, ModelStore};
//! use llm_compactor::summarize::{Summarizer, SummaryRequest};
//! use tokio_util::sync::CancellationToken;
//!
//! let path = ModelStore::from_env()?.fetch(&ModelSpec::default_model()).await?;
//! let local = LocalSummarizer::open(LocalConfig::new(path))?;
//! let request = SummaryRequest {
//!     system: "Summarize the conversation.".into(),
//!     transcript: "user: the build fails\nassistant: fixed the import".into(),
//!     max_output_tokens: 200,
//!     prefill: String::new(),
//! };
//! let reply = local.summarize(request, &CancellationToken::new()).await?;
//! println!("{}", reply.text);
//! # Ok(()) }
//! ```

mod error;
mod generate;
mod gguf;
mod model;
mod template;
mod tokenizer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

pub use error::LocalError;
pub use generate::{DecodeParams, Generation, LocalProgress};
pub use gguf::{Architecture, GgufHeader, Hyperparams, read_header};
pub use template::{ChatFormat, Piece};
pub use tokenizer::{Tokenizer, TokenizerTables};

use generate::decode;
use model::Weights;

use crate::Usage;
use crate::summarize::{FailureKind, Summarizer, SummarizerError, SummaryReply, SummaryRequest, prefilled};

/// A progress callback; called from the compute thread, so keep it quick.
pub type ProgressFn = Arc<dyn Fn(LocalProgress) + Send + Sync>;

/// Tokens of chat-template framing reserved beyond the instruction and transcript.
const TEMPLATE_OVERHEAD: usize = 32;

/// How to run the local model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Use at most this many positions of the model's context (memory and time grow
    /// with it); the effective context is the smaller of this and the model's own.
    pub context_limit: usize,
    /// Context positions kept free for the summary when declaring
    /// [`Summarizer::input_room`].
    pub output_reserve: usize,
    /// The compactor measures the transcript with its own counter, not this model's
    /// tokenizer; the declared input room is scaled by this factor (0 < f ≤ 1) so a
    /// transcript that fits by the compactor's count fits here too.
    pub room_factor: f64,
    /// Decoding knobs.
    pub decode: DecodeParams,
}

impl LocalConfig {
    /// Defaults for `model_path`: up to 8,192 positions, 2,048 reserved for output,
    /// room factor 0.75, greedy decoding with a 1.1 repeat penalty over 64 tokens, prefill in chunks of 256.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        LocalConfig {
            model_path: model_path.into(),
            context_limit: 8192,
            output_reserve: 2048,
            room_factor: 0.75,
            decode: DecodeParams::default(),
        }
    }
}

/// The in-process local summarizer. `Send + Sync`; share it as `Arc<dyn Summarizer>`.
pub struct LocalSummarizer {
    config: LocalConfig,
    name: String,
    header: GgufHeader,
    tokenizer: Arc<Tokenizer>,
    format: ChatFormat,
    context: usize,
    weights: tokio::sync::OnceCell<Arc<Weights>>,
    progress: Option<ProgressFn>,
}

impl std::fmt::Debug for LocalSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalSummarizer")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("context", &self.context)
            .field("loaded", &self.is_loaded())
            .finish_non_exhaustive()
    }
}

impl LocalSummarizer {
    /// Open a model: reads the GGUF header (blocking, quick) and builds the tokenizer;
    /// the weights are read on the first request or by [`LocalSummarizer::load`].
    pub fn open(config: LocalConfig) -> Result<Self, LocalError> {
        if !config.model_path.is_file() {
            return Err(LocalError::ModelMissing {
                path: config.model_path.clone(),
            });
        }
        let header = read_header(&config.model_path)?;
        let tokenizer = Tokenizer::from_tables(header.tokenizer.clone())?;
        let format = ChatFormat::detect(header.chat_template.as_deref(), &tokenizer)?;
        let context = header.hyper.context_length.min(config.context_limit.max(1));
        let stem = config
            .model_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".to_owned());
        Ok(LocalSummarizer {
            name: format!("local:{stem}"),
            config,
            header,
            tokenizer: Arc::new(tokenizer),
            format,
            context,
            weights: tokio::sync::OnceCell::new(),
            progress: None,
        })
    }

    /// Report progress (loading, prompt tokens, generated tokens) to `progress`.
    pub fn with_progress(mut self, progress: ProgressFn) -> Self {
        self.progress = Some(progress);
        self
    }

    /// The model file.
    pub fn model_path(&self) -> &Path {
        &self.config.model_path
    }

    /// What the file's header says (architecture, shape, template).
    pub fn header(&self) -> &GgufHeader {
        &self.header
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The chat format the template was recognised as.
    pub fn chat_format(&self) -> ChatFormat {
        self.format
    }

    /// The context positions in use (the model's, capped by the config).
    pub fn context_length(&self) -> usize {
        self.context
    }

    /// True once the weights are in memory.
    pub fn is_loaded(&self) -> bool {
        self.weights.initialized()
    }

    /// The prompt a request becomes, as token ids.
    pub fn prompt_tokens(&self, system: &str, transcript: &str) -> Result<Vec<u32>, LocalError> {
        self.format
            .encode(&self.tokenizer, system, transcript, self.header.add_bos)
    }

    /// Read and dequantize the weights now (otherwise the first request does). Safe to
    /// call more than once and concurrently: the file is read once.
    pub async fn load(&self) -> Result<(), LocalError> {
        self.weights().await.map(|_| ())
    }

    async fn weights(&self) -> Result<Arc<Weights>, LocalError> {
        let weights = self
            .weights
            .get_or_try_init(|| async {
                let path = self.config.model_path.clone();
                let hyper = self.header.hyper.clone();
                let positions = self.context;
                let progress = self.progress.clone();
                let started = std::time::Instant::now();
                let loaded = tokio::task::spawn_blocking(move || {
                    let (content, mut reader) = gguf::read_content(&path)?;
                    let mut report = |done, total| {
                        if let Some(p) = &progress {
                            p(LocalProgress::Loading { done, total });
                        }
                    };
                    Weights::load(&content, &mut reader, hyper, positions, &mut report)
                })
                .await
                .map_err(|e| LocalError::Worker(e.to_string()))??;
                tracing::info!(model = %self.name, elapsed_ms = started.elapsed().as_millis() as u64, "local model loaded");
                Ok::<_, LocalError>(Arc::new(loaded))
            })
            .await?;
        Ok(Arc::clone(weights))
    }

    /// Run the model on raw token ids and generate up to `max_new` tokens (greedy, with
    /// the configured repeat penalty). With `stop_at_eos` false it always writes
    /// `max_new` tokens (or fills the context): what benchmarks measure.
    pub async fn generate(
        &self,
        prompt: Vec<u32>,
        max_new: usize,
        stop_at_eos: bool,
        cancel: &CancellationToken,
    ) -> Result<Generation, LocalError> {
        self.run(cancel, move |tokenizer, format, _| {
            let stops = if stop_at_eos {
                format.stop_ids(tokenizer)
            } else {
                Vec::new()
            };
            Ok((prompt, max_new, stops))
        })
        .await
    }

    /// Load the weights if needed, build the prompt with `prepare` and decode it on a
    /// blocking thread, returning as soon as `cancel` fires.
    async fn run<F>(&self, cancel: &CancellationToken, prepare: F) -> Result<Generation, LocalError>
    where
        F: FnOnce(&Tokenizer, ChatFormat, bool) -> Result<(Vec<u32>, usize, Vec<u32>), LocalError> + Send + 'static,
    {
        if cancel.is_cancelled() {
            return Err(LocalError::Cancelled);
        }
        let weights = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(LocalError::Cancelled),
            loaded = self.weights() => loaded?,
        };
        // The worker watches a child token; dropping this future (a caller's timeout)
        // cancels it as well, so no orphaned computation keeps the CPU busy.
        let worker_cancel = cancel.child_token();
        let _stop_worker = worker_cancel.clone().drop_guard();
        let tokenizer = Arc::clone(&self.tokenizer);
        let (format, add_bos, params) = (self.format, self.header.add_bos, self.config.decode);
        let progress = self.progress.clone();
        let worker = tokio::task::spawn_blocking(move || {
            let (prompt, max_new, stops) = prepare(&tokenizer, format, add_bos)?;
            let report = |event: LocalProgress| {
                if let Some(p) = &progress {
                    p(event);
                }
            };
            decode(&weights, &prompt, &stops, max_new, params, &worker_cancel, &report)
        });
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(LocalError::Cancelled),
            joined = worker => joined.map_err(|e| LocalError::Worker(e.to_string())).and_then(|r| r),
        };
        self.report(LocalProgress::Finished);
        outcome
    }

    fn report(&self, event: LocalProgress) {
        if let Some(p) = &self.progress {
            p(event);
        }
    }
}

#[async_trait]
impl Summarizer for LocalSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn input_room(&self) -> Option<usize> {
        let room = self
            .context
            .saturating_sub(self.config.output_reserve)
            .saturating_sub(TEMPLATE_OVERHEAD);
        let factor = self.config.room_factor.clamp(0.05, 1.0);
        Some((room as f64 * factor) as usize)
    }

    fn max_output_tokens(&self) -> Option<u32> {
        Some(u32::try_from(self.config.output_reserve).unwrap_or(u32::MAX))
    }

    async fn summarize(
        &self,
        request: SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryReply, SummarizerError> {
        let max_new = request.max_output_tokens as usize;
        let prefill = request.prefill.clone();
        let generation = self
            .run(cancel, move |tokenizer, format, add_bos| {
                let prompt = format.encode_prefilled(
                    tokenizer,
                    &request.system,
                    &request.transcript,
                    &request.prefill,
                    add_bos,
                )?;
                Ok((prompt, max_new, format.stop_ids(tokenizer)))
            })
            .await
            .map_err(SummarizerError::from)?;
        let (prompt_tokens, tokens, stop) = (generation.prompt_tokens, generation.tokens, generation.stop);
        let usage = Usage {
            input_tokens: prompt_tokens as u64,
            output_tokens: tokens.len() as u64,
            ..Usage::default()
        };
        let generated = self.tokenizer.decode(&tokens, true);
        tracing::debug!(model = %self.name, prompt_tokens, output_tokens = tokens.len(), ?stop, "local summary");
        if generated.trim().is_empty() {
            return Err(SummarizerError::new(FailureKind::Empty, "the local model wrote nothing").with_usage(usage));
        }
        // The answer began with the prefill: it is part of the summary.
        let text = prefilled(&prefill, &generated);
        Ok(SummaryReply { text, stop, usage })
    }
}
