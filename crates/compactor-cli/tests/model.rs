//! `compactor model path` / `compactor model fetch` on the real binary.

use crate::support;

use support::bin as compactor;

/// A two-message conversation file in `dir`.
fn tiny_conversation(dir: &std::path::Path) -> std::path::PathBuf {
    let input = dir.join("c.json");
    std::fs::write(
        &input,
        r#"[{"role":"system","content":"s"},{"role":"user","content":"hi"}]"#,
    )
    .expect("write");
    input
}

#[test]
fn path_of_an_absent_model_prints_where_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = compactor()
        .args(["model", "path", "--dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim(),
        dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf").display().to_string()
    );
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

/// A file of the right size is not the model: its SHA-256 is checked (issue 10 item 23;
/// this test used to pin the opposite, that any file of the right size was accepted).
#[test]
fn path_of_a_file_of_the_right_size_but_the_wrong_hash_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("SmolLM2-135M-Instruct.Q4_1.gguf");
    let f = std::fs::File::create(&file).expect("create");
    f.set_len(98_362_432).expect("size");
    let out = compactor()
        .args(["model", "path", "--dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), file.display().to_string());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SHA-256 mismatch"), "{stderr}");
    assert!(stderr.contains("compactor model fetch"), "{stderr}");
    // `auto` does not pick it either.
    let input = tiny_conversation(dir.path());
    let out = compactor()
        .args(["plan"])
        .arg(&input)
        .args(["--budget", "1000"])
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SHA-256 mismatch"), "{stderr}");
    assert!(!stderr.contains("summarizer auto: local"), "{stderr}");
}

#[test]
fn model_without_a_subcommand_is_a_usage_error() {
    let out = compactor().arg("model").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn auto_without_keys_or_model_says_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = tiny_conversation(dir.path());
    let out = compactor()
        .args(["plan"])
        .arg(&input)
        .args(["--budget", "1000"])
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("summarizer auto: ledger"), "{stderr}");
    assert!(stderr.contains("compactor model fetch"), "{stderr}");
}

#[test]
fn auto_with_an_openai_key_picks_openai() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = tiny_conversation(dir.path());
    let out = compactor()
        .args(["plan"])
        .arg(&input)
        .args(["--budget", "1000"])
        .env("OPENAI_API_KEY", "sk-test-not-a-real-key")
        .env("LLM_COMPACTOR_MODEL_DIR", dir.path())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("summarizer auto: openai (OPENAI_API_KEY is set"),
        "{stderr}"
    );
    assert!(!stderr.contains("sk-test"), "never print the key");
}

#[test]
fn local_with_a_missing_model_exits_1_with_the_how_to() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = tiny_conversation(dir.path());
    let out = compactor()
        .args(["compact"])
        .arg(&input)
        .args([
            "--budget",
            "1000",
            "--summarizer",
            "local",
            "--model-path",
            "/nonexistent/m.gguf",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("compactor model fetch"));
}

#[test]
fn model_path_without_local_is_a_usage_error() {
    let out = compactor()
        .args([
            "plan",
            "-",
            "--budget",
            "1000",
            "--summarizer",
            "none",
            "--model-path",
            "x.gguf",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}
