#!/usr/bin/env bash
# The Python package's benchmarks (BENCHMARKS.md, "Python package"): builds the package
# (scripts/python-package.sh) and runs scripts/bench_python.py in its venv.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/python-package.sh
export LLM_COMPACTOR_DATA="${LLM_COMPACTOR_DATA:-../shared/data}"
exec target/py-compactor/bin/python scripts/bench_python.py
