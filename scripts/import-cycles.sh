#!/usr/bin/env bash
# Counts import cycles between the files of a crate (default: the library).
#
# Usage: scripts/import-cycles.sh [SRC_DIR...]   (exit 1 when any has a cycle)
# Its own test: scripts/import-cycles-selftest.sh (CI runs it first).
#
# A file depends on another when it names a path into it: in a `use` (braces expanded,
# `self` in a group meaning the group's module), or written inline in code
# (`super::x::f()`, `crate::a::B`, `self::c::D`, or a child module's name). Paths are
# resolved as rustc does: `self` is the module the path is written in and `super` its
# parent, whether that module is a file (`foo/bar.rs`: `self` is `foo::bar`, `super` is
# `foo`), a `mod.rs` (`foo/mod.rs`: `self` is `foo`, `super` its parent) or an inline
# `mod name { … }` inside a file. A path is resolved to the file that defines its item:
# the deepest module it names, and through a module's `pub use …::Item` re-export to
# where the item is. A module's own uses of its descendants (its `mod` declarations and
# re-exports of its children) are structure, not dependencies (they are not edges).
# Test-only code is not part of the crate's graph: an item under `#[cfg(test)]` (a
# `mod tests { … }` block, a `use`, a function) is skipped, and so is a file declared
# by `#[cfg(test)] mod name;` (and its children).
# A cycle is a group of two or more files that reach each other (a strongly connected
# component); each is printed with the edges inside it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$#" -gt 0 ] || set -- crates/llm-compactor/src
status=0
for SRC in "$@"; do
python3 - "$SRC" <<'PY' || status=1
import os, re, sys
src = sys.argv[1]
if not os.path.isdir(src):
    sys.exit(f"import-cycles: no such directory: {src}")

def module_of(path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)

files = {}
for root, _, names in os.walk(src):
    for name in names:
        if name.endswith(".rs"):
            path = os.path.join(root, name)
            files[module_of(path)] = path

def blank(text):
    """Comments, string and char literals become spaces (newlines kept), so that no
    brace, quote or path inside them is read as code."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            depth, j = 0, i
            while j < n:
                if text.startswith("/*", j):
                    depth += 1; j += 2
                elif text.startswith("*/", j):
                    depth -= 1; j += 2
                    if depth == 0:
                        break
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 260])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j])); i = j
        elif c == "'" and (m := re.match(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]*\}|.)|[^\\'\n])'", text[i:i + 14])):
            out.append("' '" + " " * (m.end() - 3)); i += m.end()
        else:
            out.append(c); i += 1
    return "".join(out)

def block_end(text, i):
    """The index just past the bracket that closes the one at i (`{`, `(` or `[`)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)

def item_end(text, i):
    """The end of the item (or statement) that starts at i: its `;`, or the block that
    closes it (`mod x { … }`, `fn f() { … }`, `impl … { … }`)."""
    semi_only = re.match(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:use|const|static|let|type)\b", text[i:])
    depth = 0
    for j in range(i, len(text)):
        ch = text[j]
        if ch in "([{":
            if ch == "{" and depth == 0 and not semi_only:
                return block_end(text, j)
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return j
        elif ch == ";" and depth == 0:
            return j + 1
    return len(text)

CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
ATTR = re.compile(r"\s*#\s*\[")

def drop_test_items(text):
    """Removes each item under `#[cfg(test)]`; returns the text and the names of the
    child modules it declared test-only (`#[cfg(test)] mod name;`)."""
    test_children = set()
    while (m := CFG_TEST.search(text)):
        i = m.end()
        while (a := ATTR.match(text, i)):  # further attributes on the same item
            i = block_end(text, a.end() - 1)
        end = item_end(text, i)
        decl = re.match(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text[i:end])
        if decl:
            test_children.add(decl.group(1))
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():end]) + text[end:]
    return text, test_children

# Each file's text, split into the modules written in it: (module path, its own text).
regions, test_only, inline_modules = {}, set(), set()
INLINE_MOD = re.compile(r"\b(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")
def split_inline(module, text, out):
    while (m := INLINE_MOD.search(text)):
        open_at = m.end() - 1
        end = block_end(text, open_at)
        child = module + (m.group(1),)
        inline_modules.add(child)
        split_inline(child, text[open_at + 1:end - 1], out)
        text = text[:m.start()] + " " * (end - m.start()) + text[end:]
    out.append((module, text))

for mod, path in files.items():
    text = blank(open(path, encoding="utf-8").read())
    if re.search(r"#\s*!\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]", text):
        test_only.add(mod)
    text, children = drop_test_items(text)
    test_only.update(mod + (c,) for c in children)
    out = []
    split_inline(mod, text, out)
    regions[mod] = out

# A file declared test-only, and everything under it, is not part of the graph.
for mod in list(files):
    if any(mod[:len(t)] == t for t in test_only):
        del files[mod]
        del regions[mod]

module_file = {m: m for m in files}
for m in inline_modules:
    owner = max((f for f in files if m[:len(f)] == f), key=len, default=None)
    if owner is not None:
        module_file[m] = owner

def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]"""
    tree = re.sub(r"\s+", " ", tree.strip())
    start = tree.find("{")
    if start < 0:
        return [tree]
    prefix, inner = tree[:start], tree[start + 1:tree.rindex("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur); cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for part in parts:
        if part.strip():
            out += [prefix + p for p in expand(part)]
    return out

def clean(path):
    """`a :: b as c` -> (`a::b`, `c`); `a::b::self` -> `a::b`; `a::*` -> `a`."""
    path = path.strip()
    alias = None
    if (m := re.match(r"(.*?)\s+as\s+(\w+)$", path)):
        path, alias = m.group(1), m.group(2)
    path = re.sub(r"\s+", "", path).lstrip(":")
    path = re.sub(r"::(?:self|\*)$", "", path)
    return path, alias

def absolute(ctx, path):
    """The module path a written path names, seen from module ctx; None when it leaves
    the crate (std, a dependency) or names a local item."""
    parts = [p for p in path.split("::") if p]
    if not parts:
        return None
    if parts[0] == "crate":
        return tuple(parts[1:])
    if parts[0] == "self":
        return ctx + tuple(parts[1:])
    if parts[0] == "super":
        cur = ctx
        while parts and parts[0] == "super":
            if not cur:
                return None
            cur, parts = cur[:-1], parts[1:]
        return cur + tuple(parts)
    if (ctx + (parts[0],)) in module_file:
        return ctx + tuple(parts)  # a child module, named relatively
    return None

USE = re.compile(r"\buse\s+([^;]+);")
PUB_USE = re.compile(r"\bpub(?:\s*\([^)]*\))?\s+use\s+([^;]+);")
INLINE_PATH = re.compile(r"(?<![\w$:])(\w+(?:\s*::\s*\w+)+)")

# `pub use path::Item [as Name]`: (module, name) -> the item's full path.
reexports = {}
for mod, parts in regions.items():
    for ctx, text in parts:
        for stmt in PUB_USE.findall(text):
            for p in expand(stmt):
                path, alias = clean(p)
                full = absolute(ctx, path)
                if full:
                    reexports[(ctx, alias or full[-1])] = full

def resolve(full, hops=0):
    """The file that defines what full names."""
    for n in range(len(full), -1, -1):
        if full[:n] in module_file:
            mod, rest = full[:n], full[n:]
            if rest and (mod, rest[0]) in reexports and hops < 16:
                target = reexports[(mod, rest[0])]
                if target != full[:n + 1]:
                    return resolve(target + rest[1:], hops + 1)
            return module_file[mod]
    return None

edges = {m: set() for m in files}
for mod, parts in regions.items():
    for ctx, text in parts:
        paths = []
        for stmt in USE.findall(text):
            paths += [clean(p)[0] for p in expand(stmt)]
        code = USE.sub(lambda m: " " * len(m.group(0)), text)
        paths += [re.sub(r"\s+", "", p) for p in INLINE_PATH.findall(code)]
        for p in paths:
            full = absolute(ctx, p)
            if full is None:
                continue
            target = resolve(full)
            if target is None or target == mod:
                continue
            # A module's declarations and re-exports of its own descendants: structure.
            if target[:len(mod)] == mod:
                continue
            edges[mod].add(target)

index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in sorted(edges[v]):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            sccs.append(comp)
for v in sorted(files):
    if v not in index:
        visit(v)
name = lambda m: os.path.relpath(files[m], src)
for comp in sorted(sccs, key=lambda c: sorted(map(name, c))):
    members = set(comp)
    print("cycle:", ", ".join(sorted(map(name, comp))))
    for v in sorted(comp, key=name):
        for w in sorted(edges[v] & members, key=name):
            print(f"    {name(v)} -> {name(w)}")
print(f"{len(sccs)} import cycle(s) between files of {src}")
sys.exit(1 if sccs else 0)
PY
done
exit "$status"
