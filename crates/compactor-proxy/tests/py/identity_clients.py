"""Each known client identity, sent the way its client sends it, with the official SDKs.

Every scenario runs two clients, A and B, with the same system prompt and first message
but their own identity; each sends a growing conversation of three rounds. Env: PROXY.
"""
import os

import anthropic
import openai

PROXY = os.environ["PROXY"]
SYSTEM = "You are a coding agent. Follow the repository's conventions."
FIRST = "Fix the failing test in tests/test_io.py"


def rounds(send):
    history = [{"role": "user", "content": FIRST}]
    for n in range(3):
        reply = send(history)
        history += [{"role": "assistant", "content": reply}, {"role": "user", "content": f"next step {n}"}]


def anthropic_client(headers):
    return anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0, default_headers=headers)


def openai_client(headers):
    return openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-test", max_retries=0, default_headers=headers)


for who in ["A", "B"]:
    # Claude Code: its session header.
    c = anthropic_client({"x-claude-code-session-id": f"cc-{who}"})
    rounds(lambda h: c.messages.create(model="claude-sonnet-4-5", max_tokens=64, system=SYSTEM, messages=h).content[0].text)

    # Claude Code's metadata.user_id (..._session_<id>), no header.
    c2 = anthropic_client({})
    rounds(lambda h: c2.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, system=SYSTEM, messages=h,
        metadata={"user_id": f"user_0a1b_account_2c3d_session_meta-{who}"}).content[0].text)

    # Codex: the Responses API with its `session_id` header.
    o = openai_client({"session_id": f"codex-thread-{who}"})
    rounds(lambda h: o.responses.create(model="gpt-5", instructions=SYSTEM, input=h).output_text)

    # opencode: chat completions with its session header.
    o2 = openai_client({"x-opencode-session": f"oc-{who}"})
    rounds(lambda h: o2.chat.completions.create(
        model="gpt-4o", messages=[{"role": "system", "content": SYSTEM}] + h).choices[0].message.content)

    # An OpenAI client naming its prompt_cache_key.
    o3 = openai_client({})
    rounds(lambda h: o3.chat.completions.create(
        model="gpt-4o", messages=[{"role": "system", "content": SYSTEM}] + h,
        extra_body={"prompt_cache_key": f"pck-{who}"}).choices[0].message.content)

# A subagent of Claude Code session cc-A names its parent.
sub = anthropic_client({"x-claude-code-session-id": "cc-sub", "x-parent-session-id": "claude-code-cc-A"})
rounds(lambda h: sub.messages.create(model="claude-sonnet-4-5", max_tokens=64, system="You review diffs.", messages=h).content[0].text)
print("identities ok")
