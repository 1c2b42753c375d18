#!/usr/bin/env bash
# Where `ours` loses to the masking peers (issue 12): the mini-swe-agent runs split into
# those where `ours` never acts (no compaction, no epoch: nothing needs managing, so the
# goal holds `ours` to exactly what `none` bills) and those where it acts, at 64k and 128k,
# both pricings, both summarizer prices. Costs are sums over the runs of each part,
# divided by `none`'s sum over the same runs. Builds the release CLI first.
#
#   scripts/split-by-need.sh [DATA_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
data="${1:-${LLM_COMPACTOR_DATA:-../shared/data}}"
cargo build --release --quiet -p compactor-cli
exec python3 - "${CARGO_TARGET_DIR:-target}/release/compactor" "$data/trajectories/mini-swe-agent" <<'PY'
import glob, json, subprocess, sys

binary, folder = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(f"{folder}/*.traj.json"))
if not files:
    sys.exit(f"no trajectories under {folder}")
peers = ["ours", "mask-last-n-batched", "jetbrains-hybrid-batched"]
print("| window / pricing / summarizer price | runs: never acts / acts | never acts: " + " / ".join(peers)
      + " | acts: " + " / ".join(peers) + " | all: " + " / ".join(peers) + " |")
print("|---|---|---|---|---|")
for window in ["64000", "128000"]:
    for pricing in ["anthropic", "openai-gpt5"]:
        for price in ["1", "0.1"]:
            sums = {"never": {}, "acts": {}}
            runs = {"never": 0, "acts": 0}
            for path in files:
                args = [binary, "simulate", "--window", window, "--pricing", pricing,
                        "--summarizer-price", price, "--json", path]
                for strategy in ["none"] + peers:
                    args += ["--strategy", strategy]
                result = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
                rows = {row["name"]: row for row in result["strategies"]}
                ours = rows["ours"]
                part = "never" if ours["compactions"] == 0 and ours["elision_epochs"] == 0 else "acts"
                runs[part] += 1
                for name, row in rows.items():
                    sums[part][name] = sums[part].get(name, 0) + row["cost"]
            everything = {name: sums["never"].get(name, 0) + sums["acts"].get(name, 0) for name in ["none"] + peers}
            def ratios(costs):
                return " / ".join(f"{costs[p] / costs['none']:.3f}" for p in peers) if costs else "-"
            print(f"| {int(window) // 1000}k / {pricing} / {price} | "
                  f"{runs['never']} / {runs['acts']} | {ratios(sums['never'])} | {ratios(sums['acts'])} | {ratios(everything)} |",
                  flush=True)
PY
