"""Plays the agent of a real trajectory through the proxy with the official OpenAI SDK.

argv[1]: a JSON file {"messages": [...], "tools": [...]} (OpenAI shape). The scripted
upstream serves the trajectory's assistant turns in order; this loop sends its full,
growing history every round, as an agent does, and appends what the trajectory says came
next (tool results, user turns). Env: PROXY.
"""
import json
import os
import sys

import openai

data = json.load(open(sys.argv[1]))
traj = data["messages"]
tools = data.get("tools") or openai.NOT_GIVEN
client = openai.OpenAI(base_url=os.environ["PROXY"] + "/v1", api_key="sk-test-traj", max_retries=0)

i = next(k for k, m in enumerate(traj) if m["role"] == "assistant")
history = traj[:i]
rounds = 0
while i < len(traj):
    r = client.chat.completions.create(model="replay", messages=history, tools=tools)
    history.append(r.choices[0].message.model_dump(exclude_none=True))
    rounds += 1
    i += 1
    while i < len(traj) and traj[i]["role"] != "assistant":
        history.append(traj[i])
        i += 1
print(f"rounds {rounds}")
