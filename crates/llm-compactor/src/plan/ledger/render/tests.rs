//! Unit tests of the parent module: kept beside it, in their own file, so that the
//! module itself holds only its rules.

use super::*;
use crate::plan::ledger::{CommandFact, FileFact};

#[test]
fn the_commands_legend_names_only_the_marks_its_lines_carry() {
    let command = |exit, runs| CommandFact {
        command: "make".into(),
        exit,
        runs,
        last_seen: 0,
        handle: None,
    };
    for (facts, title) in [
        (vec![command(None, 1)], "Commands run (newest last)"),
        (vec![command(None, 2)], "Commands run (newest last; ×N runs)"),
        (
            vec![command(Some(1), 1)],
            "Commands run (newest last; ✓ exit 0, ✗ N exit status N)",
        ),
        (
            vec![command(Some(0), 1), command(None, 3)],
            "Commands run (newest last; ✓ exit 0, ✗ N exit status N, ×N runs)",
        ),
    ] {
        assert_eq!(commands_title(&facts.iter().collect::<Vec<_>>()), title);
    }
}

fn big() -> Ledger {
    Ledger {
        last_user: Some("fix it".into()),
        files: (0..50)
            .map(|i| FileFact {
                path: format!("src/file_{i}.py"),
                operations: vec!["read".into()],
                last_seen: 2 * i,
                handle: None,
            })
            .collect(),
        commands: (0..50)
            .map(|i| CommandFact {
                command: format!("pytest tests/test_{i}.py"),
                exit: Some(0),
                runs: 1,
                last_seen: 2 * i + 1,
                handle: None,
            })
            .collect(),
        ..Ledger::default()
    }
}

#[test]
fn cap_is_respected_and_newest_kept() {
    let ledger = big();
    for cap in [100, 300, 1000, 5000] {
        let text = render(&ledger, cap);
        assert!(text.chars().count() <= cap, "{cap}: {}", text.chars().count());
    }
    let text = render(&ledger, 1000);
    assert!(text.contains("src/file_49.py"));
    assert!(!text.contains("src/file_0.py"));
    assert!(text.contains("fix it"));
    assert!(text.contains("older omitted"));
    let text = render(&ledger, 2600);
    assert!(text.contains("src/file_0.py"), "{text}");
    assert!(text.contains("pytest tests/test_49.py"), "{text}");
}

/// Within a tier the history is cut at one point in time; across tiers, a file
/// touched (or a command that changed something) outlives a command that only read.
#[test]
fn the_history_is_cut_by_tier_then_at_one_point_in_time() {
    let mut ledger = big();
    ledger.commands.extend((0..50).map(|i| CommandFact {
        command: format!("sed -i 's/a/b/' src/edit_{i}.py"),
        exit: Some(0),
        runs: 1,
        last_seen: 2 * i,
        handle: None,
    }));
    let text = render(&ledger, 2500);
    let oldest = |prefix: &str| (0..50usize).find(|i| text.contains(&format!("{prefix}{i}.py")));
    let (f, e) = (oldest("src/file_").unwrap(), oldest("src/edit_").unwrap());
    assert!(f.abs_diff(e) <= 1, "files from {f}, edits from {e}:\n{text}");
    assert_eq!(oldest("tests/test_"), None, "{text}");
    // With room for every file and edit, the newest reads come back.
    let text = render(&ledger, 6000);
    assert!(
        text.contains("src/file_0.py") && text.contains("src/edit_0.py"),
        "{text}"
    );
    assert!(text.contains("pytest tests/test_49.py"), "{text}");
    // Room for all but the oldest reads: they go, and the note says which kind.
    let full = render(&ledger, 100_000).chars().count();
    let text = render(&ledger, full - 30);
    assert!(
        text.contains("src/file_0.py") && !text.contains("tests/test_0.py"),
        "{text}"
    );
}

#[test]
fn a_long_request_takes_at_most_a_quarter() {
    let mut ledger = big();
    ledger.last_user = Some("word ".repeat(1000));
    let text = render(&ledger, 3000);
    let request = text.split("### ").nth(1).unwrap();
    assert!(request.chars().count() <= 750, "{}", request.chars().count());
    assert!(request.trim_end().ends_with('…'));
    assert!(text.contains("pytest tests/test_49.py"));
}

#[test]
fn a_relative_path_merges_into_its_absolute_form() {
    let files = vec![
        FileFact {
            path: "src/x.py".into(),
            operations: vec!["read".into()],
            last_seen: 1,
            handle: None,
        },
        FileFact {
            path: "/testbed/src/x.py".into(),
            operations: vec!["edit".into()],
            last_seen: 0,
            handle: None,
        },
        FileFact {
            path: "setup.py".into(),
            operations: vec!["run".into()],
            last_seen: 2,
            handle: None,
        },
        FileFact {
            path: "/a/setup.py".into(),
            operations: vec!["read".into()],
            last_seen: 3,
            handle: None,
        },
        FileFact {
            path: "/b/setup.py".into(),
            operations: vec!["read".into()],
            last_seen: 4,
            handle: None,
        },
    ];
    let mut files = files;
    files.push(FileFact {
        path: "./lib/y.py".into(),
        operations: vec!["run".into()],
        last_seen: 5,
        handle: None,
    });
    files.push(FileFact {
        path: "/testbed/lib/y.py".into(),
        operations: vec!["read".into()],
        last_seen: 6,
        handle: None,
    });
    let merged = merged_files(&files);
    let paths: Vec<&str> = merged.iter().map(|f| f.path.as_str()).collect();
    // `setup.py` is ambiguous (two longer forms): kept apart.
    // `./lib/y.py` is kept as written (a merged line would not contain it).
    assert_eq!(
        paths,
        [
            "/testbed/src/x.py",
            "setup.py",
            "/a/setup.py",
            "/b/setup.py",
            "./lib/y.py",
            "/testbed/lib/y.py"
        ]
    );
    assert_eq!(merged[0].operations, ["edit", "read"]);
    assert_eq!(merged[0].last_seen, 1);
}

#[test]
fn open_errors_get_the_room_the_history_leaves() {
    let ledger = Ledger {
        errors: (0..12)
            .map(|i| crate::plan::ledger::ErrorFact {
                text: format!("FAILED tests/test_{i}.py::test_case - KeyError: 'h{i}'"),
                open: true,
                command: None,
                last_seen: i,
                handle: None,
            })
            .collect(),
        commands: big().commands[..2].to_vec(),
        ..Ledger::default()
    };
    // Twelve error lines need more than a quarter of 1,000 chars.
    let text = render(&ledger, 1000);
    assert!(text.contains("tests/test_0.py::test_case"), "{text}");
    assert!(text.contains("`pytest tests/test_1.py` ✓"), "{text}");
    assert!(history_fits(&ledger, 1000));
    assert!(!history_fits(&ledger, 400));
}

#[test]
fn everything_fits_when_room() {
    let text = render(&big(), 100_000);
    assert!(text.contains("src/file_0.py (read)"));
    assert!(text.contains("`pytest tests/test_0.py` ✓"));
    assert!(!text.contains("omitted"));
}

#[test]
fn naming_handles_costs_no_fact_the_cap_would_keep_without_them() {
    let plain = big();
    let mut named = big();
    for (i, file) in named.files.iter_mut().enumerate() {
        file.handle = Some(format!("#{:010x}", 0xa000 + i));
    }
    for (i, command) in named.commands.iter_mut().enumerate() {
        command.handle = Some(format!("#{:010x}", 0xb000 + i));
    }
    named.originals = Some(("#00000000aa".into(), "#00000000bb".into()));
    let strip = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with(super::ORIGINALS))
            .map(|l| {
                l.strip_suffix(']')
                    .and_then(|l| l.rsplit_once(" [#"))
                    .map_or(l, |(line, _)| line)
                    .to_owned()
            })
            .collect()
    };
    for cap in [300, 1000, 2000] {
        let (without, with) = (render(&plain, cap), render(&named, cap));
        assert!(with.contains(" [#"), "{with}");
        assert_eq!(strip(&with), strip(&without), "cap {cap}: the same facts");
    }
    assert_eq!(handle_chars("- `make` ✓ [#0123456789]"), 14);
    assert_eq!(handle_chars("- `make` ✓ [#01234567]"), 0);
    assert_eq!(handle_chars("a [#XYZ4567890]"), 0);
    assert_eq!(handle_chars("é"), 0);
}
