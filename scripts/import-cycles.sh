#!/usr/bin/env bash
# Counts import cycles between the files of a crate (default: the library).
#
# Usage: scripts/import-cycles.sh [SRC_DIR]   (exit 1 when there is a cycle)
#
# A file depends on another when it names a path into it: a `use crate::…`, `use
# super::…` or `use self::…` (braces expanded), or a `crate::…` path written inline. A
# path is resolved to the file that defines its item: the deepest module file it names,
# and through a module's `pub use child::Item` re-export to the child's file. A module's
# own re-exports of its children are structure, not dependencies (they are not edges).
# A cycle is a group of two or more files that reach each other (a strongly connected
# component); each is printed with its files.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="${1:-crates/llm-compactor/src}"
python3 - "$SRC" <<'PY'
import os, re, sys
src = sys.argv[1]

def module_of(path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel[-1] in ("lib", "main"):
        rel = rel[:-1]
    elif rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)

files = {}
for root, _, names in os.walk(src):
    for name in names:
        if name.endswith(".rs"):
            path = os.path.join(root, name)
            files[module_of(path)] = path
is_dir_module = {m: os.path.basename(p) in ("mod.rs", "lib.rs", "main.rs") for m, p in files.items()}

def strip(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)

def expand(tree):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]"""
    tree = tree.strip()
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
    if start is None:
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

texts = {m: strip(open(p, encoding="utf-8").read()) for m, p in files.items()}
uses = {}
for m, text in texts.items():
    paths = []
    for stmt in re.findall(r"\buse\s+([^;]+);", text):
        for p in expand(stmt):
            p = re.sub(r"\s+as\s+\w+$", "", p.strip()).replace(" ", "").replace("\n", "")
            paths.append(p)
    body = re.sub(r"\buse\s+[^;]+;", "", text)
    paths += re.findall(r"\bcrate(?:::\w+)+", body)
    uses[m] = paths

def absolute(m, path):
    parts = path.split("::")
    base = m if is_dir_module[m] else m[:-1]
    if parts[0] == "crate":
        return tuple(parts[1:])
    if parts[0] == "self":
        return base + tuple(parts[1:])
    if parts[0] == "super":
        cur = base
        while parts and parts[0] == "super":
            cur, parts = cur[:-1], parts[1:]
        return cur + tuple(parts)
    if m in files and is_dir_module[m] and (base + (parts[0],)) in files:
        return base + tuple(parts)  # a child module, named relatively
    return None

# A module's `pub use child::…::Item` re-exports: (module, name) -> the child's full path.
reexports = {}
for m, text in texts.items():
    if not is_dir_module[m]:
        continue
    for stmt in re.findall(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
        for p in expand(stmt):
            p = p.strip().replace(" ", "").replace("\n", "")
            full = absolute(m, p)
            if full and len(full) > len(m) and full[:len(m)] == m:
                name = re.sub(r".*\bas(\w+)$", r"\1", p.split("::")[-1])
                reexports[(m, name)] = full

def resolve(full, seen=0):
    for n in range(len(full), -1, -1):
        if full[:n] in files:
            mod = full[:n]
            rest = full[n:]
            if rest and (mod, rest[0]) in reexports and seen < 8:
                return resolve(reexports[(mod, rest[0])] + rest[1:], seen + 1)
            return mod
    return None

edges = {m: set() for m in files}
for m, paths in uses.items():
    for p in paths:
        full = absolute(m, p)
        if full is None:
            continue
        target = resolve(full)
        if target is None or target == m:
            continue
        # A module's re-exports of (and declarations of) its own descendants: structure.
        if is_dir_module[m] and target[:len(m)] == m:
            continue
        edges[m].add(target)

index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1
    stack.append(v); on.add(v)
    for w in edges[v]:
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
