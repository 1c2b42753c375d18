#!/usr/bin/env bash
# The whole-process cost of one exact count (issue 13: `compactor count` with o200k on a
# one-message file, goal <= 30 ms and <= 40 MB peak RSS). Builds the release CLI, writes a
# one-message file, runs `compactor count` RUNS times per counter (heuristic is the
# baseline: the process with no tokenizer at all) and prints the median and best wall
# time and the peak RSS of the runs.
#
#   scripts/bench-startup.sh [COMPACTOR_BINARY]
#
# Pass a binary built from another revision to compare (same machine, same run).
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-}"
if [ -z "$binary" ]; then
  cargo build --release --quiet -p compactor-cli
  binary="${CARGO_TARGET_DIR:-target}/release/compactor"
fi
exec python3 - "$binary" "${RUNS:-15}" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

binary, runs = sys.argv[1], int(sys.argv[2])
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump([{"role": "user", "content": "Please fix the failing test in src/lib.rs and run cargo test again."}], f)
    path = f.name
try:
    # Peak RSS through GNU time: a process forked from this Python would carry the
    # Python's own high-water mark (~14 MB) through its exec.
    gnu_time = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
    for counter in ["heuristic", "o200k", "cl100k"]:
        command = [binary, "count", "--counter", counter, path]
        times, peaks = [], []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
            if gnu_time:
                report = subprocess.run([gnu_time, "-f", "%M"] + command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, check=True)
                peaks.append(int(report.stderr.strip().splitlines()[-1]) / 1024)
        peak = f"peak RSS {max(peaks):5.1f} MB" if peaks else "peak RSS not measured (no /usr/bin/time)"
        print(f"{counter:>9}: median {statistics.median(times) * 1e3:6.1f} ms, best {min(times) * 1e3:6.1f} ms, "
              f"{peak} ({runs} runs)")
finally:
    os.unlink(path)
PY
