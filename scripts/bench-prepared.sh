#!/usr/bin/env bash
# Prepared compaction through the proxy (issue 28): per-round added latency with a 5 s
# summarizer, preparation off and on, and the summary request's cache-read share.
# Needs: cargo, python3 (stdlib only). See scripts/bench_prepared.py and BENCHMARKS.md.
#
# Usage: scripts/bench-prepared.sh [TRAJECTORY] [BUDGET]
# Env: COMPACTOR=path/to/compactor to skip the release build; SUMMARY_DELAY (seconds, 5).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${LLM_COMPACTOR_DATA:-../shared/data}"
TRAJECTORY="${1:-$DATA/trajectories/mini-swe-agent/deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json}"
BUDGET="${2:-32000}"
if [ -z "${COMPACTOR:-}" ]; then
  cargo build --release -p compactor-cli
  COMPACTOR=target/release/compactor
fi
exec python3 scripts/bench_prepared.py "$COMPACTOR" "$TRAJECTORY" "$BUDGET"
