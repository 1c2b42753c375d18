#!/usr/bin/env bash
# The Node package (crates/llm-compactor-node): builds its native addon, installs its
# pinned dev tools (TypeScript, from the committed lock file) and runs its tests: the
# package under `node --test`, and `tsc --strict` over a typed consumer file that checks
# index.d.ts. Run by scripts/test.sh (the README's test command).
#
# COMPACTOR_NODE_PROFILE=release builds the addon as it would be published (slower to
# build; the tests are the same).
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE="${COMPACTOR_NODE_PROFILE:-debug}"
if ! command -v node >/dev/null; then
    echo "node-package: node is not installed (Node 18 or later is needed)" >&2
    exit 1
fi
if [ "$PROFILE" = release ]; then
    cargo build -p llm-compactor-node --release
else
    cargo build -p llm-compactor-node
fi
PKG=crates/llm-compactor-node
# Written beside the package under a temporary name, then moved into place (atomic).
cp "target/$PROFILE/libllm_compactor_node.so" "$PKG/.addon.tmp"
mv "$PKG/.addon.tmp" "$PKG/llm-compactor.linux-x64-gnu.node"
cd "$PKG"
if [ ! -x node_modules/.bin/tsc ]; then
    npm ci --ignore-scripts --no-audit --no-fund
fi
echo "== node --test (the Node package)"
node --test tests/
echo "== tsc --strict (index.d.ts, over a typed consumer)"
node_modules/.bin/tsc -p tsconfig.json
echo "node-package: ok"
