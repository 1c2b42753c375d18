//! `compactor model path` / `compactor model fetch` on the real binary.

use std::process::Command;

fn compactor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_compactor"))
}

#[test]
fn path_of_an_absent_model_prints_where_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = compactor().args(["model", "path", "--dir"]).arg(dir.path()).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf").display().to_string());
    assert!(String::from_utf8_lossy(&out.stderr).contains("compactor model fetch"));
}

#[test]
fn path_honours_the_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = compactor()
        .args(["model", "path"])
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&dir.path().display().to_string()));
}

#[test]
fn path_of_a_present_model_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    let f = std::fs::File::create(&file).expect("create");
    f.set_len(98_362_432).expect("size");
    let out = compactor().args(["model", "path", "--dir"]).arg(dir.path()).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), file.display().to_string());
}

#[test]
fn model_without_a_subcommand_is_a_usage_error() {
    let out = compactor().arg("model").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
}
