//! The artifact ledger, rule by rule: small inline cases (always run) and snippets of
//! real mini-swe-agent and OpenHands trajectories (skipped with a notice when the
//! shared data is absent).

use crate::common;

use llm_compactor::format::Document;
use llm_compactor::message::{Message, ToolCall};
use llm_compactor::plan::ledger::{LEDGER_HEADING, Ledger, LedgerRules, extract, render};

fn all(messages: &[Message]) -> Ledger {
    let indices: Vec<usize> = (0..messages.len()).collect();
    extract(messages, &indices, &LedgerRules::default())
}

fn bash(id: &str, command: &str) -> Message {
    let args = serde_json::json!({ "command": command }).to_string();
    Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "bash", args)])
}

fn file<'a>(ledger: &'a Ledger, path: &str) -> Option<&'a llm_compactor::plan::ledger::FileFact> {
    ledger.files.iter().find(|f| f.path == path)
}

#[test]
fn paths_from_tool_arguments_with_operations() {
    let messages = vec![
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("a", "read_file", r#"{"file_path":"src/lib.rs"}"#),
            ToolCall::new(
                "b",
                "str_replace_editor",
                r#"{"command":"str_replace","path":"/repo/src/main.rs","old_str":"a","new_str":"b"}"#,
            ),
            ToolCall::new("c", "write", r#"{"filename":"notes.md","content":"x"}"#),
        ]),
        Message::tool("a", "pub mod x;"),
        Message::tool("b", "ok"),
        Message::tool("c", "ok"),
    ];
    let ledger = all(&messages);
    assert_eq!(file(&ledger, "src/lib.rs").unwrap().operations, ["read"]);
    assert_eq!(file(&ledger, "/repo/src/main.rs").unwrap().operations, ["edit"]);
    assert_eq!(file(&ledger, "notes.md").unwrap().operations, ["write"]);
    // An editor sub-command is not a shell command.
    assert!(ledger.commands.is_empty());
}

#[test]
fn commands_with_exit_status_deduplicated() {
    let messages = vec![
        bash("1", "python repro.py"),
        Message::tool("1", "<returncode>1</returncode>\n<output>\nValueError: bad\n</output>"),
        bash("2", "sed -i 's/a/b/' pkg/mod.py"),
        Message::tool("2", "<returncode>0</returncode>\n<output>\n</output>"),
        bash("3", "python repro.py"),
        Message::tool("3", "<returncode>0</returncode>\n<output>\nok\n</output>"),
    ];
    let ledger = all(&messages);
    assert_eq!(ledger.commands.len(), 2);
    let repro = ledger.commands.iter().find(|c| c.command == "python repro.py").unwrap();
    assert_eq!((repro.exit, repro.runs), (Some(0), 2));
    assert_eq!(file(&ledger, "pkg/mod.py").unwrap().operations, ["edit"]);
    // The error of the first run is resolved by the clean rerun of the same command.
    assert_eq!(ledger.errors.len(), 1);
    assert!(!ledger.errors[0].open);
}

#[test]
fn failing_tests_stay_open_until_passed() {
    let messages = vec![
        bash("1", "pytest tests/test_a.py"),
        Message::tool(
            "1",
            "FAILED tests/test_a.py::test_x - assert 1 == 2\nFAILED tests/test_a.py::test_y - KeyError",
        ),
        bash("2", "pytest tests/test_a.py::test_x -v"),
        Message::tool(
            "2",
            "PASSED tests/test_a.py::test_x\n[Command finished with exit code 0]",
        ),
    ];
    let ledger = all(&messages);
    let x = ledger.errors.iter().find(|e| e.text.contains("test_x")).unwrap();
    // pytest -v reports the name first: `x::test_y PASSED`.
    let mut verbose = messages.clone();
    verbose.push(bash("3", "pytest tests/test_a.py::test_y -v"));
    verbose.push(Message::tool(
        "3",
        "tests/test_a.py::test_y PASSED                 [100%]",
    ));
    assert_eq!(all(&verbose).open_errors().count(), 0, "test_y passed in -v form");
    let y = ledger.errors.iter().find(|e| e.text.contains("test_y")).unwrap();
    assert!(!x.open, "test_x passed later");
    assert!(y.open, "test_y never passed");
    assert_eq!(ledger.open_errors().count(), 1);
}

#[test]
fn a_clean_test_run_resolves_the_failures_it_covered() {
    let failing = "FAILED tests/test_pricing.py::test_yen - AssertionError\n\
                   FAILED tests/test_storage.py::test_load - KeyError\n\
                   ========================= 2 failed, 73 passed in 0.61s ==========================";
    // A failing run, then another command and what it printed: the errors left open.
    let open_after = |first: &str, then: &str, output: &str| -> Vec<String> {
        let messages = vec![
            bash("1", first),
            Message::tool("1", failing),
            bash("2", then),
            Message::tool("2", output),
        ];
        all(&messages).open_errors().map(|e| e.text.clone()).collect()
    };
    // Another command than the failing run's, as an agent re-runs with another `tail`.
    let whole_suite = open_after(
        "cd /w && python -m pytest -q 2>&1 | tail -60",
        "cd /w && python -m pytest -q 2>&1 | tail -30",
        "...........                              [100%]\n75 passed in 0.42s",
    );
    assert!(whole_suite.is_empty(), "the whole suite passed: {whole_suite:?}");

    // A clean run of one file resolves only that file's failures.
    let one_file = open_after(
        "python -m pytest -q",
        "python -m pytest tests/test_storage.py -v",
        "tests/test_storage.py::test_load PASSED\n=== 12 passed in 0.20s ===",
    );
    assert_eq!(one_file, ["FAILED tests/test_pricing.py::test_yen - AssertionError"]);

    // A run that still fails resolves nothing.
    let still_failing = open_after(
        "python -m pytest -q",
        "python -m pytest -q | tail -5",
        "=== 1 failed, 74 passed in 0.5s ===",
    );
    assert_eq!(still_failing.len(), 2);
}

#[test]
fn user_messages_last_verbatim_earlier_one_line() {
    let long = format!("Now do this:\n{}", "word ".repeat(1000));
    let messages = vec![
        Message::user("First request\nwith two lines"),
        Message::assistant("ok"),
        Message::user(long.clone()),
    ];
    let ledger = all(&messages);
    assert_eq!(ledger.earlier_users, ["First request with two lines"]);
    let last = ledger.last_user.unwrap();
    assert!(last.starts_with("Now do this:\nword word"));
    assert_eq!(last.chars().count(), LedgerRules::default().last_user_chars);
}

#[test]
fn mini_swe_agent_text_format_bash_blocks_and_observations() {
    let messages = vec![
        Message::user("Fix the bug in parser.py"),
        Message::assistant("THOUGHT: look at it\n\n```bash\ncat src/parser.py | head -50\n```"),
        Message::user("<returncode>0</returncode>\n<output>\ndef parse(): ...\n</output>"),
        Message::assistant("THOUGHT: run it\n\n```bash\npython -c 'import parser'\n```"),
        Message::user("<returncode>1</returncode>\n<output>\nImportError: cannot import name 'x'\n</output>"),
    ];
    let ledger = all(&messages);
    // Observations are results, not user requests.
    assert_eq!(ledger.last_user.as_deref(), Some("Fix the bug in parser.py"));
    assert!(ledger.earlier_users.is_empty());
    assert_eq!(ledger.commands[0].exit, Some(0));
    assert_eq!(ledger.commands[1].exit, Some(1));
    assert_eq!(file(&ledger, "src/parser.py").unwrap().operations, ["read"]);
    assert!(ledger.errors[0].open);
    assert!(ledger.errors[0].text.starts_with("ImportError"));
}

#[test]
fn identifiers_from_the_agents_own_turns_bounded() {
    let mut messages = vec![Message::assistant(
        "The bug is in `fit_model` of `pvlib.temperature`; see https://github.com/x/y/issues/12.",
    )];
    for i in 0..100 {
        messages.push(Message::assistant(format!("`helper_{i}`")));
    }
    let ledger = all(&messages);
    let rules = LedgerRules::default();
    assert_eq!(ledger.identifiers.len(), rules.max_identifiers);
    assert_eq!(ledger.identifiers.last().unwrap(), "helper_99");
    let small = all(&messages[..1]);
    assert_eq!(
        small.identifiers,
        ["fit_model", "pvlib.temperature", "https://github.com/x/y/issues/12"]
    );
}

#[test]
fn rendering_has_fixed_sections_and_respects_the_cap() {
    let messages = vec![
        Message::user("Fix it"),
        bash("1", "pytest tests/test_a.py"),
        Message::tool("1", "FAILED tests/test_a.py::test_x - boom"),
    ];
    let ledger = all(&messages);
    let text = render(&ledger, 10_000);
    assert!(text.starts_with(LEDGER_HEADING));
    let order = [
        "### Last user request",
        "### Open errors",
        "### Files touched",
        "### Commands run",
    ];
    let positions: Vec<usize> = order.iter().map(|h| text.find(h).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("`pytest tests/test_a.py`"));
    for cap in [50, 150, 300] {
        assert!(render(&ledger, cap).chars().count() <= cap);
    }
}

fn load(kind: &str, name: &str) -> Option<Vec<Message>> {
    let dir = common::data_dir()?;
    let path = dir.join("trajectories").join(kind).join(name);
    let document = Document::read_path(&path, None).ok()?;
    Some(document.messages().to_vec())
}

#[test]
fn real_mini_swe_agent_run_paths_commands_errors() {
    let Some(messages) = load(
        "mini-swe-agent",
        "deepseek_chat_dev__pvlib__pvlib-python-1072.traj.json",
    ) else {
        return;
    };
    // The middle up to the first failing pytest run (message 107).
    let middle: Vec<usize> = (1..=107).collect();
    let ledger = extract(&messages, &middle, &LedgerRules::default());
    let temperature = file(&ledger, "pvlib/temperature.py").expect("read with cat | sed");
    assert!(temperature.operations.contains(&"read".to_owned()), "{temperature:?}");
    assert!(
        file(&ledger, "pvlib/singlediode.py")
            .unwrap()
            .operations
            .contains(&"edit".to_owned())
    );
    let repro = file(&ledger, "reproduce_issue.py").unwrap();
    assert!(
        repro.operations.contains(&"write".to_owned()) && repro.operations.contains(&"run".to_owned()),
        "{repro:?}"
    );
    let run = ledger
        .commands
        .iter()
        .find(|c| c.command == "python reproduce_issue.py")
        .unwrap();
    assert!(run.runs >= 5, "{run:?}");
    assert!(
        ledger.commands.iter().all(|c| c.exit.is_some()),
        "every mini-swe-agent result has a returncode"
    );
    let failing = ledger
        .open_errors()
        .find(|e| {
            e.text
                .starts_with("FAILED pvlib/tests/test_temperature.py::test_fuentes")
        })
        .expect("the failing test is open");
    assert!(failing.command.as_deref().unwrap().contains("pytest"));
    // The missing-module error of the first run was fixed by a later run of the same command.
    let numpy = ledger
        .errors
        .iter()
        .find(|e| e.text.contains("No module named 'numpy'"))
        .unwrap();
    assert!(!numpy.open);
    assert!(ledger.last_user.as_deref().unwrap().contains("pvlib"));
}

#[test]
fn real_trajectories_extract_something_from_every_run() {
    let files = common::mini_swe_agent_files();
    for path in files.iter().take(20) {
        let document = Document::read_path(path, None).unwrap();
        let messages = document.messages();
        let ledger = all(messages);
        assert!(!ledger.commands.is_empty(), "{}", path.display());
        assert!(!ledger.files.is_empty(), "{}", path.display());
        let text = render(&ledger, 3000);
        assert!(text.chars().count() <= 3000);
        // Verbatim: every path and command line comes from the messages.
        let source = llm_compactor::plan::ledger::source_text(messages);
        for f in &ledger.files {
            assert!(source.contains(&f.path), "{} invented {}", path.display(), f.path);
        }
    }
}

#[test]
fn real_openhands_run() {
    let Some(dir) = common::data_dir() else { return };
    let path = dir.join("trajectories/openhands/multi_swe_bench_examples_output.jsonl");
    let Ok(bytes) = std::fs::read(&path) else { return };
    let Some(line) = bytes.split(|b| *b == b'\n').next() else {
        return;
    };
    let Ok(document) = Document::from_bytes(line, None, "openhands line 1") else {
        eprintln!("NOTICE: skipping: the OpenHands line is not a conversation this build reads");
        return;
    };
    let ledger = all(document.messages());
    assert!(!ledger.files.is_empty() || !ledger.commands.is_empty(), "{ledger:?}");
}

/// Regression (found by `compactor eval --instructions`): a rule said three times, the
/// last of them the last request, was listed as the last request and again, with a
/// count, among the earlier messages.
#[test]
fn a_message_said_again_as_the_last_request_is_listed_once() {
    let rule = "Remember: never pay a deposit over 20% upfront.";
    let messages = vec![
        Message::user(rule),
        Message::assistant("Noted."),
        Message::user("Which hotel is quieter?"),
        Message::assistant("The one by the park."),
        Message::user(rule),
        Message::assistant("Noted."),
        Message::user(rule),
    ];
    let ledger = all(&messages);
    assert_eq!(ledger.last_user.as_deref(), Some(rule));
    assert_eq!(ledger.earlier_users, vec!["Which hotel is quieter?".to_owned()]);
    let text = render(&ledger, 2_000);
    assert_eq!(text.matches(rule).count(), 1, "{text}");
}
