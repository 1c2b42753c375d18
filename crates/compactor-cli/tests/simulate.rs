//! `compactor simulate` run as a real binary.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn compactor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_compactor"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The shared trajectories, or `None` with a notice.
fn data_dir() -> Option<PathBuf> {
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

/// A long mini-swe-agent trajectory that overflows a 32k window.
fn mini_swe_agent_file() -> Option<String> {
    let dir = data_dir()?.join("trajectories/mini-swe-agent");
    let path = dir.join("deepseek_chat_dev__sqlfluff__sqlfluff-1733.traj.json");
    if path.is_file() {
        return Some(path.to_string_lossy().into_owned());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".traj.json"))
        .collect();
    files.sort();
    files.first().map(|p| p.to_string_lossy().into_owned())
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

#[test]
fn help_names_the_pinned_options() {
    let output = compactor(&["simulate", "--help"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for option in ["--window", "--pricing", "--strategy", "--json", "--plot"] {
        assert!(text.contains(option), "{option} missing from --help");
    }
}

#[test]
fn usage_errors_exit_2() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    for args in [
        vec!["simulate", file, "--window", "0"],
        vec!["simulate", file, "--window", "1000", "--strategy", "magic"],
        vec!["simulate", file, "--window", "1000", "--pricing", "free"],
        vec!["simulate", "--window", "1000"],
    ] {
        let output = compactor(&args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn a_missing_file_is_a_runtime_failure() {
    let output = compactor(&["simulate", "/nonexistent/trajectory.json", "--window", "1000"]);
    assert_eq!(output.status.code(), Some(1));
}

#[test]
fn json_on_a_real_trajectory_is_pinned_and_deterministic() {
    let Some(file) = mini_swe_agent_file() else { return };
    let args = [
        "simulate",
        file.as_str(),
        "--window",
        "32000",
        "--json",
        "--strategy",
        "none",
        "--strategy",
        "mask-last-n",
        "--strategy",
        "clear-tool-uses",
        "--strategy",
        "summarize-at-threshold",
    ];
    let first = compactor(&args);
    let value = json(&first);
    assert_eq!(value["trajectories"], 1);
    assert_eq!(value["window"], 32000);
    assert_eq!(value["pricing"], "anthropic");
    let rows = value["strategies"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["none", "mask-last-n", "clear-tool-uses", "summarize-at-threshold"]
    );
    let mut keys: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "cache_hit_ratio",
            "compactions",
            "cost",
            "elision_epochs",
            "name",
            "peak_context",
            "requests",
            "rounds_over_window"
        ]
    );
    // Every strategy replays the same agent turns.
    assert!(rows.iter().all(|r| r["requests"] == rows[0]["requests"]));
    // Below 100k, Anthropic's default trigger never fires: the same bill as no management.
    assert_eq!(rows[2]["cost"], rows[0]["cost"]);
    assert_eq!(rows[2]["elision_epochs"], 0);
    // The same input, the same bytes.
    assert_eq!(first.stdout, compactor(&args).stdout);
}

#[test]
fn tau_bench_task_arrays_are_one_trajectory_per_task_and_the_plot_is_svg() {
    let Some(dir) = data_dir() else { return };
    let file = dir.join("trajectories/tau-bench/gpt-4o-airline.json");
    if !file.is_file() {
        eprintln!("NOTICE: skipping: {} absent", file.display());
        return;
    }
    let plot = tempfile::tempdir().unwrap();
    let svg = plot.path().join("plot.svg");
    let output = compactor(&[
        "simulate",
        file.to_str().unwrap(),
        "--window",
        "4000",
        "--pricing",
        "openai-4o",
        "--strategy",
        "none",
        "--strategy",
        "summarize-at-threshold",
        "--json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let value = json(&output);
    let tasks: Vec<Value> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(value["trajectories"], tasks.len());
    assert_eq!(value["pricing"], "openai-4o");
    assert!(value["strategies"][1]["compactions"].as_u64().unwrap() > 0);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("summarize-at-threshold"));
}

#[test]
fn the_human_table_has_ratios_against_none() {
    let Some(file) = mini_swe_agent_file() else { return };
    let output = compactor(&[
        "simulate",
        &file,
        "--window",
        "64000",
        "--strategy",
        "none",
        "--strategy",
        "clear-tool-uses",
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("vs none"));
    assert!(text.contains("clear-tool-uses") && text.contains("1.000"));
    assert!(text.contains("never") || text.contains("cannot fire"), "{text}");
}
