//! Building the local summarizer from the command line, with progress bars.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressStyle};
use llm_compactor::backend::local::{LocalConfig, LocalProgress, LocalSummarizer};
use llm_compactor::backend::model_store::{ModelSpec, ModelStore};

use crate::error::CliError;

/// The model the local summarizer would use: `--model-path FILE` when given (it must
/// exist), else the default model in the store, if it has been fetched and its SHA-256
/// is the pinned one.
pub fn model_path(explicit: Option<&Path>) -> Result<Option<PathBuf>, CliError> {
    if let Some(path) = explicit {
        return Ok(Some(path.to_owned()));
    }
    let store = ModelStore::from_env().map_err(CliError::failed)?;
    // The fetched model is loaded only once its pinned SHA-256 has been checked (once,
    // then remembered by size and mtime): a file of the right size proves nothing.
    store
        .locate_verified(&ModelSpec::default_model())
        .map_err(|e| CliError::Failed(format!("{e}; run `compactor model fetch` to replace it")))
}

/// The local summarizer on `--model-path FILE` or the fetched default model. A missing
/// model is a runtime failure whose message says to run `compactor model fetch`.
/// `progress` shows indicatif bars on stderr (only when stderr is a terminal).
pub fn build(explicit: Option<&Path>, progress: bool) -> Result<LocalSummarizer, CliError> {
    let path = match model_path(explicit)? {
        Some(path) => path,
        None => {
            let store = ModelStore::from_env().map_err(CliError::failed)?;
            store.path_of(&ModelSpec::default_model())
        }
    };
    let local = LocalSummarizer::open(LocalConfig::new(path)).map_err(CliError::failed)?;
    if progress && std::io::stderr().is_terminal() {
        Ok(local.with_progress(progress_bars()))
    } else {
        Ok(local)
    }
}

/// One bar that follows the stages: loading tensors, reading the prompt, writing.
fn progress_bars() -> llm_compactor::backend::local::ProgressFn {
    let state: Mutex<Option<(&'static str, ProgressBar)>> = Mutex::new(None);
    Arc::new(move |event: LocalProgress| {
        let Ok(mut state) = state.lock() else { return };
        let (stage, done, total) = match event {
            LocalProgress::Loading { done, total } => ("loading model", done, total),
            LocalProgress::Prompt { done, total } => ("reading transcript", done, total),
            LocalProgress::Generating { done, max } => ("writing summary", done, max),
            LocalProgress::Finished => {
                if let Some((_, bar)) = state.take() {
                    bar.finish_and_clear();
                }
                return;
            }
        };
        let fresh = !matches!(&*state, Some((s, _)) if *s == stage);
        if fresh {
            if let Some((_, bar)) = state.take() {
                bar.finish_and_clear();
            }
            let bar = ProgressBar::new(total as u64);
            let template = if stage == "loading model" {
                "{msg:>20} [{bar:30}] {pos}/{len} tensors"
            } else {
                "{msg:>20} [{bar:30}] {pos}/{len} tokens ({per_sec}, eta {eta})"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(stage);
            *state = Some((stage, bar));
        }
        if let Some((_, bar)) = &*state {
            bar.set_position(done as u64);
        }
    })
}
