"""The official OpenAI SDK's server-side compaction (`responses.create(context_management=
[{"type": "compaction", "compact_threshold": N}])`) through the proxy, in front of an
upstream that has none: a tool loop of ROUNDS calls, once not streamed (`responses.create`)
and once streamed (`responses.stream`, whose accumulator refuses a duplicate or missing
output index), each answer's output appended to the input as OpenAI's guide says (the
compaction item with it); the streamed run also drops the items before the latest
compaction item (the guide's latency tip).

Env: PROXY (the proxy's origin), THRESHOLD, ROUNDS. Prints one line per run; exits
non-zero on failure.
"""
import os
import warnings

import openai

PROXY = os.environ["PROXY"]
THRESHOLD = int(os.environ["THRESHOLD"])
ROUNDS = int(os.environ["ROUNDS"])
# Items the SDK has no model field for (a user message's plain-text content) serialize
# with a pydantic warning, not an error.
warnings.filterwarnings("ignore", category=UserWarning)

client = openai.OpenAI(base_url=PROXY + "/v1", api_key="sk-test-server-side", max_retries=0)
TOOLS = [{"type": "function", "name": "shell", "description": "Run a shell command",
          "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]


def run(stream, prune):
    mode = "streamed" if stream else "plain"
    history = [{"role": "user", "content": f"make the build green ({mode})"}]
    compactions = turns = 0
    while True:
        request = dict(model="replay", instructions="You are a coding agent.", input=history, tools=TOOLS,
                       context_management=[{"type": "compaction", "compact_threshold": THRESHOLD}])
        if stream:
            added = []
            with client.responses.stream(**request) as events:
                for event in events:
                    if event.type == "response.output_item.added":
                        added.append((event.output_index, event.item.type))
                response = events.get_final_response()
            assert [i for i, _ in added] == list(range(len(response.output))), added
        else:
            response = client.responses.create(**request)
        turns += 1
        kinds = [item.type for item in response.output]
        if "compaction" in kinds:
            assert kinds.index("compaction") == 0 and kinds.count("compaction") == 1, kinds
            item = response.output[0]
            assert item.encrypted_content.startswith("llmc1."), item
            # The readable copy of the summary: an extra field the SDK's model keeps.
            summary = (item.model_extra or {}).get("summary")
            assert summary and summary[0]["type"] == "summary_text", item
            assert "make the build green" in summary[0]["text"], summary
            compactions += 1
            if prune:
                history = []
        history += [item.model_dump(exclude_none=True) for item in response.output]
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        for call in calls:
            history.append({"type": "function_call_output", "call_id": call.call_id,
                            "output": f"{call.arguments}: line of the file\n" * 40})
        assert turns <= ROUNDS, turns
    assert response.output_text, response
    print(f"{mode} ok: {turns} turns, {compactions} compactions")
    return compactions


assert run(stream=False, prune=False) >= 3
assert run(stream=True, prune=True) >= 3
