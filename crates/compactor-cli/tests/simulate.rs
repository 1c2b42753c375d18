//! `compactor simulate` run as a real binary.

use crate::support;

use std::process::Output;

use serde_json::Value;
use support::{data_dir, run};

/// A long mini-swe-agent trajectory that overflows a 32k window.
fn mini_swe_agent_file() -> Option<String> {
    let files = support::mini_swe_agent_files();
    let preferred = files
        .iter()
        .find(|p| p.ends_with("deepseek_chat_dev__sqlfluff__sqlfluff-1733.traj.json"));
    preferred.or(files.first()).map(|p| p.to_string_lossy().into_owned())
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
    let output = run(&["simulate", "--help"], None);
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
        let output = run(&args, None);
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
    let output = run(&["simulate", "/nonexistent/trajectory.json", "--window", "1000"], None);
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
    let first = run(&args, None);
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
    assert_eq!(first.stdout, run(&args, None).stdout);
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
    let output = run(
        &[
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
        ],
        None,
    );
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
    let output = run(
        &[
            "simulate",
            &file,
            "--window",
            "64000",
            "--strategy",
            "none",
            "--strategy",
            "clear-tool-uses",
        ],
        None,
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("vs none"));
    assert!(text.contains("clear-tool-uses") && text.contains("1.000"));
    assert!(text.contains("never") || text.contains("cannot fire"), "{text}");
}
