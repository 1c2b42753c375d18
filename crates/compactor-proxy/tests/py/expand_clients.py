"""The official OpenAI and Anthropic SDKs against a proxy with --expand-tool.

Each of chat completions, Responses and Messages, streamed and not, plays an agent's
rounds (a command and its long output each) in a session of its own until the proxy
compacts and the scripted model (`expander`) reads a replaced output back through
`compactor_expand`. The SDK must then see one ordinary answer: text only, no tool call,
one message, as the SDK parses it. Model `expander-chatty` says a sentence before its
call: streamed, the client has already received it, and the follow-up's text continues
the same answer (a second text block or message item, never a call); not streamed, the
client sees the follow-up's answer alone. Env: PROXY.
"""
import os

import anthropic
import openai

PROXY = os.environ["PROXY"]
oa = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-test-openai", max_retries=0)
an = anthropic.Anthropic(base_url=PROXY, api_key="sk-ant-test", max_retries=0)
SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}}
EXPAND = "compactor_expand"


def output(i):
    filler = "".join(f"PROBE step {i} line {n}: applied ok\n" for n in range(60))
    return f"PROBE-{i}: migration step {i} output\n{filler}"


def rounds(make_round, send, check):
    """Adds rounds until the answer is the model's read-back; checks that answer."""
    history = []
    for i in range(40):
        history += make_round(i)
        text, answer = send(history)
        if "read back: === #" in text:
            assert "PROBE-" in text, text
            assert text.startswith("read back: ") or text.startswith("Let me check the earlier output. read back: "), text
            check(text, answer)
            return
    raise AssertionError("no expansion happened")


def chat_round(i):
    call = {"id": f"call_{i}", "type": "function",
            "function": {"name": "bash", "arguments": f'{{"cmd":"./migrate --step {i}"}}'}}
    return [{"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": output(i)}]


chat_tools = [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA}}]


def chat(stream, model):
    session = {"x-compactor-session": f"chat-{stream}-{model}"}
    start = [{"role": "user", "content": "Run the migrations."}]

    def send(history):
        if not stream:
            r = oa.chat.completions.create(model=model, messages=start + history, tools=chat_tools,
                                           extra_headers=session)
            return r.choices[0].message.content or "", r
        chunks = list(oa.chat.completions.create(model=model, messages=start + history, tools=chat_tools,
                                                 stream=True, extra_headers=session))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        return text, chunks

    def check(text, answer):
        assert text.startswith("Let me check") == (stream and model == "expander-chatty"), text
        if not stream:
            assert len(answer.choices) == 1
            message = answer.choices[0].message
            assert not message.tool_calls, message
            assert answer.choices[0].finish_reason == "stop"
        else:
            assert not any(c.choices and c.choices[0].delta.tool_calls for c in answer), answer
            finishes = [c.choices[0].finish_reason for c in answer if c.choices and c.choices[0].finish_reason]
            assert finishes == ["stop"], finishes
        assert EXPAND not in repr(answer)

    rounds(chat_round, send, check)
    print(f"chat stream={stream} {model} ok")


def responses_round(i):
    return [{"type": "function_call", "call_id": f"call_{i}", "name": "bash",
             "arguments": f'{{"cmd":"./migrate --step {i}"}}'},
            {"type": "function_call_output", "call_id": f"call_{i}", "output": output(i)}]


responses_tools = [{"type": "function", "name": "bash", "parameters": SCHEMA}]


def responses(stream, model):
    session = {"x-compactor-session": f"responses-{stream}-{model}"}
    start = [{"role": "user", "content": [{"type": "input_text", "text": "Run the migrations."}]}]

    def send(history):
        kwargs = dict(model=model, input=start + history, tools=responses_tools, store=False,
                      extra_headers=session)
        if not stream:
            r = oa.responses.create(**kwargs)
            return r.output_text, r
        with oa.responses.stream(**kwargs) as s:
            events = [e.type for e in s]
            final = s.get_final_response()
        return final.output_text, (final, events)

    def check(text, answer):
        final = answer if not stream else answer[0]
        items = 2 if stream and model == "expander-chatty" else 1
        assert [item.type for item in final.output] == ["message"] * items, final.output
        if stream:
            events = answer[1]
            assert events.count("response.completed") == 1, events
            assert events.count("response.created") == 1, events
            assert not any("function_call" in e for e in events), events
        assert EXPAND not in repr(answer)

    rounds(responses_round, send, check)
    print(f"responses stream={stream} {model} ok")


def messages_round(i):
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"call_{i}", "name": "bash",
                                               "input": {"cmd": f"./migrate --step {i}"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"call_{i}", "content": output(i)}]}]


messages_tools = [{"name": "bash", "description": "Run a command", "input_schema": SCHEMA}]


def messages(stream, model):
    session = {"x-compactor-session": f"messages-{stream}-{model}"}
    start = [{"role": "user", "content": "Run the migrations."}]

    def send(history):
        kwargs = dict(model=model, max_tokens=512, messages=start + history, tools=messages_tools,
                      extra_headers=session)
        if not stream:
            r = an.messages.create(**kwargs)
            return "".join(b.text for b in r.content if b.type == "text"), r
        with an.messages.stream(**kwargs) as s:
            events = [e.type for e in s]
            final = s.get_final_message()
        return "".join(b.text for b in final.content if b.type == "text"), (final, events)

    def check(text, answer):
        final = answer if not stream else answer[0]
        blocks = 2 if stream and model == "expander-chatty" else 1
        assert [b.type for b in final.content] == ["text"] * blocks, final.content
        assert final.stop_reason == "end_turn", final.stop_reason
        if stream:
            events = answer[1]
            assert events.count("message_start") == 1, events
            assert events.count("message_stop") == 1, events
        assert EXPAND not in repr(answer)

    rounds(messages_round, send, check)
    print(f"messages stream={stream} {model} ok")


for model in ("expander", "expander-chatty"):
    for stream in (False, True):
        chat(stream, model)
        responses(stream, model)
        messages(stream, model)
