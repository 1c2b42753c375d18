//! Issue 44: the docs build as a book. `mdbook build docs` (the pages of docs/, ordered by
//! docs/SUMMARY.md) must succeed and give a page per chapter; every chapter in the summary
//! must exist, and every page of docs/ but the book's own files must be in the summary.
//! mdBook comes from `scripts/mdbook.sh` (target/mdbook) or PATH; without it the build is
//! skipped with a notice, and fails under CI=true. The links themselves are checked by
//! `docs_links.rs`.

use std::path::{Path, PathBuf};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .canonicalize()
        .unwrap()
}

/// The chapters SUMMARY.md lists, as paths relative to docs/.
fn chapters() -> Vec<String> {
    let summary = std::fs::read_to_string(docs().join("SUMMARY.md")).unwrap();
    summary
        .lines()
        .filter_map(|line| line.split_once("](").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once(')').map(|(path, _)| path.to_owned()))
        .collect()
}

/// Every Markdown page under docs/, relative to it.
fn pages(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            pages(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

#[test]
fn the_summary_lists_every_page_and_only_pages_that_exist() {
    let listed = chapters();
    for chapter in &listed {
        assert!(
            docs().join(chapter).is_file(),
            "SUMMARY.md lists a missing page: {chapter}"
        );
    }
    let mut all = Vec::new();
    pages(&docs(), &docs(), &mut all);
    for page in all.iter().filter(|p| p.as_str() != "SUMMARY.md") {
        assert!(listed.contains(page), "docs/{page} is not in docs/SUMMARY.md");
    }
}

/// mdBook: `target/mdbook/bin/mdbook` (scripts/mdbook.sh), else `mdbook` on PATH.
fn mdbook() -> Option<PathBuf> {
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/mdbook/bin/mdbook");
    if local.is_file() {
        return Some(local);
    }
    let on_path = std::process::Command::new("mdbook").arg("--version").output();
    on_path
        .is_ok_and(|o| o.status.success())
        .then(|| PathBuf::from("mdbook"))
}

#[test]
fn the_book_builds() {
    let Some(mdbook) = mdbook() else {
        let message = "mdbook not installed (scripts/mdbook.sh)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
        eprintln!("NOTICE: skipping: {message}");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let built = std::process::Command::new(&mdbook)
        .arg("build")
        .arg(docs())
        .arg("--dest-dir")
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "mdbook build failed:\n{}{}",
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    for chapter in chapters() {
        let html = if chapter == "README.md" {
            "index.html".to_owned()
        } else {
            chapter.replace(".md", ".html")
        };
        assert!(out.path().join(&html).is_file(), "no {html} in the book");
    }
    let proxy = std::fs::read_to_string(out.path().join("guide/proxy.html")).unwrap();
    assert!(
        proxy.contains("compactor proxy"),
        "the proxy guide's text is in the book"
    );
}
