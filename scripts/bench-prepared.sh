#!/usr/bin/env bash
# Prepared compaction through the proxy (issues 28, 40): per-round added latency with a 5 s
# summarizer over 40 rounds, inline (--no-prepare), the defaults, and --summarizer upstream,
# and the summary request's cache-read share.
# Needs: cargo, python3 (stdlib only). See scripts/bench_prepared.py and BENCHMARKS.md.
#
# Usage: scripts/bench-prepared.sh [TRAJECTORY] [BUDGET]
# Env: COMPACTOR=path/to/compactor to skip the release build; SUMMARY_DELAY (seconds, 5);
# AGENT_ROUND_SECONDS (0.7); ROUNDS (40).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${LLM_COMPACTOR_DATA:-../shared/data}"
# The fastest-growing shared run (~470 tokens a round over its first 40, bursts of 2,600).
TRAJECTORY="${1:-$DATA/trajectories/mini-swe-agent/deepseek_chat_dev_rerun__sqlfluff__sqlfluff-1625.traj.json}"
BUDGET="${2:-16000}"
export AGENT_ROUND_SECONDS="${AGENT_ROUND_SECONDS:-0.7}"
if [ -z "${COMPACTOR:-}" ]; then
  cargo build --release -p compactor-cli --no-default-features
  COMPACTOR=target/release/compactor
fi
exec python3 scripts/bench_prepared.py "$COMPACTOR" "$TRAJECTORY" "$BUDGET"
