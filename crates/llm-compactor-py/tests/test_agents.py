"""The Agents SDK session in real `Runner.run` calls whose model is the scripted server
(chat completions through the SDK's own client): 60 rounds over a real trajectory's
tool outputs with a 16k budget."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from llm_compactor.agents import CompactingSession  # noqa: E402
from scripted_server import orphans  # noqa: E402

BUDGET = 16_000
ROUNDS = 60
HEADER = "[Summary of the earlier conversation, written by the context compactor]"


def test_sixty_rounds_stay_inside_16k(scripted: Any, observations: List[str], task: str) -> None:
    set_tracing_disabled(True)

    def script(body: Dict[str, Any], n: int) -> Dict[str, Any]:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return {"content": f"Step done ({len(body['messages'])} messages in context)."}
        step = sum(1 for r in server.requests[:n] if r.messages[-1]["role"] != "tool")
        args = json.dumps({"step": step})
        return {"tool_calls": [{"id": f"call_{n}", "type": "function", "function": {"name": "run", "arguments": args}}]}

    server = scripted(script)

    @function_tool
    def run(step: int) -> str:
        """Runs the task's next command and returns its output."""
        return observations[step % len(observations)]

    client = AsyncOpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    agent = Agent(
        name="coder",
        instructions="You are a coding agent.",
        tools=[run],
        model=OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )

    async def main() -> CompactingSession:
        session = CompactingSession(SQLiteSession("run-60"), budget=BUDGET)
        config = RunConfig(call_model_input_filter=session.model_input_filter)
        for round_ in range(ROUNDS):
            text = task if round_ == 0 else f"Continue with step {round_}."
            result = await Runner.run(agent, text, session=session, run_config=config, max_turns=5)
            assert "Step done" in str(result.final_output)
        return session

    session = asyncio.run(main())
    assert not server.errors, server.errors
    assert len(server.requests) == 2 * ROUNDS
    over = [(i, r.tokens) for i, r in enumerate(server.requests) if r.tokens > BUDGET]
    assert not over, over
    for i, request in enumerate(server.requests):
        assert not orphans(request.messages), (i, orphans(request.messages))
    assert session.compactions > 0
    first = next(i for i, r in enumerate(server.requests) if any(HEADER in str(m.get("content")) for m in r.messages))
    for request in server.requests[first:]:
        assert any(HEADER in str(m.get("content")) for m in request.messages)
    # The session itself holds the compacted history (the summary was written back).
    items = asyncio.run(session.inner.get_items())
    assert any(HEADER in json.dumps(item) for item in items)
    print(f"agents: {len(server.requests)} requests, peak {max(r.tokens for r in server.requests)} tokens, {session.compactions} compactions")
