"""The OpenAI Agents SDK's `OpenAIResponsesCompactionSession` through the proxy, in front of
an upstream without `/v1/responses/compact`: a tool-using agent runs 20 turns; every 5th
turn the session compacts (`run_compaction`, the SDK's own call of `responses.compact` over
its stored history); each compaction is answered by the proxy, the session stores the
output, and every run after one sends the proxy's compaction item back.

(The runner's automatic trigger, after a turn with local tool outputs, defers and then
skips silently in openai-agents 0.24 before any request is made, so the test calls the
session's documented `run_compaction` itself.)

Env: PROXY (the proxy's origin); AGENTS_DEBUG=1 logs the SDK's own decisions. Prints one line per check; exits non-zero on failure.
"""
import asyncio
import logging
import os
import warnings

from openai import AsyncOpenAI

from agents import Agent, Runner, OpenAIResponsesModel, function_tool, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession, SQLiteSession

PROXY = os.environ["PROXY"]
warnings.filterwarnings("ignore", category=UserWarning)
set_tracing_disabled(True)
if os.environ.get("AGENTS_DEBUG"):
    logging.basicConfig(level=logging.DEBUG)


@function_tool
def get_weather(city: str) -> str:
    """The weather report for a city (long, as tool outputs are)."""
    return f"{city}: sunny, 21 C. " * 150


async def main():
    client = AsyncOpenAI(base_url=PROXY + "/v1", api_key="sk-test-openai", max_retries=0)
    agent = Agent(
        name="forecaster",
        instructions="Answer with the weather.",
        model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client),
        tools=[get_weather],
    )
    session = OpenAIResponsesCompactionSession(
        session_id="forecast",
        underlying_session=SQLiteSession("forecast"),
        client=client,
        model="gpt-4.1",
        compaction_mode="input",
    )
    compactions = 0
    for turn in range(20):
        result = await Runner.run(agent, f"turn {turn}: use a tool please", session=session)
        assert result.final_output, result
        if turn % 5 == 4:
            await session.run_compaction({"force": True})
            items = await session.get_items()
            sealed = [i for i in items if isinstance(i, dict) and i.get("type") == "compaction"]
            assert len(sealed) == 1, items
            assert sealed[0]["encrypted_content"].startswith("llmc1."), sealed
            compactions += 1
    assert compactions == 4, compactions
    print(f"agents ok: {compactions} compactions")


asyncio.run(main())
