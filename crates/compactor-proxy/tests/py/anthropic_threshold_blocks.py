"""The official Anthropic SDK with threshold compaction (`compact-2026-01-12` beta,
`context_management.edits` `compact_20260112`) through the proxy, in front of an upstream
that has none (`--native-compaction serve`), appending each response's whole content to its
messages as Anthropic's compaction docs say: 24 long turns, streamed on odd turns; the
answers of the turns where the proxy compacted lead with its `compaction` block, which the
client sends back with the rest of its history.

Env: PROXY. Prints one line per check; exits non-zero on failure.
"""
import os

import anthropic

PROXY = os.environ["PROXY"]
client = anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0)
EDITS = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}}]}

messages = []
blocks = 0
for turn in range(24):
    messages.append({"role": "user", "content": f"turn {turn}: " + f"the log of step {turn} says ok. " * 40})
    params = dict(model="claude-x", max_tokens=100, betas=["compact-2026-01-12"],
                  context_management=EDITS, messages=messages)
    if turn % 2 == 1:
        with client.beta.messages.stream(**params) as stream:
            reply = stream.get_final_message()
    else:
        reply = client.beta.messages.create(**params)
    kinds = [block.type for block in reply.content]
    if kinds[0] == "compaction":
        assert reply.content[0].content and reply.content[0].encrypted_content.startswith("llmc1."), reply
        blocks += 1
    assert kinds[-1] == "text" and reply.content[-1].text.startswith(f"echo: turn {turn}"), reply
    messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
assert blocks >= 3, blocks
print(f"threshold blocks ok: {blocks}")
