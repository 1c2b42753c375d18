//! A stored model is trusted only once its pinned SHA-256 has been checked; the check
//! is remembered by (size, mtime) in a sidecar, and redone when either changes.

use std::time::{Duration, SystemTime};

use llm_compactor::backend::model_store::{ModelSpec, ModelStore, ModelStoreError};
use llm_compactor::backend::model_verify::sidecar_path;
use sha2::{Digest, Sha256};

fn spec_for(content: &[u8]) -> ModelSpec {
    ModelSpec {
        file_name: "tiny.gguf".into(),
        sha256: hex::encode(Sha256::digest(content)),
        size: content.len() as u64,
        pip_requirement: "unused==0".into(),
        wheel_member: "unused/tiny.gguf".into(),
        license: "MIT".into(),
    }
}

fn set_mtime(path: &std::path::Path, when: SystemTime) {
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.set_modified(when).unwrap();
}

#[test]
fn a_file_of_the_right_size_with_the_wrong_hash_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let spec = spec_for(b"the real weights");
    std::fs::write(store.path_of(&spec), b"fake weights!!!!").unwrap();
    assert_eq!(std::fs::metadata(store.path_of(&spec)).unwrap().len(), spec.size);
    // The cheap size check alone would accept it.
    assert!(store.locate(&spec).is_some());
    match store.locate_verified(&spec) {
        Err(ModelStoreError::HashMismatch { expected, .. }) => assert_eq!(expected, spec.sha256),
        other => panic!("expected a hash mismatch, got {other:?}"),
    }
    assert!(!sidecar_path(&store.path_of(&spec)).exists());
    // Missing or the wrong size: simply not there.
    let other = spec_for(b"something longer than that");
    assert!(store.locate_verified(&other).unwrap().is_none());
}

#[test]
fn the_verification_is_remembered_by_size_and_mtime() {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let content = b"the real weights";
    let spec = spec_for(content);
    let path = store.path_of(&spec);
    std::fs::write(&path, content).unwrap();
    let stamp = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    set_mtime(&path, stamp);
    assert_eq!(store.locate_verified(&spec).unwrap(), Some(path.clone()));
    assert!(sidecar_path(&path).exists());

    // Same size, same mtime: trusted without hashing (the swapped content is not read).
    std::fs::write(&path, b"fake weights!!!!").unwrap();
    set_mtime(&path, stamp);
    assert_eq!(store.locate_verified(&spec).unwrap(), Some(path.clone()));

    // The mtime moved: hashed again, and rejected.
    set_mtime(&path, stamp + Duration::from_secs(1));
    assert!(matches!(
        store.locate_verified(&spec),
        Err(ModelStoreError::HashMismatch { .. })
    ));

    // The right content again: verified and remembered again.
    std::fs::write(&path, content).unwrap();
    assert_eq!(store.locate_verified(&spec).unwrap(), Some(path.clone()));

    // A sidecar for another pinned hash does not vouch for this one.
    let mut other = spec.clone();
    other.sha256 = "0".repeat(64);
    assert!(store.locate_verified(&other).is_err());
}
