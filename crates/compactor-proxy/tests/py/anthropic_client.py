"""The official Anthropic SDK against the proxy: plain, streamed, tool use, errors.

Env: PROXY, DEAD_PROXY. Prints one line per check; exits non-zero on the first failure.
"""
import os

import anthropic

PROXY = os.environ["PROXY"]
client = anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0)
base = [{"role": "user", "content": "hello"}]

r = client.messages.create(model="m", max_tokens=100, system="Be brief.", messages=base)
assert r.content[0].text == "echo: hello", r
assert r.usage.input_tokens > 0
print("plain ok")

with client.messages.stream(model="m", max_tokens=100, system="Be brief.", messages=base) as stream:
    text = "".join(stream.text_stream)
    final = stream.get_final_message()
assert text == "echo: hello", text
assert final.usage.input_tokens > 0
print("stream ok")

tools = [{"name": "get_weather", "description": "weather", "input_schema": {"type": "object"}}]
history = [{"role": "user", "content": "use a tool please"}]
r = client.messages.create(model="m", max_tokens=100, messages=history, tools=tools)
use = [b for b in r.content if b.type == "tool_use"][0]
assert use.name == "get_weather" and use.input == {"city": "Paris"}, r
history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in r.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]}]
r = client.messages.create(model="m", max_tokens=100, messages=history, tools=tools)
assert r.content[0].text == "echo: sunny", r
with client.messages.stream(model="m", max_tokens=100, messages=[{"role": "user", "content": "use a tool"}], tools=tools) as stream:
    final = stream.get_final_message()
assert [b for b in final.content if b.type == "tool_use"][0].input == {"city": "Paris"}
print("tools ok")

try:
    client.messages.create(model="err-401", max_tokens=10, messages=base)
    raise SystemExit("401 expected")
except anthropic.AuthenticationError as e:
    assert e.status_code == 401
print("401 ok")

try:
    client.messages.create(model="err-429", max_tokens=10, messages=base)
    raise SystemExit("429 expected")
except anthropic.RateLimitError as e:
    assert e.status_code == 429 and e.response.headers["retry-after"] == "7"
print("429 ok")

dead = anthropic.Anthropic(base_url=os.environ["DEAD_PROXY"], api_key="sk-ant-test", max_retries=0)
try:
    dead.messages.create(model="m", max_tokens=10, messages=base)
    raise SystemExit("502 expected")
except anthropic.APIStatusError as e:
    assert e.status_code == 502, e
    assert "upstream could not be reached" in e.response.text, e.response.text
print("502 ok")
