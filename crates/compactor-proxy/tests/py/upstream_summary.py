"""The official SDKs grow one conversation per route through a proxy that summarizes
with `--summarizer upstream`: chat completions and the Responses API with `openai`,
Messages with `anthropic`; each long enough that the proxy compacts it.

Env: PROXY, ROUNDS. Prints `<route> ok` per route.
"""
import os

import anthropic
import openai

PROXY = os.environ["PROXY"]
ROUNDS = int(os.environ.get("ROUNDS", "24"))
NOTE = "lorem ipsum dolor sit amet " * 40

chat = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-client-chat", max_retries=0,
                     default_headers={"x-compactor-session": "up-chat"})
history = [{"role": "system", "content": "You are terse."}]
for i in range(ROUNDS):
    history.append({"role": "user", "content": f"question {i}: {NOTE}"})
    r = chat.chat.completions.create(model="m", messages=history)
    history.append({"role": "assistant", "content": r.choices[0].message.content})
print("chat ok")

messages = anthropic.Anthropic(base_url=PROXY, api_key="sk-client-messages", max_retries=0,
                               default_headers={"x-compactor-session": "up-messages"})
history = []
for i in range(ROUNDS):
    history.append({"role": "user", "content": f"question {i}: {NOTE}"})
    r = messages.messages.create(model="m", max_tokens=100, system="You are terse.", messages=history)
    history.append({"role": "assistant", "content": r.content[0].text})
print("messages ok")

responses = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-client-responses", max_retries=0,
                          default_headers={"x-compactor-session": "up-responses"})
items = []
for i in range(ROUNDS):
    items.append({"role": "user", "content": f"question {i}: {NOTE}"})
    r = responses.responses.create(model="m", instructions="You are terse.", input=items)
    items.append({"role": "assistant", "content": r.output_text})
print("responses ok")
