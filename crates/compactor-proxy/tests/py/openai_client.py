"""The official OpenAI SDK against the proxy: plain, streamed, tool calls, the Responses
API, errors.

Env: PROXY (the proxy's origin), DEAD_PROXY (a proxy whose upstream is down).
Prints one line per check; exits non-zero on the first failure.
"""
import os

import openai

PROXY = os.environ["PROXY"]
client = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-test-openai", max_retries=0)
base = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]

r = client.chat.completions.create(model="m", messages=base)
assert r.choices[0].message.content == "echo: hello", r
assert r.usage.prompt_tokens > 0
print("plain ok")

chunks = []
usage = None
for chunk in client.chat.completions.create(
    model="m", messages=base, stream=True, stream_options={"include_usage": True}
):
    if chunk.choices and chunk.choices[0].delta.content:
        chunks.append(chunk.choices[0].delta.content)
    if chunk.usage:
        usage = chunk.usage
assert "".join(chunks) == "echo: hello", chunks
assert usage is not None and usage.prompt_tokens > 0
print("stream ok")

tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
history = base + [{"role": "user", "content": "use a tool please"}]
r = client.chat.completions.create(model="m", messages=history, tools=tools)
call = r.choices[0].message.tool_calls[0]
assert call.function.name == "get_weather", r
history += [r.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
r = client.chat.completions.create(model="m", messages=history, tools=tools)
assert r.choices[0].message.content == "echo: sunny", r
streamed_calls = []
for chunk in client.chat.completions.create(
    model="m", messages=base + [{"role": "user", "content": "use a tool"}], tools=tools, stream=True
):
    if chunk.choices and chunk.choices[0].delta.tool_calls:
        streamed_calls += chunk.choices[0].delta.tool_calls
assert streamed_calls and streamed_calls[0].function.name == "get_weather"
print("tools ok")

# The Responses API: plain, streamed, and a function call answered with its output.
r = client.responses.create(model="m", instructions="Be brief.", input="hello")
assert r.output_text == "echo: hello", r
assert r.usage.input_tokens > 0
items = [{"role": "user", "content": [{"type": "input_text", "text": "hello"}]}]
r = client.responses.create(model="m", instructions="Be brief.", input=items)
assert r.output_text == "echo: hello", r
deltas = []
completed = None
for event in client.responses.create(model="m", instructions="Be brief.", input=items, stream=True):
    if event.type == "response.output_text.delta":
        deltas.append(event.delta)
    if event.type == "response.completed":
        completed = event.response
assert "".join(deltas) == "echo: hello", deltas
assert completed is not None and completed.usage.input_tokens > 0
rtools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
items = items + [{"role": "user", "content": "use a tool please"}]
r = client.responses.create(model="m", input=items, tools=rtools)
call = r.output[0]
assert call.type == "function_call" and call.name == "get_weather", r
items += [item.model_dump(exclude_none=True) for item in r.output]
items.append({"type": "function_call_output", "call_id": call.call_id, "output": "sunny"})
r = client.responses.create(model="m", input=items, tools=rtools)
assert r.output_text == "echo: sunny", r
print("responses ok")

try:
    client.chat.completions.create(model="err-401", messages=base)
    raise SystemExit("401 expected")
except openai.AuthenticationError as e:
    assert e.status_code == 401
print("401 ok")

try:
    client.chat.completions.create(model="err-429", messages=base)
    raise SystemExit("429 expected")
except openai.RateLimitError as e:
    assert e.status_code == 429 and e.response.headers["retry-after"] == "7"
print("429 ok")

dead = openai.OpenAI(base_url=os.environ["DEAD_PROXY"] + "/v1", api_key="sk-test-openai", max_retries=0)
try:
    dead.chat.completions.create(model="m", messages=base)
    raise SystemExit("502 expected")
except openai.APIStatusError as e:
    assert e.status_code == 502, e
    assert "upstream could not be reached" in e.response.text, e.response.text
print("502 ok")
