#!/usr/bin/env bash
# LangChain's side of the hard-trim comparison: creates its own venv under the cargo
# target dir, installs langchain-core 1.8.3, and times trim_messages on the 9,898-message
# real conversation (see scripts/bench_langchain.py). Run beside
#   cargo bench -p llm-compactor --bench planning -- real_9898
# and compare the medians (BENCHMARKS.md reports the ratio).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${CARGO_TARGET_DIR:-target}/langchain-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet "langchain-core==1.8.3"
export LLM_COMPACTOR_DATA="${LLM_COMPACTOR_DATA:-../shared/data}"
exec "$venv/bin/python" scripts/bench_langchain.py
