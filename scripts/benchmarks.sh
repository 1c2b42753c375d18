#!/usr/bin/env bash
# Reproduces the simulator tables of BENCHMARKS.md.
#
# Usage: scripts/benchmarks.sh [DATA_DIR] [OUT_DIR]
#   DATA_DIR  the shared data (default: $LLM_COMPACTOR_DATA, else ../shared/data)
#   OUT_DIR   where the JSON and Markdown go (default: target/benchmarks)
# Env: COMPACTOR=path/to/compactor to skip the release build; PRICINGS="anthropic ..."
# Needs: cargo, python3 (for the Markdown tables only).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${LLM_COMPACTOR_DATA:-../shared/data}}"
OUT="${2:-target/benchmarks}"
PRICINGS="${PRICINGS:-anthropic openai-gpt5 openai-4o}"
mkdir -p "$OUT"
if [ -z "${COMPACTOR:-}" ]; then
  cargo build --release -p compactor-cli
  COMPACTOR=target/release/compactor
fi
MINI=("$DATA"/trajectories/mini-swe-agent/*.traj.json)
TAU="$DATA/trajectories/tau-bench/gpt-4o-airline.json"
for pricing in $PRICINGS; do
  for window in 32000 64000; do
    "$COMPACTOR" simulate "${MINI[@]}" --window "$window" --pricing "$pricing" --json \
      > "$OUT/mini-swe-agent-$window-$pricing.json"
    "$COMPACTOR" simulate "$TAU" --window "$window" --pricing "$pricing" --json \
      > "$OUT/tau-bench-airline-$window-$pricing.json"
  done
  # tau-bench conversations peak under 11k tokens: a small window is where strategies act.
  "$COMPACTOR" simulate "$TAU" --window 8000 --pricing "$pricing" --json \
    > "$OUT/tau-bench-airline-8000-$pricing.json"
done
"$COMPACTOR" simulate "$DATA/trajectories/mini-swe-agent/deepseek_chat_dev_rerun__pylint-dev__astroid-1333.traj.json" --window 32000 --plot "$OUT/plot-32k.svg" > /dev/null
python3 - "$OUT" <<'PY'
import json, glob, os, sys
out = sys.argv[1]
lines = []
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    s = json.load(open(path))
    rows = {r["name"]: r for r in s["strategies"]}
    base = rows.get("none", {}).get("cost") or 0
    lines.append(f"### {os.path.basename(path)[:-5]}: {s['trajectories']} trajectories, window {s['window']}, pricing {s['pricing']}\n")
    lines.append("| strategy | cost | vs none | ours vs it | cache hit | peak context | rounds over window | compactions | elision epochs |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ours = rows.get("ours", {}).get("cost")
    for r in s["strategies"]:
        vs = f"{r['cost']/base:.3f}" if base else "-"
        ov = f"{ours/r['cost']:.3f}" if ours and r["cost"] else "-"
        lines.append(f"| {r['name']} | {r['cost']:.0f} | {vs} | {ov} | {r['cache_hit_ratio']:.3f} | {r['peak_context']} | {r['rounds_over_window']} | {r['compactions']} | {r['elision_epochs']} |")
    lines.append("")
open(os.path.join(out, "tables.md"), "w").write("\n".join(lines))
print("\n".join(lines))
PY
