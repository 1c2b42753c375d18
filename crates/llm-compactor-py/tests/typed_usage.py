"""A typed use of the package, checked with `mypy --strict` (scripts/test.sh): the stubs
and annotations must describe what users write."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List, Optional

import llm_compactor
from llm_compactor import CompactionResult, Compactor, ContextManager, Prepared, Session


def summarize(instruction: str, transcript: str, max_output_tokens: int) -> str:
    return "## Goals\n" + transcript[:100]


async def summarize_async(instruction: str, transcript: str) -> str:
    return "## Goals\nasync"


def main(messages: List[Dict[str, Any]]) -> int:
    result: CompactionResult = llm_compactor.compact(messages, budget=16_000, keep_recent=4)
    kept: List[Dict[str, Any]] = result.messages
    saved: int = result.tokens_before - result.tokens_after
    flags: bool = result.fallback or result.exhausted or result.noop
    tokens: int = llm_compactor.count_tokens(kept, counter="heuristic")
    compactor = Compactor(budget=32_000, summarizer=summarize, calibrated=True)
    if compactor.needs_compaction(messages):
        plan: Dict[str, Any] = compactor.plan(messages)
        again = compactor.compact(messages, focus=str(plan["cut_index"]))
        compactor.record_usage(again.messages, {"input_tokens": 1000}, model="gpt-4o")
    other = Compactor(budget=32_000, summarizer=summarize_async)
    asynced: CompactionResult = asyncio.run(other.compact_async(messages))
    with Session.open("/tmp/x.jsonl", format="openai") as session:
        session.append(messages)
        replayed: List[Dict[str, Any]] = session.replay()
        session.compact(compactor)
    manager = ContextManager(compactor, "/tmp/y.jsonl", window=128_000)
    prepared: Prepared = manager.prepare(tools=[])
    summary: Optional[CompactionResult] = prepared.result
    manager.record_response([{"role": "assistant", "content": "ok"}], usage={"input_tokens": 5}, model="m")
    try:
        llm_compactor.compact([], budget=0)
    except llm_compactor.ConfigError as e:
        field: Optional[str] = e.field
    return saved + tokens + len(replayed) + int(flags) + len(asynced.messages) + (summary is None)
