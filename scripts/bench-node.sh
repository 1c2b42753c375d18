#!/usr/bin/env bash
# The Node package's benchmark (BENCHMARKS.md, "Node package"): builds the addon in
# release (and runs its tests, scripts/node-package.sh), then scripts/bench_node.js.
set -euo pipefail
cd "$(dirname "$0")/.."
COMPACTOR_NODE_PROFILE=release bash scripts/node-package.sh >/dev/null
export LLM_COMPACTOR_DATA="${LLM_COMPACTOR_DATA:-../shared/data}"
exec node scripts/bench_node.js
