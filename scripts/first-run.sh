#!/usr/bin/env bash
# First run: build the CLI and compact a long, realistic agent session that ships in
# the repo -- no API key, no server, no model download.
#
#   scripts/first-run.sh [SESSION.json]
#
# Needs: a Rust toolchain (cargo). The summarizer is the model-free artifact ledger
# (`--summarizer ledger`): the files the agent touched, the commands it ran with their
# exit status, the errors still open, the user's requests -- extracted verbatim, so it
# cannot invent anything, in milliseconds. For prose summaries set OPENAI_API_KEY or
# ANTHROPIC_API_KEY (and use --summarizer auto), or see docs/guide/summarizers.md "In-process, on the CPU"
# for the opt-in local model. It ends by writing an HTML report of the compaction (a
# session transcript compacted once) and printing the path to open.
set -euo pipefail

cd "$(dirname "$0")/.."
session="${1:-examples/sessions/long-agent-session.json}"

echo "==> building compactor (release, without the local-model feature: a few minutes on 2 cores)" >&2
cargo build --release -p compactor-cli --no-default-features
compactor="${CARGO_TARGET_DIR:-target}/release/compactor"

echo "==> the session before compaction" >&2
"$compactor" count "$session" >&2 || true

budget="${BUDGET:-16000}"
echo "==> compacting $session to a ${budget}-token budget with the ledger summarizer" >&2
out="$(mktemp "${TMPDIR:-/tmp}/compacted.XXXXXX.json")"
"$compactor" compact "$session" --budget "$budget" --age-observations --summarizer ledger -o "$out"

echo "==> the session after compaction: $out" >&2
"$compactor" count "$out" >&2 || true

echo "==> the same compaction as a session transcript, and its report" >&2
work="$(mktemp -d "${TMPDIR:-/tmp}/compactor-first-run.XXXXXX")"
"$compactor" session import "$session" -o "$work/session.jsonl" >&2
"$compactor" session compact "$work/session.jsonl" --budget "$budget" --age-observations --summarizer ledger \
    >/dev/null 2>"$work/compact.log" || { cat "$work/compact.log" >&2; exit 1; }
"$compactor" report "$work/session.jsonl" --budget "$budget" -o "$work/report.html"
echo "==> open the report in a browser (one file, works offline):" >&2
echo "$work/report.html"
