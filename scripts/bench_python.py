"""The Python package's benchmarks (BENCHMARKS.md, "Python package"): run by
scripts/bench-python.sh with the package installed in target/py-compactor.

1. `compact` from Python on the largest shared trajectory (JSON in and out included)
   against the Rust library doing the same work (the `python_parity` example): ratio.
2. A second Python thread's progress during a long compaction: its loop iterations
   during the call against the same time with the GIL free (a sleep).
3. `import llm_compactor` time (a fresh interpreter each run).
4. The wheel's size.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import statistics
import subprocess
import sys
import threading
import time
from typing import Callable, Dict, Tuple

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = pathlib.Path(os.environ.get("LLM_COMPACTOR_DATA", str(REPO / ".." / "shared" / "data")))
BUDGET = int(os.environ.get("BENCH_BUDGET", "32000"))
RUNS = int(os.environ.get("BENCH_RUNS", "20"))


def largest() -> pathlib.Path:
    files = sorted((DATA / "trajectories" / "mini-swe-agent").glob("*.traj.json"), key=lambda p: p.stat().st_size)
    if not files:
        sys.exit(f"no trajectories under {DATA}")
    return files[-1]


def timed(work: Callable[[], object]) -> Tuple[float, float]:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        work()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), min(times)


def bench_compact(path: pathlib.Path) -> Dict[str, float]:
    import llm_compactor

    messages = json.loads(path.read_text())["messages"]
    result = llm_compactor.compact(messages, budget=BUDGET)
    compactor = llm_compactor.Compactor(budget=BUDGET)
    medians = {}
    for label, work in (
        ("fresh compactor", lambda: llm_compactor.compact(messages, budget=BUDGET)),
        ("reused compactor", lambda: compactor.compact(messages)),
    ):
        median, low = timed(work)
        medians[label] = median
        print(f"python ({label}): {result.tokens_before} tokens -> {result.tokens_after} tokens, median {median:.2f} ms, min {low:.2f} ms over {RUNS} runs")
    return medians


def bench_rust(path: pathlib.Path) -> Dict[str, float]:
    out = subprocess.run(
        ["cargo", "run", "--quiet", "--release", "-p", "llm-compactor", "--features", "http", "--example", "python_parity", "--", str(path), str(BUDGET), str(RUNS)],
        cwd=REPO, check=True, capture_output=True, text=True,
    ).stdout.strip()
    print(out)
    medians = {}
    for line in out.splitlines():
        label = line.split("(")[1].split(")")[0]
        medians[label] = float(line.split("median ")[1].split(" ms")[0])
    return medians


def spin_progress(work: Callable[[], object]) -> Tuple[int, float]:
    """A second thread's loop iterations while ``work`` runs on this one, and its time."""
    stop = threading.Event()
    count = [0]

    def spin() -> None:
        while not stop.is_set():
            count[0] += 1

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    try:
        time.sleep(0.05)
        before = count[0]
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
        during = count[0] - before
    finally:
        stop.set()
        thread.join()
    return during, elapsed


def bench_thread(path: pathlib.Path) -> None:
    import llm_compactor

    messages = json.loads(path.read_text())["messages"]
    passes = {
        # CPU-bound: the ledger pass of the largest trajectory, five times over.
        "ledger pass x5 (CPU)": lambda: [llm_compactor.compact(messages, budget=BUDGET) for _ in range(5)],
        # Waiting: a summarizer that answers after 1 s (a model's latency), called by Rust.
        "exec summarizer, 1 s latency": lambda: llm_compactor.compact(
            messages, budget=BUDGET, summarizer="exec", summarizer_cmd="sleep 1; head -c 400", ledger_max_tokens=0
        ),
    }
    for name, work in passes.items():
        during, elapsed = spin_progress(work)
        idle, _ = spin_progress(lambda: time.sleep(elapsed))
        print(
            f"thread: {name}: {elapsed * 1000:.0f} ms; the second thread ran {during:,} iterations during it, "
            f"{idle:,} during a sleep as long ({100 * during / max(idle, 1):.0f}%)"
        )


def bench_import() -> None:
    times = []
    for _ in range(10):
        out = subprocess.run(
            [sys.executable, "-c", "import time; s = time.perf_counter(); import llm_compactor; print((time.perf_counter() - s) * 1000)"],
            check=True, capture_output=True, text=True, cwd="/",
        ).stdout
        times.append(float(out))
    print(f"import llm_compactor: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms (10 fresh interpreters)")


def wheel_size() -> None:
    for wheel in glob.glob(str(REPO / "target" / "wheels" / "llm_compactor-*.whl")):
        print(f"wheel: {os.path.basename(wheel)} {os.path.getsize(wheel) / 1e6:.2f} MB")


def main() -> None:
    path = largest()
    print(f"trajectory: {path.name}, budget {BUDGET}")
    python = bench_compact(path)
    rust = bench_rust(path)
    for label, median in python.items():
        print(f"ratio python / rust ({label}): {median / rust[label]:.2f}x")
    bench_thread(path)
    bench_import()
    wheel_size()


if __name__ == "__main__":
    main()
