"""The official OpenAI SDK's standalone compaction (`responses.compact`) through the proxy,
in front of an upstream that has no such endpoint: the proxy answers it, and the output
carried into the next `responses.create` (as the SDK hands it back) continues the
conversation. Sync and async clients, three compactions in a row.

Env: PROXY (the proxy's origin). Prints one line per check; exits non-zero on failure.
"""
import asyncio
import os
import warnings

import openai

PROXY = os.environ["PROXY"]
RULE = "Always run the tests with pytest -x before committing."
# The SDK's output models are the API's; items it has no model field for (a user
# message's plain-text content) serialize with a pydantic warning, not an error.
warnings.filterwarnings("ignore", category=UserWarning)


def rounds(start, n):
    items = []
    for i in range(start, start + n):
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "shell",
                      "arguments": f'{{"cmd": "cat src/file_{i}.py"}}'})
        items.append({"type": "function_call_output", "call_id": f"c{i}",
                      "output": f"line of src/file_{i}.py\n" * 60})
        if i == start:
            items.append({"role": "user", "content": RULE})
    return items


def as_input(output):
    return [item.model_dump(exclude_none=True) for item in output]


client = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-test-openai", max_retries=0)
history = [{"role": "user", "content": "make the build green"}] + rounds(0, 12)
for n in range(3):
    compacted = client.responses.compact(model="m", instructions="You are a coding agent.", input=history)
    assert compacted.object == "response.compaction", compacted
    kinds = [item.type for item in compacted.output if getattr(item, "type", None)]
    assert kinds.count("compaction") == 1, kinds
    assert len(compacted.output) < len(history), (len(compacted.output), len(history))
    history = as_input(compacted.output) + [{"role": "user", "content": f"next step {n}"}]
    reply = client.responses.create(model="m", instructions="You are a coding agent.", input=history)
    assert reply.output_text, reply
    history += [{"role": "assistant", "content": reply.output_text}] + rounds(100 * (n + 1), 12)
print("compact ok")

forged = [dict(item) for item in history]
for item in forged:
    if item.get("type") == "compaction":
        item["encrypted_content"] = item["encrypted_content"][:-4] + "AAAA"
try:
    client.responses.create(model="m", input=forged)
    raise SystemExit("a forged compaction item was accepted")
except openai.BadRequestError as error:
    assert "compaction item" in str(error), error
print("forged ok")


async def main():
    aclient = openai.AsyncOpenAI(base_url=PROXY + "/v1", api_key="sk-test-openai", max_retries=0)
    compacted = await aclient.responses.compact(model="m", input=[{"role": "user", "content": "go"}] + rounds(0, 12))
    assert [i.type for i in compacted.output if getattr(i, "type", None)].count("compaction") == 1
    reply = await aclient.responses.create(model="m", input=as_input(compacted.output) + [{"role": "user", "content": "on"}])
    assert reply.output_text
    print("async ok")


asyncio.run(main())
