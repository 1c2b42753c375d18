#!/usr/bin/env bash
# Times `compactor simulate` on one 100,000-message trajectory, strategy by strategy
# (issue 10, item 12: a replay is linear in the rounds, so 100k messages take seconds).
#
# The trajectory is built from the real mini-swe-agent runs of the shared data: the first
# run's system prompt and task, then the agent turns and tool results of every run, again
# and again, until MESSAGES messages. Each repetition renames its tool-call ids and tags its
# tool results with the repetition number, so no two results are identical (no counting
# cache can make the replay look cheaper than a real 100k-message run would be).
#
# Usage: scripts/simulate-100k.sh [DATA_DIR] [OUT_DIR]
#   DATA_DIR  the shared data (default: $LLM_COMPACTOR_DATA, else ../shared/data)
#   OUT_DIR   where the trajectory, the JSON reports and the timings go
#             (default: a fresh temporary directory)
# Env: COMPACTOR=path/to/compactor to skip the release build; MESSAGES (default 100000);
#      WINDOW (default 128000); STRATEGIES (default: every strategy).
# Needs: cargo, python3, GNU time (/usr/bin/time) for the peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-${LLM_COMPACTOR_DATA:-../shared/data}}"
OUT="${2:-$(mktemp -d)}"
MESSAGES="${MESSAGES:-100000}"
WINDOW="${WINDOW:-128000}"
STRATEGIES="${STRATEGIES-none ours ours-aging ours-no-aging ours-seed mask-last-n clear-tool-uses clear-tool-uses-scaled summarize-at-threshold}"
mkdir -p "$OUT"
if [ -z "${COMPACTOR:-}" ]; then
  cargo build --release -p compactor-cli
  COMPACTOR="${CARGO_TARGET_DIR:-target}/release/compactor"
fi
TRAJ="$OUT/trajectory-$MESSAGES.json"
python3 - "$DATA/trajectories/mini-swe-agent" "$MESSAGES" "$TRAJ" <<'PY'
import glob, json, os, sys
src, want, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = []
for path in sorted(glob.glob(os.path.join(src, "*.traj.json"))):
    messages = json.load(open(path))["messages"]
    runs.append(messages)
if not runs:
    sys.exit(f"no mini-swe-agent trajectories under {src}")

def plain(m, rep):
    """The OpenAI chat shape of one message, ids and results made unique per repetition."""
    p = {"role": m["role"], "content": m.get("content") or ""}
    if m.get("tool_calls"):
        p["tool_calls"] = [
            {"id": f"{c['id']}-r{rep}", "type": "function",
             "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
            for c in m["tool_calls"]
        ]
    if m["role"] == "tool":
        p["tool_call_id"] = f"{m['tool_call_id']}-r{rep}"
        p["content"] = f"[run {rep}] " + p["content"]
    return p

head = [plain(m, 0) for m in runs[0][:2]]
body, rep = [], 0
while len(head) + len(body) < want:
    for run in runs:
        # Everything after the run's system prompt and task; runs are appended whole
        # (every call answered), so the trajectory never ends on an unanswered call.
        body.extend(plain(m, rep) for m in run[2:])
        if len(head) + len(body) >= want:
            break
    rep += 1
messages = head + body
# End on an assistant turn: the replay bills up to the last one.
while messages and messages[-1]["role"] != "assistant":
    messages.pop()
json.dump(messages, open(out, "w"))
print(f"{out}: {len(messages)} messages, {sum(len(m['content']) for m in messages)} content chars", file=sys.stderr)
PY
printf '%-24s %10s %10s %14s\n' strategy "wall (s)" "CPU (s)" "peak RSS (MB)" | tee "$OUT/timings.txt"
for s in $STRATEGIES; do
  /usr/bin/time -v -o "$OUT/time-$s.txt" \
    "$COMPACTOR" simulate "$TRAJ" --window "$WINDOW" --strategy "$s" --json > "$OUT/report-$s.json"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$OUT/time-$s.txt" \
    | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  cpu=$(awk -F': ' '/(User|System) time/ {t += $2} END {printf "%.2f", t}' "$OUT/time-$s.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$OUT/time-$s.txt")
  printf '%-24s %10s %10s %14s\n' "$s" "$wall" "$cpu" "$rss" | tee -a "$OUT/timings.txt"
done
echo "reports and timings in $OUT" >&2
