"""The LangChain middleware in a real `create_agent` loop whose model is `ChatOpenAI`
talking to the scripted server: a 60-round task over a real trajectory's tool outputs
with a 16k budget."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402

from llm_compactor.langchain import CompactorMiddleware  # noqa: E402
from scripted_server import orphans  # noqa: E402

BUDGET = 16_000
ROUNDS = 60
HEADER = "[Summary of the earlier conversation, written by the context compactor]"


def test_sixty_rounds_stay_inside_16k(scripted: Any, observations: List[str], task: str) -> None:
    def script(body: Dict[str, Any], n: int) -> Dict[str, Any]:
        if n < ROUNDS:
            args = json.dumps({"step": n, "command": f"step {n}"})
            return {"tool_calls": [{"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": args}}]}
        return {"content": "All 60 steps are done."}

    server = scripted(script)

    @tool
    def run(step: int, command: str) -> str:
        """Runs a shell command of the task and returns its output."""
        return observations[step % len(observations)]

    middleware = CompactorMiddleware(budget=BUDGET)
    model = ChatOpenAI(model="scripted", base_url=server.base_url, api_key="test-key", max_retries=0)
    agent = create_agent(model, tools=[run], system_prompt="You are a coding agent.", middleware=[middleware])
    state = agent.invoke({"messages": [{"role": "user", "content": task}]}, config={"recursion_limit": 1000})

    assert not server.errors, server.errors
    assert len(server.requests) == ROUNDS + 1
    assert state["messages"][-1].content == "All 60 steps are done."
    over = [(i, r.tokens) for i, r in enumerate(server.requests) if r.tokens > BUDGET]
    assert not over, over
    for i, request in enumerate(server.requests):
        assert not orphans(request.messages), (i, orphans(request.messages))
    first = next(i for i, r in enumerate(server.requests) if any(HEADER in str(m.get("content")) for m in r.messages))
    assert middleware.compactions > 0
    for request in server.requests[first:]:
        assert any(HEADER in str(m.get("content")) for m in request.messages)
    # The whole uncompacted run would not have fit: the compactor had work to do.
    total = sum(len(o) for o in observations[:ROUNDS]) // 4
    assert total > BUDGET
    # Usage from the responses reached the calibrated counter.
    assert middleware.compactor._core.calibration_json() is not None
    print(f"langchain: {len(server.requests)} requests, peak {max(r.tokens for r in server.requests)} tokens, {middleware.compactions} compactions")
