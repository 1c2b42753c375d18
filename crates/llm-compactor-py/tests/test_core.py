"""The package's core API against the real Rust library: formats in and out, results,
errors, summarizers (built-in, sync and async callables), the GIL, sessions and the
context manager."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Dict, List

import pytest

import llm_compactor
from llm_compactor import (
    CompactionResult,
    Compactor,
    ConfigError,
    ContextManager,
    InvalidInputError,
    Session,
    UnsupportedInputError,
)

HEADER = "[Summary of the earlier conversation, written by the context compactor]"


def openai_conversation(rounds: int = 30, size: int = 400) -> List[Dict[str, Any]]:
    messages: List[Dict[str, Any]] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the failing test in src/parser.rs."},
    ]
    for i in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat src/file_{i}.rs"})}}
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"fn f{i}() {{ }}\n" + "x " * size})
    messages.append({"role": "assistant", "content": "Found it."})
    messages.append({"role": "user", "content": "Go on."})
    return messages


def assert_paired(messages: List[Dict[str, Any]]) -> None:
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in messages if m.get("role") == "tool"}
    assert calls == results


def test_compact_openai_list_round_trips_shape_and_shrinks() -> None:
    messages = openai_conversation()
    before = llm_compactor.count_tokens(messages)
    result = llm_compactor.compact(messages, budget=4000)
    assert isinstance(result, CompactionResult)
    assert result.format == "openai" and result.request is None
    assert result.tokens_before == before
    assert result.tokens_after < 4000 and result.tokens_after == llm_compactor.count_tokens(result.messages)
    assert result.messages[0] == messages[0]
    assert result.messages[-1] == messages[-1]
    assert any(HEADER in (m.get("content") or "") for m in result.messages)
    assert result.summary.startswith(HEADER)
    assert not result.fallback and not result.exhausted
    assert result.attempts and result.attempts[-1]["outcome"] == "accepted"
    assert result.receipt is not None
    assert_paired(result.messages)


def test_under_the_trigger_nothing_changes() -> None:
    messages = openai_conversation(rounds=2, size=10)
    compactor = Compactor(budget=128_000)
    assert not compactor.needs_compaction(messages)
    plan = compactor.plan(messages)
    assert plan["needs_compaction"] is False and plan["reason"] == "not-needed"


def test_anthropic_turns_with_system_come_back_as_turns() -> None:
    turns: List[Dict[str, Any]] = [{"role": "user", "content": "Look at the logs."}]
    for i in range(25):
        turns.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"log{i}"}}]})
        turns.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "line\n" * 300}]})
    turns.append({"role": "assistant", "content": "Done reading."})
    assert llm_compactor.detect_format(turns) == "anthropic"
    result = llm_compactor.compact(turns, budget=3000, system="Be brief.")
    assert result.format == "anthropic"
    assert result.tokens_after < result.tokens_before
    assert all(m["role"] in ("user", "assistant") for m in result.messages)
    assert result.messages[-1] == turns[-1]
    uses = {b["id"] for m in result.messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"}
    answers = {b["tool_use_id"] for m in result.messages if isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_result"}
    assert uses == answers


def test_responses_items_and_request_object() -> None:
    items: List[Dict[str, Any]] = [{"role": "user", "content": "list the files"}]
    for i in range(30):
        items.append({"type": "function_call", "call_id": f"c{i}", "name": "ls", "arguments": "{}"})
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "a.txt\n" * 200})
    assert llm_compactor.detect_format(items) == "responses"
    result = llm_compactor.compact(items, budget=3000)
    assert result.format == "responses" and result.request is None
    assert result.tokens_after < result.tokens_before
    request = {"model": "gpt-5", "instructions": "Be brief.", "input": items}
    result = llm_compactor.compact(request, budget=3000)
    assert result.request is not None
    assert result.request["model"] == "gpt-5" and result.request["instructions"] == "Be brief."
    assert result.request["input"] == result.messages
    with pytest.raises(UnsupportedInputError):
        llm_compactor.compact({"input": items, "previous_response_id": "resp_1"}, budget=3000)


def test_errors_name_the_message_and_the_option() -> None:
    with pytest.raises(InvalidInputError) as info:
        llm_compactor.compact([{"role": "user", "content": "hi"}, {"role": "tool", "content": 3}], budget=1000, format="openai")
    assert info.value.index == 1 and "message 1" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ConfigError) as config:
        Compactor(budget=1000, trigger_ratio=0.3, target_ratio=0.5)
    assert config.value.field == "target_ratio"
    with pytest.raises(ConfigError) as counter:
        llm_compactor.count_tokens([], counter="nope")
    assert counter.value.field == "counter"
    with pytest.raises(ConfigError):
        Compactor(budget=1000, summarizer="openai")  # needs model
    with pytest.raises(ConfigError):
        Compactor(budget=1000, summarizer="ledger", model="gpt-4o-mini")


def test_options_have_the_cli_defaults() -> None:
    config = Compactor(budget=128_000).config
    assert config["trigger_ratio"] == 0.7 and config["target_ratio"] == 0.4
    assert config["keep_recent"] == 6 and config["tool_result_cap"] == 2000
    assert config["max_attempts"] == 3 and config["age_observations"] is True
    assert config["summary_max_tokens"] == 2048 and config["expand_truncated"] is True
    capped = Compactor(budget=128_000, summary_max_tokens=512).config
    assert capped["summary_max_tokens"] == 512 and capped["expand_truncated"] is False


def test_policy_and_expand_as_the_cli_reads_them() -> None:
    # The library's one options overlay: the CLI's `--policy` and `--expand` here too.
    economy = Compactor(budget=100_000, policy="economy", trigger_ratio=0.6).config
    assert economy["policy"] == "economy"
    assert economy["trigger_ratio"] == 0.6 and economy["target_ratio"] == 0.2
    assert Compactor(budget=100_000, expand=True).config["expand"] is True
    with pytest.raises(ConfigError):
        Compactor(budget=100_000, policy="cheap")


def test_counters() -> None:
    messages = [{"role": "user", "content": "hello world"}]
    assert llm_compactor.count_tokens(messages, counter="heuristic") == 8 + 3
    assert 0 < llm_compactor.count_tokens(messages, counter="o200k") < 20
    assert 0 < llm_compactor.count_tokens(messages, counter="cl100k") < 20


def test_callable_summarizer_sync_receives_instruction_and_transcript() -> None:
    seen: List[str] = []

    def summarize(instruction: str, transcript: str, max_tokens: int) -> str:
        seen.append(transcript)
        assert instruction and max_tokens > 0
        return "## Goals\nFix the parser test."

    result = llm_compactor.compact(openai_conversation(), budget=4000, summarizer=summarize, ledger_max_tokens=0)
    assert seen and "src/file_0.rs" in seen[0]
    assert "Fix the parser test." in result.summary and not result.fallback


def test_callable_summarizer_failures_are_classified() -> None:
    calls: List[int] = []

    def flaky(instruction: str, transcript: str) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("temporary outage")
        return "## Goals\nKeep going."

    result = llm_compactor.compact(openai_conversation(), budget=4000, summarizer=flaky, ledger_max_tokens=0)
    assert len(calls) == 2 and not result.fallback
    assert result.attempts[0]["outcome"] == "failed" and result.attempts[0]["class"] == "retry-same"

    broken: List[int] = []

    def bug(instruction: str, transcript: str) -> str:
        broken.append(1)
        raise ValueError("bad input")

    result = llm_compactor.compact(openai_conversation(), budget=4000, summarizer=bug, ledger_max_tokens=0)
    assert len(broken) == 1, "a ValueError is not retried"
    assert result.fallback and result.attempts[0]["class"] == "abort"
    assert "ValueError" in (result.attempts[0].get("note") or "")


def test_async_callable_runs_on_the_awaiting_loop() -> None:
    async def main() -> CompactionResult:
        loop = asyncio.get_running_loop()
        seen_loops: List[Any] = []

        async def summarize(instruction: str, transcript: str, max_tokens: int) -> str:
            seen_loops.append(asyncio.get_running_loop())
            await asyncio.sleep(0)
            return "## Goals\nAsync summary."

        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        result = await llm_compactor.compact_async(openai_conversation(), budget=4000, summarizer=summarize, ledger_max_tokens=0)
        task.cancel()
        assert seen_loops == [loop]
        return result

    result = asyncio.run(main())
    assert "Async summary." in result.summary
    # The sync API runs an async callable in a fresh loop.

    async def plain(instruction: str, transcript: str) -> str:
        return "## Goals\nFresh loop."

    assert "Fresh loop." in llm_compactor.compact(openai_conversation(), budget=4000, summarizer=plain, ledger_max_tokens=0).summary


def test_another_thread_runs_while_rust_works() -> None:
    """The GIL is released during a pass: a Python thread makes progress meanwhile."""
    release = threading.Event()
    counter = [0]

    def spin() -> None:
        while not release.is_set():
            counter[0] += 1

    def slow(instruction: str, transcript: str) -> str:
        # The summarizer waits in Rust's pass (not holding the GIL between calls).
        return "## Goals\nok"

    thread = threading.Thread(target=spin)
    thread.start()
    before = counter[0]
    llm_compactor.compact(openai_conversation(rounds=200, size=800), budget=8000, summarizer="none")
    during = counter[0] - before
    release.set()
    thread.join()
    assert during > 0


def test_cancel_ends_in_the_hard_trim() -> None:
    token = llm_compactor.CancelToken()
    token.cancel()
    result = llm_compactor.compact(openai_conversation(), budget=4000, summarizer=lambda i, t: "## Goals\nx", ledger_max_tokens=0, cancel=token)
    assert result.fallback and token.cancelled()


def test_session_append_replay_compact(tmp_path: Any) -> None:
    path = str(tmp_path / "run.jsonl")
    messages = openai_conversation()
    with Session.open(path) as session:
        assert session.append(messages) == len(messages)
        assert session.replay() == messages
        result = session.compact(Compactor(budget=4000))
        assert result.tokens_after < result.tokens_before
        assert session.replay() == result.messages
    # Reopened, the transcript replays to the compacted conversation.
    with Session.open(path) as again:
        assert again.replay() == result.messages
    with pytest.raises(llm_compactor.ConfigError):
        Session.open(str(tmp_path / "x.jsonl"), format="auto")


def test_session_is_locked_to_one_writer(tmp_path: Any) -> None:
    path = str(tmp_path / "run.jsonl")
    with Session.open(path):
        with pytest.raises(llm_compactor.SessionError):
            Session.open(path)


def test_context_manager_loop_records_usage_and_compacts(tmp_path: Any) -> None:
    compactor = Compactor(budget=4000, calibrated=True)
    manager = ContextManager(compactor, str(tmp_path / "loop.jsonl"))
    manager.push([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Fix it."}])
    compactions = 0
    for i in range(40):
        prepared = manager.prepare(tools=[{"type": "function", "function": {"name": "bash", "parameters": {}}}])
        assert prepared.request_tokens <= 4000
        if prepared.result is not None:
            compactions += 1
            assert prepared.reason in ("threshold", "room")
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        manager.record_response(
            [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": f"c{i}", "content": "out " * 150}],
            usage={"input_tokens": prepared.request_tokens + 40},
            model="scripted",
        )
    assert compactions > 0
    assert_paired(manager.messages)


def test_context_manager_counts_the_thinking_a_pass_moved(tmp_path: Any) -> None:
    # An Anthropic tool loop with signed thinking: after a pass summarizes or stubs before
    # kept turns, `stale_thinking` says how many blocks to ask the provider to drop.
    compactor = Compactor(budget=3000)
    manager = ContextManager(compactor, str(tmp_path / "thinking.jsonl"), format="anthropic")
    manager.push([{"role": "user", "content": "Read the log."}])
    seen = []
    for i in range(30):
        prepared = manager.prepare()
        seen.append(prepared.stale_thinking)
        turn = [
            {"type": "thinking", "thinking": f"round {i}", "signature": f"sig-{i}"},
            {"type": "tool_use", "id": f"t{i}", "name": "bash", "input": {"n": i}},
        ]
        manager.record_response(
            [{"role": "assistant", "content": turn},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"part {i} " * 120}]}],
            model="claude-opus-5-5",
        )
    assert seen[0] == 0, "nothing moved before the first pass"
    assert max(seen) > 0, "a pass moved kept turns' thinking onto a new prefix"


def test_context_manager_prepares_with_a_model_summarizer_unless_asked_not_to(tmp_path: Any) -> None:
    calls: List[int] = []

    def summarize(instruction: str, transcript: str) -> str:
        calls.append(len(transcript))
        return "The agent ran the shell and read its output."

    def reasons(name: str, **options: Any) -> List[str]:
        compactor = Compactor(budget=4000, summarizer=summarize, ledger_max_tokens=0)
        manager = ContextManager(compactor, str(tmp_path / f"{name}.jsonl"), **options)
        manager.push([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Fix it."}])
        seen = []
        for i in range(40):
            prepared = manager.prepare()
            assert prepared.request_tokens <= 4000
            if prepared.reason is not None:
                seen.append(prepared.reason)
            call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            manager.record_response(
                [{"role": "assistant", "content": None, "tool_calls": [call]},
                 {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i} " * 150}],
                model="scripted",
            )
        assert_paired(manager.messages)
        return seen

    # A model summarizer (a callable): passes are prepared off the request path by default.
    assert "prepared" in reasons("default")
    assert calls, "the summarizer wrote the prepared summaries"
    # prepare=False: every pass runs inside `prepare`, at the trigger.
    inline = reasons("inline", prepare=False)
    assert inline and "prepared" not in inline


def test_non_ascii_text_round_trips(tmp_path: Any) -> None:
    messages = openai_conversation(rounds=3, size=5)
    text = "Corrige le test de l'analyseur — «vite» 🎉 中文"
    messages[-1]["content"] = text
    with Session.open(str(tmp_path / "s.jsonl")) as session:
        session.append(messages)
        assert session.replay() == messages
    result = llm_compactor.compact(messages, budget=128_000)
    assert result.messages[-1]["content"] == text


def test_python_objects_are_read_directly_and_bad_ones_are_named() -> None:
    """Conversations reach Rust as the objects themselves (no JSON text in between):
    dicts, lists, tuples and SDK models with ``model_dump`` read as JSON would; anything
    else is a TypeError naming its type, a cycle or NaN a ValueError."""

    class SdkMessage:
        def model_dump(self, mode: str = "python", exclude_none: bool = False) -> Dict[str, Any]:
            return {"role": "user", "content": "from an SDK model"}

    plain = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "from an SDK model"}]
    expected = llm_compactor.count_tokens(plain)
    assert llm_compactor.count_tokens(json.dumps(plain)) == expected
    assert llm_compactor.count_tokens(tuple(plain)) == expected
    assert llm_compactor.count_tokens([plain[0], SdkMessage()]) == expected
    with pytest.raises(TypeError, match="set"):
        llm_compactor.count_tokens([{"role": "user", "content": {"a", "b"}}])
    with pytest.raises(TypeError, match="keys must be str"):
        llm_compactor.count_tokens([{"role": "user", 1: "x"}])
    looped: List[Any] = [{"role": "user", "content": "x"}]
    looped.append(looped)
    with pytest.raises(ValueError, match="nest too deeply"):
        llm_compactor.count_tokens(looped)
    with pytest.raises(ValueError, match="not a JSON number"):
        llm_compactor.count_tokens([{"role": "user", "content": "x", "weight": float("nan")}])


REMINDER = (
    "<system-reminder>\nContents of /home/user/trip/CLAUDE.md (project instructions):\n"
    "- Never share the traveller's passport number with anyone.\n</system-reminder>"
)
PLANTED = [
    "Rule: never book anything without asking me first.",
    "Constraint: the budget cap is $201 for the whole trip.",
    "Fact: my passport number ends in 4471 and I am allergic to peanuts.",
    "Task: plan a five-day trip to Oslo; flights are booked, the hotel is not yet.",
    "Preference: window seats, and no red-eye flights please.",
]
SUPERSEDING = "Correction: the budget cap is now $956, it replaces the $201 one."


def chat_session(turns: int = 65) -> List[Dict[str, Any]]:
    """The issue 41 session: rules early, a reminder, a repeated rule, a raised cap."""
    messages: List[Dict[str, Any]] = [{"role": "system", "content": "You are a travel assistant."}]
    for i in range(turns):
        if i == 0:
            user = REMINDER + "\n" + PLANTED[0]
        elif i < len(PLANTED):
            user = PLANTED[i]
        elif i == 40:
            user = SUPERSEDING
        elif i in (15, 30, 45):
            user = "Remember: never pay a deposit over 20% upfront."
        else:
            user = f"Question {i}: what about option {i % 5} on day {i % 7}?"
        messages.append({"role": "user", "content": user})
        messages.append(
            {"role": "assistant", "content": f"Noted for turn {i}: option {i % 5} costs {100 + i} euros."}
        )
    return messages


def test_any_budget_from_256_fits_and_keeps_the_instructions() -> None:
    # Issue 41: compact(messages, budget=256) returned 1,324 tokens, exhausted.
    messages = chat_session()
    size = llm_compactor.count_tokens(messages)
    for budget in (256, 600, 1000, size // 10, size // 5, size * 3 // 10):
        result = llm_compactor.compact(messages, budget=max(budget, 256))
        assert result.tokens_after <= max(budget, 256), (budget, result.tokens_after)
        assert not result.exhausted and result.exhaustion is None
    # Five passes at 25% of the session, five new turns between two: every rule stays.
    budget = size // 4
    for _ in range(5):
        result = llm_compactor.compact(messages, budget=budget)
        assert result.tokens_after <= budget and not result.exhausted
        messages = result.messages + chat_session(70)[-10:]
    text = "\n".join(m.get("content") or "" for m in result.messages)
    for planted in PLANTED[:1] + PLANTED[2:] + [SUPERSEDING]:
        assert planted in text, planted
    assert "Never share the traveller's passport number" in text
    # The replaced cap is never listed as current (marked, or cut before the rules).
    assert PLANTED[1] not in text.replace(PLANTED[1] + " (superseded by a later message)", "")
    assert text.count("Remember: never pay a deposit over 20% upfront.") == 1


def test_the_door_caps_a_two_megabyte_output_to_a_preview_with_its_handle() -> None:
    """Budgets at the door (issue 41, item 3): off by default; ``door=True`` (or a
    ``door_*`` number) caps a tool result over its cap to a head/tail preview."""
    output = "".join(f"line {i:06} of a 2 MB build log ......\n" for i in range(52_000))
    messages = [
        {"role": "user", "content": "Build it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": output},
    ]
    on = llm_compactor.compact(messages, budget=32_000, door_tool_cap_for={"bash": 5_000})
    preview = on.messages[-1]["content"]
    assert preview.startswith("line 000000") and "capped by the harness" in preview
    assert len(preview) < 2_500
    assert on.tokens_after <= 32_000
    with pytest.raises(ConfigError):
        Compactor(budget=32_000, door_tool_cap=100, door_preview_chars=5_000)
    off = llm_compactor.compact(messages, budget=32_000)
    assert "capped by the harness" not in json.dumps(off.messages)


def test_configured_pins_keep_rules_a_memory_result_and_a_message_by_id() -> None:
    """Configured pins (issue 41, item 1): at 10% of a chat session the ledger alone
    keeps few of the user's rules; pinned by pattern, every one stays whole. A memory
    tool's result and a message named by id likewise; a bad pattern is refused."""
    messages = chat_session()
    budget = max(llm_compactor.count_tokens(messages) // 10, 256)
    rules = [p for p in PLANTED if p.startswith("Rule:")] + ["Remember: never pay a deposit over 20% upfront."]
    plain = "\n".join(m.get("content") or "" for m in llm_compactor.compact(messages, budget=budget).messages)
    pinned_result = llm_compactor.compact(messages, budget=budget, pin_patterns=[r"(?m)^(Rule|Remember):"])
    pinned = "\n".join(m.get("content") or "" for m in pinned_result.messages)
    assert pinned_result.tokens_after <= budget and not pinned_result.exhausted
    assert all(rule in pinned for rule in rules), pinned
    assert not all(rule in plain for rule in rules), "the control keeps them all: the test proves nothing"

    loop: List[Dict[str, Any]] = [
        {"role": "user", "id": "brief", "content": "Brief: keep invoice numbers stable."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "m1", "type": "function", "function": {"name": "memory", "arguments": "{}"}}
        ]},
        {"role": "tool", "tool_call_id": "m1", "content": "Saved: invoices use the prefix INV-2026-."},
    ]
    for i in range(30):
        loop.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": f'{{"command": "cat f{i}.py"}}'}}
        ]})
        loop.append({"role": "tool", "tool_call_id": f"c{i}", "content": "def f(): pass\n" * 30})
    loop.append({"role": "user", "content": "Run the tests."})
    kept = llm_compactor.compact(loop, budget=1_500, pin_tools=["memory"], pin_ids=["brief"])
    text = json.dumps(kept.messages)
    assert "[memory result] Saved: invoices use the prefix INV-2026-." in text
    assert "Brief: keep invoice numbers stable." in text
    with pytest.raises(ConfigError) as refused:
        Compactor(budget=32_000, pin_patterns=["(unclosed"])
    assert refused.value.field == "pin_patterns"
    # One pattern given as a string is that pattern, not its letters.
    one = llm_compactor.compact(messages, budget=budget, pin_patterns=r"(?m)^(Rule|Remember):")
    assert one.messages == pinned_result.messages


def test_a_one_shot_pass_lists_the_thinking_it_moved() -> None:
    """Issue 39: ``CompactionResult.stale_thinking`` names (by signature) the signed
    thinking blocks a pass left on a changed prefix; empty without thinking."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": "Find the failure in the log."}]
    for n in range(24):
        messages.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": f"round {n}", "signature": f"sig-{n}"},
            {"type": "text", "text": f"Reading part {n}."},
            {"type": "tool_use", "id": f"t{n}", "name": "read", "input": {"part": n}},
        ]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": "log line " * 160},
        ]})
    result = llm_compactor.compact(messages, budget=6_000, counter="heuristic")
    assert result.dropped > 0
    assert result.stale_thinking and all(s.startswith("sig-") for s in result.stale_thinking)
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert llm_compactor.compact(plain, budget=6_000).stale_thinking == []
