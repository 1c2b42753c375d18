"""The OpenAI Agents SDK with server-side compaction (`ModelSettings(context_management=
[{"type": "compaction", "compact_threshold": N}])`) through the proxy, in front of an
upstream that has none: a tool-using agent (a function tool with long outputs) over a
`SQLiteSession` for TURNS turns; the proxy compacts when a request reaches the threshold
and emits the compaction item, the session stores it with the turn's items, and the turns
after it send it back.

Env: PROXY (the proxy's origin), THRESHOLD, TURNS. Prints one line; exits non-zero on
failure.
"""
import asyncio
import os
import warnings

from openai import AsyncOpenAI

from agents import Agent, ModelSettings, Runner, OpenAIResponsesModel, function_tool, set_tracing_disabled
from agents.memory import SQLiteSession

PROXY = os.environ["PROXY"]
THRESHOLD = int(os.environ["THRESHOLD"])
TURNS = int(os.environ["TURNS"])
warnings.filterwarnings("ignore", category=UserWarning)
set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """The weather report for a city (long, as tool outputs are)."""
    return f"{city}: sunny, 21 C. " * 150


async def main():
    client = AsyncOpenAI(base_url=PROXY + "/v1", api_key="sk-test-agents", max_retries=0)
    agent = Agent(
        name="forecaster",
        instructions="Answer with the weather.",
        model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client),
        model_settings=ModelSettings(context_management=[{"type": "compaction", "compact_threshold": THRESHOLD}]),
        tools=[get_weather],
    )
    session = SQLiteSession("forecast-server-side")
    for turn in range(TURNS):
        result = await Runner.run(agent, f"turn {turn}: use a tool please", session=session)
        assert result.final_output, result
    items = await session.get_items()
    sealed = [i for i in items if isinstance(i, dict) and i.get("type") == "compaction"]
    assert sealed and all(i["encrypted_content"].startswith("llmc1.") for i in sealed), items
    print(f"agents server-side ok: {TURNS} turns, {len(sealed)} compaction items stored")


asyncio.run(main())
