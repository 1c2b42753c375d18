#!/usr/bin/env bash
# Issue 44: `cargo install --path crates/compactor-cli` works from the clone as Getting
# started says. Runs that page's install block (the `sh` block under "## Install the
# command") in a temp dir, with HOME there too, the install redirected into it and reusing
# the workspace's target dir so that what is built is not rebuilt: `--root TMP --debug
# --offline --locked` appended to its `cargo install`, CARGO_TARGET_DIR the workspace's.
# Then the installed `TMP/bin/compactor --version` must answer, and the completions and the
# man page the block writes must be there. Run by scripts/test.sh after `cargo test`, not
# inside it: the install links target/debug/compactor, which running tests execute.
# On a 2-core machine: ~40 s after `cargo test --workspace --all-features` (the four
# workspace crates are rebuilt with the CLI's own feature set; every dependency is
# reused), ~1 s when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
block="$(awk '/^## Install the command/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b { print }' docs/guide/getting-started.md)"
if ! grep -q '^cargo install --path crates/compactor-cli' <<<"$block"; then
    echo "install-check: no \`cargo install --path crates/compactor-cli\` block under \"## Install the command\" in docs/guide/getting-started.md" >&2
    exit 1
fi
script="$(sed "s|^cargo install --path crates/compactor-cli|cargo install --path '$repo/crates/compactor-cli' --root '$tmp/root' --debug --offline --locked|" <<<"$block")"
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
rustup_home="${RUSTUP_HOME:-$HOME/.rustup}"
target="${CARGO_TARGET_DIR:-$repo/target}"
mkdir "$tmp/home"
start=$SECONDS
(cd "$tmp" && env HOME="$tmp/home" CARGO_HOME="$cargo_home" RUSTUP_HOME="$rustup_home" CARGO_TARGET_DIR="$target" \
    PATH="$tmp/root/bin:$PATH" bash -euo pipefail -c "$script")
"$tmp/root/bin/compactor" --version
test -s "$tmp/home/.local/share/bash-completion/completions/compactor"
test -s "$tmp/home/.local/share/man/man1/compactor.1"
echo "install-check: the Getting started install block ran in $((SECONDS - start)) s"
