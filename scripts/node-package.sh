#!/usr/bin/env bash
# The Node package (crates/llm-compactor-node): builds its native addon, installs its
# pinned dev dependencies from the committed lock file (TypeScript, and the frameworks the
# adapters are tested with: the Vercel AI SDK `ai` + `@ai-sdk/openai-compatible`,
# `langchain` + `@langchain/core` + `@langchain/openai`, `@openai/agents`) and runs its
# tests: the package under `node --test` (the adapters' against a scripted server on
# 127.0.0.1), and `tsc --strict` over typed consumer files that check index.d.ts and the
# adapters' types against the real frameworks'. Run by scripts/test.sh (the README's test
# command). Without the registry (or a cache holding the lock file's packages) the
# install fails, and so does this script: nothing is skipped.
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
# Installed again whenever the lock file differs from the one last installed.
if ! cmp -s package-lock.json node_modules/.installed-lock.json; then
    npm ci --ignore-scripts --no-audit --no-fund
    cp package-lock.json node_modules/.installed-lock.json
fi
echo "== node --test (the Node package)"
node --test tests/
echo "== tsc --strict (index.d.ts, over a typed consumer; the adapters against the frameworks' types)"
node_modules/.bin/tsc -p tsconfig.json
node_modules/.bin/tsc -p tsconfig.ai.json
echo "node-package: ok"
