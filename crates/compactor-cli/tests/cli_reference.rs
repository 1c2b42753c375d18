//! Issue 44: the CLI reference cannot fall behind the command. Every flag of every
//! command and subcommand, as the binary's own `--help` (clap) lists it, must be named in
//! the reference pages (docs/reference/cli.md, docs/reference/proxy.md for the proxy's).
//! The gauge is checked on a page that lacks a flag, so it can fail.

use crate::support::run;

use std::collections::BTreeSet;
use std::path::PathBuf;

/// The subcommands a `--help` text lists (its "Commands:" section), `help` aside.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The long flags a `--help` text lists, `--help` and `--version` aside.
fn flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("--") || l.starts_with('-') && l.contains(", --"))
        .filter_map(|l| l.split("--").nth(1))
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            format!("--{name}")
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

/// Every (command path, flag) of the binary, walking its subcommands.
fn every_flag() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut queue = vec![Vec::<String>::new()];
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let help = run(&args, None);
        assert!(help.status.success(), "compactor {}", args.join(" "));
        let text = String::from_utf8_lossy(&help.stdout).into_owned();
        for flag in flags(&text) {
            out.push((path.join(" "), flag));
        }
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
    }
    out
}

/// The flags of `all` that `pages` never name.
fn missing(all: &[(String, String)], pages: &str) -> Vec<String> {
    let named = |flag: &str| {
        pages.match_indices(flag).any(|(at, _)| {
            let next = pages[at + flag.len()..].chars().next();
            !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let mut out: Vec<String> = all
        .iter()
        .filter(|(_, flag)| !named(flag))
        .map(|(command, flag)| format!("compactor {command} {flag}"))
        .collect();
    out.dedup();
    out
}

fn reference() -> String {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference");
    ["cli.md", "proxy.md"]
        .iter()
        .map(|page| std::fs::read_to_string(docs.join(page)).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_flag_of_every_command_is_in_the_reference() {
    let all = every_flag();
    assert!(
        all.len() > 100,
        "the walk found only {} flags: the help parser is broken",
        all.len()
    );
    assert!(
        all.iter().any(|(c, f)| c == "proxy" && f == "--upstream"),
        "the walk must reach the proxy's flags"
    );
    let missing = missing(&all, &reference());
    assert!(
        missing.is_empty(),
        "flags the reference (docs/reference/cli.md, proxy.md) does not name:\n{}",
        missing.join("\n")
    );
}

#[test]
fn the_gauge_reports_a_flag_the_page_lacks() {
    let all = vec![
        ("compact".to_owned(), "--budget".to_owned()),
        ("compact".to_owned(), "--pin".to_owned()),
    ];
    // `--pin-tool` does not name `--pin`; `--budget` named once is enough.
    let page = "`--budget N` and `--pin-tool NAME`";
    assert_eq!(missing(&all, page), vec!["compactor compact --pin".to_owned()]);
    let help = "Commands:\n  sessions  List\n  help  Print\n\nOptions:\n      --listen <LISTEN>\n  -h, --help\n  -o, --out <FILE>\n";
    assert_eq!(subcommands(help), vec!["sessions".to_owned()]);
    assert_eq!(
        flags(help).into_iter().collect::<Vec<_>>(),
        vec!["--listen".to_owned(), "--out".to_owned()]
    );
}
