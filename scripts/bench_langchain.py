"""LangChain's side of the hard-trim comparison (see BENCHMARKS.md, "Per-round cost and
the hard trim").

Builds the same 9,898-message conversation as `benches/planning.rs` (the mini-swe-agent
trajectories of LLM_COMPACTOR_DATA, sorted by file name, concatenated and cycled until
9,898 messages), then times `langchain_core.messages.trim_messages` keeping the last 40%
of the conversation's approximate tokens, with LangChain's approximate counter, in
process (conversion to LangChain messages is not timed). Prints one JSON line.
"""

import glob
import json
import os
import statistics
import sys
import time

import langchain_core
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.messages.utils import count_tokens_approximately

SIZE = 9_898


def text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def to_langchain(message):
    role, content = message.get("role"), text(message.get("content"))
    if role == "system":
        return SystemMessage(content)
    if role == "assistant":
        calls = [
            {"id": c.get("id", ""), "name": c.get("function", {}).get("name", ""), "args": {}}
            for c in message.get("tool_calls") or []
        ]
        return AIMessage(content, tool_calls=calls)
    if role == "tool":
        return ToolMessage(content, tool_call_id=message.get("tool_call_id") or "")
    return HumanMessage(content)  # user, and mini-swe-agent's "exit"


def conversation(data):
    files = sorted(glob.glob(os.path.join(data, "trajectories", "mini-swe-agent", "*.traj.json")))
    if not files:
        sys.exit(f"no mini-swe-agent trajectories under {data}")
    out = []
    while len(out) < SIZE:
        for path in files:
            with open(path, encoding="utf-8") as f:
                out.extend(json.load(f)["messages"])
            if len(out) >= SIZE:
                break
    return [to_langchain(m) for m in out[:SIZE]]


def main():
    data = os.environ.get("LLM_COMPACTOR_DATA", "../shared/data")
    reps = int(os.environ.get("REPS", "7"))
    messages = conversation(data)
    total = count_tokens_approximately(messages)
    keep = total * 4 // 10
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        kept = trim_messages(
            messages,
            max_tokens=keep,
            token_counter=count_tokens_approximately,
            strategy="last",
            include_system=True,
        )
        times.append(time.perf_counter() - start)
    print(json.dumps({
        "langchain_core": langchain_core.__version__,
        "messages": len(messages),
        "approx_tokens": total,
        "max_tokens": keep,
        "kept": len(kept),
        "median_ms": round(statistics.median(times) * 1e3, 2),
        "min_ms": round(min(times) * 1e3, 2),
        "reps": reps,
    }))


if __name__ == "__main__":
    main()
