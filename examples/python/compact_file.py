"""Compact a conversation file with the Python package, in its own format.

    python examples/python/compact_file.py examples/sessions/long-agent-session.json 16000

Prints the compacted conversation as JSON on stdout and one line about the pass on
stderr. Run by the Python tests (crates/llm-compactor-py/tests/test_examples.py).
"""

import json
import sys

import llm_compactor


def main(path: str, budget: int) -> None:
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    # A mini-swe-agent trajectory keeps its messages under "messages"; a chat log is the list.
    messages = document["messages"] if isinstance(document, dict) else document
    result = llm_compactor.compact(messages, budget=budget)
    print(f"{result.tokens_before} -> {result.tokens_after} tokens, fallback: {result.fallback}", file=sys.stderr)
    json.dump(result.messages, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16_000)
