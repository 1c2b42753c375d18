"""The official Anthropic SDK's own on-demand compaction: the beta tool runner
(`client.beta.messages.tool_runner`, `thread=False`) with `compact_before_next_turn()`
(beta `compact-2026-09-04`), through the proxy in front of an upstream that has no compaction
(`--native-compaction serve`, model `replay`: TOOL_TURNS tool calls, then an answer, per run).

Two runs, plain and streamed: the runner runs a shell tool whose output is long, and every
4th message asks for compaction before the next turn. The runner sends the compaction request,
yields its answer (`stop_reason` "compaction"), replaces its history with it, and goes on; the
run ends with the model's answer.

Env: PROXY, TOOL_TURNS. Prints one line per run; exits non-zero on failure.
"""
import os

import anthropic
from anthropic import beta_tool

PROXY = os.environ["PROXY"]
TOOL_TURNS = int(os.environ["TOOL_TURNS"])
RULE = "Always run the tests with pytest -x before committing."
client = anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0)


@beta_tool
def shell(cmd: str) -> str:
    """Run a shell command and return its output.

    Args:
        cmd: The command to run.
    """
    return f"$ {cmd}\n" + f"{cmd}: compiled a module, all checks passed\n" * 40


for streamed in (False, True):
    runner = client.beta.messages.tool_runner(
        model="replay",
        max_tokens=100,
        betas=["compact-2026-09-04"],
        tools=[shell],
        messages=[{"role": "user", "content": "make the build green. " + RULE}],
        thread=False,
        stream=streamed,
    )
    seen = 0
    compactions = 0
    last = None
    for item in runner:
        message = item.get_final_message() if streamed else item
        seen += 1
        last = message
        if message.stop_reason == "compaction":
            block = message.content[0]
            assert len(message.content) == 1 and block.type == "compaction", message
            assert block.content and block.encrypted_content.startswith("llmc1."), block
            compactions += 1
        elif message.stop_reason == "tool_use" and seen % 4 == 0:
            runner.compact_before_next_turn()
    assert last.stop_reason == "end_turn" and last.content[-1].text == "all green", last
    assert compactions >= 3, compactions
    print(f"runner ok: streamed={streamed} messages={seen} compactions={compactions}")
