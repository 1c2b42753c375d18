#!/usr/bin/env bash
# mdBook for the docs book (docs/book.toml), installed into target/mdbook when absent
# (cargo install, pinned, without the serve/watch features). Idempotent: a no-op when
# target/mdbook/bin/mdbook runs. crates/compactor-cli/tests/docs_book.rs builds the book
# with it (and skips with a notice without it; under CI=true it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=target/mdbook
VERSION=0.5.4
if "$ROOT/bin/mdbook" --version 2>/dev/null | grep -q "v$VERSION"; then
    echo "mdbook: $("$ROOT/bin/mdbook" --version) in $ROOT"
    exit 0
fi
cargo install mdbook --version "$VERSION" --no-default-features --locked --root "$ROOT"
"$ROOT/bin/mdbook" --version
