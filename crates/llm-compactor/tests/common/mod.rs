//! Shared test support: where the real trajectories are.
//!
//! Tests find `../shared/data` (beside the workspace) through the `LLM_COMPACTOR_DATA`
//! environment variable, and skip with a printed notice when it is absent (a user's clone
//! has no `../shared`).

use std::path::PathBuf;

/// The shared data directory, or `None` (with a notice on stderr) when it is absent.
pub fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LLM_COMPACTOR_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data")));
    if dir.join("trajectories").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "NOTICE: skipping: shared trajectories not found at {} (set LLM_COMPACTOR_DATA)",
            dir.display()
        );
        None
    }
}

/// Every file under `trajectories/<kind>/` with the given suffix, sorted.
pub fn trajectory_files(kind: &str, suffix: &str) -> Vec<PathBuf> {
    let Some(dir) = data_dir() else { return Vec::new() };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("trajectories").join(kind))
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(suffix))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// The mini-swe-agent trajectories (`*.traj.json`).
pub fn mini_swe_agent_files() -> Vec<PathBuf> {
    trajectory_files("mini-swe-agent", ".traj.json")
}

/// The tau-bench airline file: a JSON array of tasks, each with an OpenAI-shaped `traj`.
pub fn tau_bench_file() -> Option<PathBuf> {
    trajectory_files("tau-bench", ".json").into_iter().next()
}

/// Every tau-bench conversation as an OpenAI messages array.
pub fn tau_bench_conversations() -> Vec<serde_json::Value> {
    let Some(path) = tau_bench_file() else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(&path).expect("tau-bench file is readable");
    let tasks: Vec<serde_json::Value> = serde_json::from_str(&text).expect("tau-bench file is JSON");
    tasks
        .into_iter()
        .filter_map(|mut t| t.get_mut("traj").map(serde_json::Value::take))
        .collect()
}

/// The largest mini-swe-agent trajectory (by bytes; the last path among equals).
pub fn largest_mini_swe_agent_file() -> Option<PathBuf> {
    mini_swe_agent_files()
        .into_iter()
        .filter_map(|path| Some((std::fs::metadata(&path).ok()?.len(), path)))
        .max()
        .map(|(_, path)| path)
}
