//! Issue 44: every command and code block of Getting started and the Guides
//! (`docs/guide/*.md`) is executed by a test, so the book cannot rot. This is the gauge:
//! it reads every fenced block of those pages and names the test that runs it, by rule:
//!
//! - `sh`: `docs_recipes.rs` runs every one (in page order, one scratch directory per
//!   page), except the Claude Code and Codex pages' and the README's own proxy commands,
//!   which `readme_proxy.rs` runs (with the Codex page's `toml`, its `config.toml`), and
//!   Getting started's `cargo install` block, which `scripts/install-check.sh` runs from
//!   `scripts/test.sh`;
//! - `python`: `crates/llm-compactor-py/tests/test_guide_blocks.py` runs every one under
//!   pytest (a page's blocks in order, in one namespace);
//! - `js`: `crates/llm-compactor-node/tests/guide.test.js` runs every one under
//!   `node --test`;
//! - `rust` (and `rust,no_run`): compiled as doctests, on a page that `llm-compactor`'s
//!   `lib.rs` includes with `include_str!` (`rust,ignore` is run by nothing);
//! - anything else (`text` output, `ts`, ...) is run by nothing.
//!
//! A block run by nothing must say so in the page, on the line before its fence:
//! `<!-- not run: REASON -->` (a reason is required). Any other such block fails the
//! gauge, and so does a marker with no reason. Each runner applies the same marker
//! (`MARKER`), so a marked block is not run and an unmarked one is.

use std::path::{Path, PathBuf};

/// The marker that says a block is not run, and why.
pub const MARKER: &str = "<!-- not run:";

/// A fenced block of a page.
#[derive(Clone, Debug)]
pub struct Block {
    /// The 1-based line of the opening fence.
    pub line: usize,
    /// The info string (`sh`, `python`, `rust,ignore`, ...).
    pub info: String,
    /// The block's text.
    pub body: String,
    /// The reason of a `<!-- not run: REASON -->` marker on the line before the fence.
    pub not_run: Option<String>,
}

/// The fenced blocks of a page, with their markers.
pub fn fenced(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match &mut open {
            None if fence => {
                let before = previous.trim();
                let not_run = before
                    .strip_prefix(MARKER)
                    .and_then(|rest| rest.strip_suffix("-->"))
                    .map(|reason| reason.trim().to_owned());
                open = Some(Block {
                    line: i + 1,
                    info: line.trim_start().trim_start_matches('`').trim().to_owned(),
                    body: String::new(),
                    not_run,
                });
            }
            Some(_) if fence => out.push(open.take().unwrap()),
            Some(block) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            None => {}
        }
        previous = line;
    }
    out
}

/// The install command whose block `scripts/install-check.sh` runs (after `cargo test`,
/// since the install links `target/debug/compactor`, which running tests execute).
pub const INSTALL: &str = "cargo install --path crates/compactor-cli";

/// Pages whose `sh` blocks `readme_proxy.rs` runs (the client stand-ins with their checks).
pub const README_PROXY_PAGES: &[&str] = &["claude-code.md", "codex.md"];

/// The test that runs `block` of the guide page `page` (a file name under docs/guide/),
/// `Err` with the reason when nothing runs it. `doctest_pages`: the guide pages
/// `llm-compactor`'s lib.rs includes as doctests.
pub fn runner(page: &str, block: &Block, doctest_pages: &[String]) -> Result<&'static str, String> {
    if let Some(reason) = &block.not_run {
        return if reason.is_empty() {
            Err("a `not run` marker without a reason".to_owned())
        } else {
            Ok("nothing (marked not run)")
        };
    }
    match block.info.as_str() {
        "sh" if README_PROXY_PAGES.contains(&page) => Ok("readme_proxy.rs"),
        "sh" if block.body.contains(INSTALL) => Ok("scripts/install-check.sh (scripts/test.sh)"),
        "toml" if page == "codex.md" => Ok("readme_proxy.rs (Codex's config.toml)"),
        "sh" => Ok("docs_recipes.rs"),
        "python" => Ok("llm-compactor-py/tests/test_guide_blocks.py"),
        "js" => Ok("llm-compactor-node/tests/guide.test.js"),
        "rust" | "rust,no_run" if doctest_pages.iter().any(|p| p == page) => Ok("llm-compactor doctests"),
        other => Err(format!(
            "a `{other}` block nothing runs: make it run, or mark it `{MARKER} REASON -->`"
        )),
    }
}

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The guide pages (docs/guide/*.md), by file name, sorted.
pub fn guide_pages() -> Vec<(String, String)> {
    let dir = root().join("docs/guide");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    pages.sort();
    pages
}

/// The guide pages `crates/llm-compactor/src/lib.rs` includes as doctests.
fn doctest_pages() -> Vec<String> {
    let lib = std::fs::read_to_string(root().join("crates/llm-compactor/src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.split("include_str!(\"../../../docs/guide/").nth(1))
        .filter_map(|rest| rest.split('"').next().map(str::to_owned))
        .collect()
}

/// Every block of `pages` that nothing runs, as `page:line: why`.
fn unexecuted(pages: &[(String, String)], doctest_pages: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (page, text) in pages {
        for block in fenced(text) {
            if let Err(why) = runner(page, &block, doctest_pages) {
                out.push(format!("docs/guide/{page}:{}: {why}", block.line));
            }
        }
    }
    out
}

#[test]
fn every_block_of_the_guides_is_executed_or_marked() {
    let pages = guide_pages();
    assert!(pages.iter().any(|(p, _)| p == "getting-started.md"), "{pages:?}");
    let doctests = doctest_pages();
    assert!(doctests.contains(&"library.md".to_owned()), "{doctests:?}");
    // The runners the rules name exist, honour the same marker, and the test command runs them.
    for file in [
        "crates/llm-compactor-py/tests/test_guide_blocks.py",
        "crates/llm-compactor-node/tests/guide.test.js",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains(MARKER), "{file} skips blocks marked {MARKER:?}");
    }
    let test_sh = std::fs::read_to_string(root().join("scripts/test.sh")).unwrap();
    for step in ["pytest", "scripts/node-package.sh", "scripts/install-check.sh"] {
        assert!(test_sh.contains(step), "scripts/test.sh runs {step}");
    }
    let install = std::fs::read_to_string(root().join("scripts/install-check.sh")).unwrap();
    assert!(
        install.contains(&format!("^{INSTALL}")),
        "scripts/install-check.sh runs {INSTALL:?}"
    );
    let node = std::fs::read_to_string(root().join("scripts/node-package.sh")).unwrap();
    assert!(
        node.contains("node --test tests/"),
        "scripts/node-package.sh runs the package's tests/"
    );
    let missing = unexecuted(&pages, &doctests);
    assert!(missing.is_empty(), "blocks no test runs:\n{}", missing.join("\n"));
    // The inventory, for the log: which test runs each block.
    for (page, text) in &pages {
        for block in fenced(text) {
            let by = runner(page, &block, &doctests).unwrap();
            let why = block.not_run.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            println!("docs/guide/{page}:{} ```{}: {by}{why}", block.line, block.info);
        }
    }
}

/// The gauge can fail: an unmarked output block, an ignored Rust block, a Rust block on a
/// page that is not a doctest and a marker without a reason are each reported; marked and
/// runnable blocks are not.
#[test]
fn the_gauge_reports_unmarked_unexecuted_blocks() {
    let page = "# A page\n\n```sh\ncompactor --version\n```\n\n```text\ncompactor 0.1.0\n```\n\n\
                <!-- not run: output of the command above -->\n```text\ncompactor 0.1.0\n```\n\n\
                ```rust,ignore\nlet x = 1;\n```\n\n<!-- not run: -->\n```ts\nlet y = 2\n```\n\n\
                ```python\nprint(1)\n```\n\n```rust\nlet z = 3;\n```\n";
    let blocks = fenced(page);
    assert_eq!(blocks.len(), 7, "{blocks:#?}");
    assert_eq!(blocks[2].not_run.as_deref(), Some("output of the command above"));
    let pages = vec![("page.md".to_owned(), page.to_owned())];
    let missing = unexecuted(&pages, &[]);
    assert_eq!(missing.len(), 4, "{missing:#?}");
    assert!(
        missing[0].starts_with("docs/guide/page.md:7: a `text` block"),
        "{}",
        missing[0]
    );
    assert!(
        missing[1].starts_with("docs/guide/page.md:16: a `rust,ignore` block"),
        "{}",
        missing[1]
    );
    assert!(
        missing[2].contains(":21: a `not run` marker without a reason"),
        "{}",
        missing[2]
    );
    assert!(
        missing[3].starts_with("docs/guide/page.md:29: a `rust` block"),
        "{}",
        missing[3]
    );
    // The same Rust block on a page included as a doctest is run.
    assert_eq!(unexecuted(&pages, &["page.md".to_owned()]).len(), 3);
}
