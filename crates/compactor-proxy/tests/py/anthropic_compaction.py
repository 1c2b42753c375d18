"""The official Anthropic SDK asking for threshold compaction (`compact-2026-01-12` beta,
`context_management.edits` `compact_20260112`) through the proxy, in front of an upstream
that has none (`--native-compaction serve`): 20 long turns, each answered, the history kept
whole on the client's side; the proxy compacts instead.

Env: PROXY (the proxy's origin). Prints one line per check; exits non-zero on failure.
"""
import os

import anthropic

PROXY = os.environ["PROXY"]
client = anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0)
messages = []
for turn in range(20):
    messages.append({"role": "user", "content": f"turn {turn}: " + f"the log of step {turn} says ok. " * 40})
    reply = client.beta.messages.create(
        model="claude-x",
        max_tokens=100,
        betas=["compact-2026-01-12"],
        context_management={"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 2000}}]},
        messages=messages,
    )
    text = "".join(block.text for block in reply.content if block.type == "text")
    assert text.startswith("echo: turn"), reply
    messages.append({"role": "assistant", "content": text})
print("anthropic compaction ok")
