//! Issue 44: no broken link in the front door or the docs. Every relative link of
//! README.md, BENCHMARKS.md, each crate's README and every page under docs/ must name a
//! file that exists and, when it names an anchor in a Markdown page, a heading of that
//! page (GitHub's anchor rule). Links in code blocks and inline code are not links.
//! A self-test runs the same checker over pages with known broken links, so the check
//! cannot pass by finding nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The repository root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// GitHub's anchor for a heading: inline code and link syntax dropped, lower-cased, every
/// character but letters, digits, `-`, `_` and spaces removed, spaces made `-`.
fn slug(heading: &str) -> String {
    let text = strip_links(&heading.replace('`', ""));
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `[text](target)` becomes `text`.
fn strip_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|i| close + i) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The lines of a page outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The anchors a Markdown page's headings make (a repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    let mut out = HashSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
        *n += 1;
    }
    out
}

/// The link targets of a line, inline code removed first.
fn targets(line: &str) -> Vec<String> {
    let mut prose = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 0 {
            prose.push_str(part);
        }
    }
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("").to_owned();
        out.push(target);
        rest = &after[end.min(after.len())..];
    }
    out
}

/// Every broken relative link of `pages`, as `page:line: problem`.
fn broken_links(pages: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap();
        for (number, line) in prose_lines(&text) {
            for target in targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(path)
                };
                let at = format!("{}:{number}", page.display());
                if !file.exists() {
                    broken.push(format!("{at}: no such file: {target}"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_some_and(|e| e == "md") {
                    let headings = anchors(&std::fs::read_to_string(&file).unwrap());
                    if !headings.contains(anchor) {
                        broken.push(format!("{at}: no heading for #{anchor} in {target}"));
                    }
                }
            }
        }
    }
    broken
}

/// Markdown files under `dir`, recursively.
fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The pages checked: the front door, the benchmarks, the examples' index, each crate's
/// README, docs/.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![
        root.join("README.md"),
        root.join("BENCHMARKS.md"),
        root.join("examples/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        if readme.is_file() {
            pages.push(readme);
        }
    }
    markdown_under(&root.join("docs"), &mut pages);
    pages
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_resolves() {
    let pages = pages();
    assert!(pages.len() > 20, "the docs were found: {pages:?}");
    let broken = broken_links(&pages);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker finds what it is meant to find: a missing file, a missing anchor (in
/// another page and in the same page), and nothing in code.
#[test]
fn the_link_checker_fails_on_broken_links() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("guide")).unwrap();
    std::fs::write(
        dir.path().join("guide/page.md"),
        "# A page\n\n## The `proxy`: setup, step 2\n\n## Setup\n\n## Setup\n",
    )
    .unwrap();
    let index = dir.path().join("index.md");
    std::fs::write(
        &index,
        "# Index\n\n\
         [fine](guide/page.md) and [fine too](guide/page.md#the-proxy-setup-step-2),\n\
         [repeated](guide/page.md#setup-1), [self](#index), [web](https://example.com/x.md).\n\
         [gone](guide/missing.md) and [no anchor](guide/page.md#nowhere) and [self](#nope).\n\
         `[in code](guide/missing-too.md)`\n\
         ```sh\n[in a block](guide/missing-three.md)\n```\n",
    )
    .unwrap();
    let broken = broken_links(&[index]);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(
        broken[0].ends_with(":5: no such file: guide/missing.md"),
        "{}",
        broken[0]
    );
    assert!(
        broken[1].contains("no heading for #nowhere in guide/page.md"),
        "{}",
        broken[1]
    );
    assert!(broken[2].contains("no heading for #nope"), "{}", broken[2]);
}

/// Issue 44's limits on the front door: README.md at most 250 lines, its proxy section at
/// most 40, BENCHMARKS.md at most 300.
#[test]
fn the_front_door_stays_short() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let benchmarks = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    assert!(
        readme.lines().count() <= 250,
        "README.md has {} lines",
        readme.lines().count()
    );
    assert!(
        benchmarks.lines().count() <= 300,
        "BENCHMARKS.md has {} lines",
        benchmarks.lines().count()
    );
    let proxy = crate::readme_proxy::proxy_section(&readme);
    assert!(
        proxy.lines().count() <= 40,
        "the proxy section has {} lines",
        proxy.lines().count()
    );
}
