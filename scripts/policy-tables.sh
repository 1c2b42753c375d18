#!/usr/bin/env bash
# The tables that open BENCHMARKS.md (issues 33, 40): the default (`ours`: prepared passes, the
# cache-reading summary request at summarizer price 1) and economy
# (`ours-economy`) against every peer strategy on the shared trajectories, at windows of
# 32k, 64k and 128k tokens, under Anthropic and OpenAI GPT-5 pricing with the summarizer
# at the agent's price and at 0.1 of it, with each strategy's dropped context and the
# issue's goals checked setting by setting.
#
# Usage: scripts/policy-tables.sh [DATA_DIR] [OUT_DIR]
#   DATA_DIR  the shared data (default: $LLM_COMPACTOR_DATA, else ../shared/data)
#   OUT_DIR   where policy.md (the tables), sweep.csv and sweep.md go (default: target/policy)
# Env: CARGO_TARGET_DIR as usual. Release build; about 45 s of replay on a shared 2-core VM.
# Deterministic: the same data gives the same files, byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${LLM_COMPACTOR_DATA:-../shared/data}}"
OUT="${2:-target/policy}"
if [ ! -d "$DATA/trajectories" ]; then
  echo "no trajectories under $DATA: nothing to tabulate (set LLM_COMPACTOR_DATA)" >&2
  exit 0
fi
mkdir -p "$OUT"
cargo run --quiet --release -p compactor-cli --example sweep_defaults -- \
  --data "$DATA" --out "$OUT" --grid none --families mini-swe-agent,tau-bench > /dev/null
echo "wrote $OUT/policy.md (and sweep.md, sweep.csv)"
