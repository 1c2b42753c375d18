//! Issue 44: the proxy's container image. Without a container runtime on this machine (the
//! docker client is installed, no daemon runs), the image's contract is checked by running
//! what it would run: the Dockerfile's ENTRYPOINT and CMD, word for word, by the built
//! binary (the store under a temporary directory in place of the /data volume, the
//! upstream a scripted one on 127.0.0.1, as `docker run ... IMAGE --upstream URL` would
//! override CMD), on 0.0.0.0: /healthz, /metrics and a proxied request answer. Where a
//! daemon answers, the image itself is built and its size checked.

use crate::proxy::{spawn_proxy_with, start_upstream};

use std::path::PathBuf;

use serde_json::{Value, json};

fn dockerfile() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Dockerfile");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON array of the instruction `name` (`ENTRYPOINT` or `CMD`) in the final stage.
fn exec_form(text: &str, name: &str) -> Vec<String> {
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("the Dockerfile has no {name}"));
    let words: Value = serde_json::from_str(line[name.len()..].trim())
        .unwrap_or_else(|e| panic!("{name} is not in exec form (a JSON array): {e}"));
    words
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_image_is_multi_stage_small_and_not_root() {
    let text = dockerfile();
    assert!(text.contains(" AS build"), "a build stage");
    let last_from = text.lines().rfind(|l| l.starts_with("FROM ")).unwrap();
    assert!(
        last_from.contains("distroless") && last_from.ends_with(":nonroot"),
        "{last_from}"
    );
    assert!(
        text.contains("--no-default-features"),
        "no in-process model in the image"
    );
    assert!(text.contains("EXPOSE 8787"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_images_entrypoint_serves_as_written() {
    let text = dockerfile();
    let entry = exec_form(&text, "ENTRYPOINT");
    assert_eq!(entry[0], "/usr/local/bin/compactor");
    assert_eq!(entry[1], "proxy");
    assert_eq!(
        exec_form(&text, "CMD")[0],
        "--upstream",
        "CMD is the upstream a run overrides"
    );
    let (upstream, _up) = start_upstream().await;
    let data = tempfile::tempdir().unwrap();
    let args: Vec<String> = entry[2..]
        .iter()
        .map(|word| match word.as_str() {
            // Any free port, on the image's address.
            "0.0.0.0:8787" => "0.0.0.0:0".to_owned(),
            other => other.replace("/data", &data.path().display().to_string()),
        })
        .chain(["--upstream".to_owned(), upstream])
        .collect();
    assert!(
        args.contains(&"0.0.0.0:0".to_owned()),
        "the image listens on 0.0.0.0:8787: {entry:?}"
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut child, proxy) = spawn_proxy_with(&args, &[]);
    let proxy = proxy.replace("0.0.0.0", "127.0.0.1");
    let client = reqwest::Client::new();
    let health = client.get(format!("{proxy}/healthz")).send().await.unwrap();
    let health = (health.status(), health.text().await.unwrap());
    let metrics = client
        .get(format!("{proxy}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let chat = client
        .post(format!("{proxy}/v1/chat/completions"))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]}))
        .send()
        .await
        .unwrap()
        .status();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(health, (reqwest::StatusCode::OK, "ok\n".to_owned()));
    assert!(metrics.contains("compactor_proxy_requests_total"), "{metrics}");
    assert_eq!(chat, 200);
    assert!(
        data.path().join("compactor-sessions.db").exists(),
        "the session went to the volume"
    );
}

/// The image itself, where a container daemon answers (none does on the project's
/// machine: the test says so and returns).
#[test]
fn the_image_builds_under_60_mb_where_a_daemon_runs() {
    let daemon = std::process::Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !daemon {
        eprintln!("no container daemon answers `docker info`: the image is not built here");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let built = std::process::Command::new("docker")
        .args(["build", "-q", "-t", "llm-compactor-test", "."])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(built.success(), "docker build");
    let size = std::process::Command::new("docker")
        .args(["image", "inspect", "llm-compactor-test", "--format", "{{.Size}}"])
        .output()
        .unwrap();
    let bytes: u64 = String::from_utf8_lossy(&size.stdout).trim().parse().unwrap();
    assert!(bytes <= 60 * 1024 * 1024, "the image is {bytes} bytes");
}
