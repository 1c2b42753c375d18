#!/usr/bin/env bash
# The defaults sweep of BENCHMARKS.md ("Choosing the defaults"): `ours` over a grid of
# (trigger ratio, target ratio, aging on/off, epoch ratio, keep_recent) against every peer
# strategy, on the shared trajectories, at windows of 32k, 64k and 128k tokens, under
# Anthropic and OpenAI GPT-5 pricing with the summarizer at the agent's price and at 0.1 of it.
#
# Usage: scripts/sweep-defaults.sh [DATA_DIR] [OUT_DIR] [extra example args...]
#   DATA_DIR  the shared data (default: $LLM_COMPACTOR_DATA, else ../shared/data)
#   OUT_DIR   where sweep.csv, sweep.md and the SVG plots go (default: target/sweep)
#   extra     e.g. --grid none (peers and the default `ours` only), --windows 32000,
#             --triggers 0.7,0.8 --targets 0.3,0.4 --epochs 0.096 --keeps 6,
#             --horizons 20,40,80 (the epoch gate's expected_remaining_rounds; default 20),
#             --families mini-swe-agent, --grid-families mini-swe-agent,tau-bench
#             (the grid runs on mini-swe-agent only by default: tau-bench airline peaks
#             near 10.5k tokens, so there the peers and the named `ours` variants suffice)
# Env: CARGO_TARGET_DIR as usual (the figures in BENCHMARKS.md came from a release build).
# Deterministic: the same data and arguments give the same files, byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${LLM_COMPACTOR_DATA:-../shared/data}}"
OUT="${2:-target/sweep}"
shift $(( $# > 2 ? 2 : $# ))
mkdir -p "$OUT"
cargo run --quiet --release -p compactor-cli --example sweep_defaults -- \
  --data "$DATA" --out "$OUT" "$@" > /dev/null
echo "wrote $OUT/sweep.md, $OUT/sweep.csv and $OUT/sweep-*.svg"
