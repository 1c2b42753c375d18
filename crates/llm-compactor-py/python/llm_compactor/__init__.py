"""llm-compactor: keeps a tool-using LLM agent inside its context window.

The Rust core (``llm_compactor._core``) does all the work: reading the conversation,
counting, planning, summarizing, the hard trim, the transcript. This module is the typed
Python API over it; it holds no rules of its own.

Messages are plain dicts as the SDKs produce them: OpenAI chat messages, Anthropic
Messages turns (``system=`` beside them), OpenAI Responses input items, or a whole
request object. ``format="auto"`` detects which; results come back in the same format.

The GIL is released while Rust parses, counts, plans, compacts and waits, so other
Python threads keep running during a pass; ``compact_async`` runs the pass on a worker
thread without blocking the event loop.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

if TYPE_CHECKING:  # asyncio is imported when first needed: it is half of the import time
    import asyncio

from . import _core
from ._summarizer import SummarizerFn, adapt
from .errors import (
    CompactorError,
    ConfigError,
    ContextExhaustedError,
    InvalidInputError,
    SessionError,
    UnsupportedInputError,
)

__version__: str = _core.__version__

__all__ = [
    "compact",
    "compact_async",
    "count_tokens",
    "detect_format",
    "Compactor",
    "CompactionResult",
    "CancelToken",
    "ContextManager",
    "Prepared",
    "Session",
    "CompactorError",
    "ConfigError",
    "ContextExhaustedError",
    "InvalidInputError",
    "SessionError",
    "UnsupportedInputError",
]

#: A conversation: a list of message dicts, or a whole request object.
Messages = Union[Sequence[Mapping[str, Any]], Mapping[str, Any]]
#: The summarizer: a built-in's name, or a callable (see ``llm_compactor._summarizer``).
SummarizerSpec = Union[str, SummarizerFn, None]

CancelToken = _core.CancelToken


def _default(value: Any) -> Any:
    """JSON for SDK objects (pydantic models) that are not plain dicts (the session's
    messages; a compaction's are read by Rust directly, which does the same)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    raise TypeError(f"messages must be JSON-serializable dicts, not {type(value).__name__}")


def _strings(value: Optional[Sequence[str]]) -> Optional[List[str]]:
    """A list of strings from a sequence of them, or one string alone (not its letters)."""
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value]


def _json(value: Any) -> str:
    # ASCII-only output is the C encoder's fastest path (non-ASCII text goes as escapes).
    return json.dumps(value, default=_default, separators=(",", ":"))


@dataclass(frozen=True)
class CompactionResult:
    """What a pass did (the library's ``CompactionResult``).

    ``messages`` is the conversation to use from now on, as a list in the format given;
    ``request`` is the whole request object when one was given (else ``None``).
    """

    messages: List[Dict[str, Any]]
    request: Optional[Dict[str, Any]]
    format: str
    summary: str
    tokens_before: int
    tokens_after: int
    fallback: bool
    exhausted: bool
    dropped: int
    cut_index: int
    elisions: List[Dict[str, Any]] = field(default_factory=list)
    repairs: List[Dict[str, Any]] = field(default_factory=list)
    truncations: List[Dict[str, Any]] = field(default_factory=list)
    attempts: List[Dict[str, Any]] = field(default_factory=list)
    usage: Dict[str, int] = field(default_factory=dict)
    receipt: Optional[Dict[str, Any]] = None
    #: When ``exhausted``: why, in numbers (``limit``, ``tokens_after``, ``sticky_tokens``,
    #: ``recent_tokens``, ``recent_messages``); else ``None``.
    exhaustion: Optional[Dict[str, Any]] = None
    #: Signatures of the signed thinking blocks the pass moved onto a changed prefix (a
    #: model with preserved thinking refuses them: send with ``drop_block`` or strip them).
    stale_thinking: List[str] = field(default_factory=list)

    @property
    def noop(self) -> bool:
        """True when the conversation came back unchanged."""
        return self.dropped == 0 and not self.elisions and not self.repairs

    @classmethod
    def _from_json(cls, text: str) -> "CompactionResult":
        raw = json.loads(text)
        return cls(
            messages=raw["messages"],
            request=raw.get("request"),
            format=raw["format"],
            summary=raw["summary"],
            tokens_before=raw["tokens_before"],
            tokens_after=raw["tokens_after"],
            fallback=raw["fallback"],
            exhausted=raw["exhausted"],
            dropped=raw["dropped"],
            cut_index=raw["cut_index"],
            elisions=raw.get("elisions", []),
            repairs=raw.get("repairs", []),
            truncations=raw.get("truncations", []),
            attempts=raw.get("attempts", []),
            usage=raw.get("usage", {}),
            receipt=raw.get("receipt"),
            exhaustion=raw.get("exhaustion"),
            stale_thinking=raw.get("stale_thinking", []),
        )


class Compactor:
    """A configured compactor: ``plan``, ``needs_compaction``, ``compact``.

    Every keyword has the default and meaning of the ``compactor compact`` flag of the
    same name (``--trigger-ratio`` is ``trigger_ratio``; ``policy`` is ``"default"`` or
    ``"economy"``); ``None`` means the library's default. ``summarizer`` is ``"ledger"`` (no model: the artifact ledger, instant,
    deterministic), ``"openai"`` / ``"anthropic"`` (with ``model``, ``base_url``,
    ``api_key_env``, ``summarizer_context``), ``"exec"`` (with ``summarizer_cmd``),
    ``"none"`` (aging and the hard trim only), or a Python callable. ``calibrated=True``
    anchors counts on what the provider billed (``record_usage``). ``door=True`` (or any
    ``door_*`` number) turns on budgets at the door: a tool result over its cap becomes a
    head/tail preview naming its handle, old media a placeholder
    (``door_tool_cap_for={"bash": 7500}`` sets one tool's cap in tokens).
    ``pin_patterns`` (regular expressions over a user message's own words, e.g.
    ``[r"(?m)^RULE:"]``), ``pin_tools`` (tool names, e.g. a memory tool's) and ``pin_ids``
    (message ids) keep those messages whole in every summary's pinned section, pass after
    pass; a pattern that does not parse is a ``ConfigError``.
    """

    def __init__(
        self,
        *,
        budget: int = 128_000,
        summarizer: SummarizerSpec = "ledger",
        counter: str = "o200k",
        calibrated: bool = False,
        policy: Optional[str] = None,
        trigger_ratio: Optional[float] = None,
        target_ratio: Optional[float] = None,
        keep_recent: Optional[int] = None,
        tool_result_cap: Optional[int] = None,
        age_observations: Optional[bool] = None,
        age_min_chars: Optional[int] = None,
        age_reclaim_min: Optional[int] = None,
        max_recent_tokens: Optional[int] = None,
        max_attempts: Optional[int] = None,
        summary_max_tokens: Optional[int] = None,
        ledger_max_tokens: Optional[int] = None,
        expand: Optional[bool] = None,
        model: Optional[str] = None,
        base_url: Optional[str] = None,
        api_key_env: Optional[str] = None,
        summarizer_context: Optional[int] = None,
        summarizer_cmd: Optional[str] = None,
        summarizer_timeout: Optional[float] = None,
        door: Optional[bool] = None,
        door_tool_cap: Optional[int] = None,
        door_tool_cap_for: Optional[Dict[str, int]] = None,
        door_preview_chars: Optional[int] = None,
        door_keep_media: Optional[int] = None,
        door_max_request_bytes: Optional[int] = None,
        pin_patterns: Optional[Sequence[str]] = None,
        pin_tools: Optional[Sequence[str]] = None,
        pin_ids: Optional[Sequence[str]] = None,
    ) -> None:
        options: Dict[str, Any] = {
            "budget": budget,
            "counter": counter,
            "calibrated": calibrated,
            "policy": policy,
            "trigger_ratio": trigger_ratio,
            "target_ratio": target_ratio,
            "keep_recent": keep_recent,
            "tool_result_cap": tool_result_cap,
            "age_observations": age_observations,
            "age_min_chars": age_min_chars,
            "age_reclaim_min": age_reclaim_min,
            "max_recent_tokens": max_recent_tokens,
            "max_attempts": max_attempts,
            "summary_max_tokens": summary_max_tokens,
            "ledger_max_tokens": ledger_max_tokens,
            "expand": expand,
            "model": model,
            "base_url": base_url,
            "api_key_env": api_key_env,
            "summarizer_context": summarizer_context,
            "summarizer_cmd": summarizer_cmd,
            "summarizer_timeout": summarizer_timeout,
            "door": door,
            "door_tool_cap": door_tool_cap,
            "door_tool_cap_for": door_tool_cap_for,
            "door_preview_chars": door_preview_chars,
            "door_keep_media": door_keep_media,
            "door_max_request_bytes": door_max_request_bytes,
            "pin_patterns": _strings(pin_patterns),
            "pin_tools": _strings(pin_tools),
            "pin_ids": _strings(pin_ids),
        }
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._calibrated = calibrated
        callable_summarizer: Optional[Callable[[str, str, int], Any]] = None
        if summarizer is None:
            options["summarizer"] = "none"
        elif isinstance(summarizer, str):
            options["summarizer"] = summarizer
        elif callable(summarizer):
            callable_summarizer = adapt(summarizer, self._event_loop)
        else:
            raise ConfigError("summarizer must be a name or a callable", field="summarizer")
        self._core = _core.Compactor(_json({k: v for k, v in options.items() if v is not None}), callable_summarizer)

    def _event_loop(self) -> Optional[asyncio.AbstractEventLoop]:
        return self._loop

    @property
    def config(self) -> Dict[str, Any]:
        """The validated configuration (the library's ``CompactorConfig``)."""
        result: Dict[str, Any] = json.loads(self._core.config_json())
        return result

    @property
    def calibrated(self) -> bool:
        """True when counts are anchored on billed usage (``record_usage``)."""
        return self._calibrated

    @property
    def counter(self) -> str:
        """The counter's name."""
        return self._core.counter_name()

    @property
    def summarizer(self) -> Optional[str]:
        """The summarizer's name (``None`` without one)."""
        return self._core.summarizer_name()

    def count(self, messages: Messages, *, format: str = "auto", system: Any = None) -> int:
        """The conversation's tokens with this compactor's counter."""
        return self._core.count(messages, format, system)

    def needs_compaction(self, messages: Messages, *, format: str = "auto", system: Any = None) -> bool:
        """True when a pass is due (over the trigger, or an aging epoch that pays)."""
        return self._core.needs_compaction(messages, format, system)

    def plan(
        self, messages: Messages, *, format: str = "auto", system: Any = None, target: Optional[int] = None
    ) -> Dict[str, Any]:
        """A dry run: what a pass would do (the library's ``PlanReport``), changing nothing."""
        report: Dict[str, Any] = json.loads(self._core.plan(messages, format, system, target))
        return report

    def compact(
        self,
        messages: Messages,
        *,
        format: str = "auto",
        system: Any = None,
        target: Optional[int] = None,
        focus: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
    ) -> CompactionResult:
        """One pass. ``target`` aims below the configured target; ``focus`` is an extra
        instruction for the summarizer; ``cancel`` ends waits and calls (hard trim)."""
        raw = self._core.compact(messages, format, system, target, focus, cancel)
        return CompactionResult._from_json(raw)

    async def compact_async(
        self,
        messages: Messages,
        *,
        format: str = "auto",
        system: Any = None,
        target: Optional[int] = None,
        focus: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
    ) -> CompactionResult:
        """``compact`` on a worker thread: the event loop keeps running; an ``async``
        summarizer runs on this loop. Cancelling the awaiting task cancels the pass."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._loop = loop
        token = cancel if cancel is not None else CancelToken()
        # A snapshot of the list: the loop may append to it while the worker reads it.
        snapshot = list(messages) if isinstance(messages, list) else messages
        call = functools.partial(self._core.compact, snapshot, format, system, target, focus, token)
        try:
            raw = await loop.run_in_executor(None, call)
        except asyncio.CancelledError:
            token.cancel()
            raise
        return CompactionResult._from_json(raw)

    def record_usage(
        self,
        messages: Messages,
        usage: Mapping[str, int],
        *,
        model: str,
        format: str = "auto",
        system: Any = None,
    ) -> None:
        """Feeds what the provider billed for ``messages`` (the conversation the request
        carried) to the calibrated counter (``calibrated=True``). ``usage`` has
        ``input_tokens`` (prompt tokens, cached included) and optionally
        ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``."""
        self._core.record_usage(messages, _json(dict(usage)), model, format, system)


def compact(
    messages: Messages,
    *,
    budget: int,
    format: str = "auto",
    system: Any = None,
    summarizer: SummarizerSpec = "ledger",
    counter: str = "o200k",
    target: Optional[int] = None,
    focus: Optional[str] = None,
    cancel: Optional[CancelToken] = None,
    **options: Any,
) -> CompactionResult:
    """Compacts ``messages`` to fit ``budget`` tokens; see ``Compactor`` for the options."""
    compactor = Compactor(budget=budget, summarizer=summarizer, counter=counter, **options)
    return compactor.compact(messages, format=format, system=system, target=target, focus=focus, cancel=cancel)


async def compact_async(
    messages: Messages,
    *,
    budget: int,
    format: str = "auto",
    system: Any = None,
    summarizer: SummarizerSpec = "ledger",
    counter: str = "o200k",
    target: Optional[int] = None,
    focus: Optional[str] = None,
    cancel: Optional[CancelToken] = None,
    **options: Any,
) -> CompactionResult:
    """``compact`` without blocking the event loop."""
    compactor = Compactor(budget=budget, summarizer=summarizer, counter=counter, **options)
    return await compactor.compact_async(
        messages, format=format, system=system, target=target, focus=focus, cancel=cancel
    )


def count_tokens(messages: Messages, *, counter: str = "o200k", format: str = "auto", system: Any = None) -> int:
    """The conversation's tokens: ``o200k`` / ``cl100k`` (exact, with OpenAI's chat
    framing) or ``heuristic`` (8 + ceil(chars / 4) a message)."""
    return _core.count_tokens(messages, counter, format, system)


def detect_format(messages: Messages, *, system: Any = None) -> str:
    """The format ``auto`` reads ``messages`` as: openai, anthropic, responses or
    mini-swe-agent."""
    return _core.detect_format(messages, "auto", system)


class Session:
    """A session transcript: an append-only JSONL file that replays byte-identically
    (every compaction recorded by id). One writer at a time (the file is locked)."""

    def __init__(self, core: _core.Session) -> None:
        self._core = core

    @classmethod
    def open(cls, path: str, *, format: str = "openai") -> "Session":
        """Opens the transcript at ``path`` (created when absent; a torn last line from
        a crash is repaired)."""
        return cls(_core.Session(path, format))

    @property
    def path(self) -> str:
        return str(self._core.path())

    def append(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Appends messages (one write; nothing is written when one is refused)."""
        return self._core.append(_json(list(messages)))

    def replay(self) -> List[Dict[str, Any]]:
        """The conversation the transcript replays to."""
        messages: List[Dict[str, Any]] = json.loads(self._core.replay())
        return messages

    def compact(
        self,
        compactor: Compactor,
        *,
        target: Optional[int] = None,
        focus: Optional[str] = None,
        cancel: Optional[CancelToken] = None,
    ) -> CompactionResult:
        """Runs one pass over the conversation and records it in the transcript."""
        return CompactionResult._from_json(self._core.compact(compactor._core, target, focus, cancel))

    def close(self) -> None:
        """Releases the transcript's lock."""
        self._core.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Prepared:
    """The conversation to send, and the pass that ran (if one did).

    ``stale_thinking`` counts the signed thinking blocks the conversation carries on a
    prefix they were not produced under (kept turns after a summary or a stub): a model
    with preserved thinking refuses them, so send such a request with
    ``thinking.block_binding.prefix_mismatch_behavior = "drop_block"`` and the
    ``thinking-binding-controls-2026-08-01`` beta (see ``docs/binding.md``).
    """

    messages: List[Dict[str, Any]]
    request_tokens: int
    reason: Optional[str]
    result: Optional[CompactionResult]
    stale_thinking: int = 0

    @classmethod
    def _from_json(cls, text: str) -> "Prepared":
        raw = json.loads(text)
        passed = raw.get("pass")
        result = None
        reason = None
        if passed is not None:
            reason = passed["reason"]
            result = CompactionResult._from_json(json.dumps(passed["result"]))
        return cls(
            messages=raw["messages"],
            request_tokens=raw["request_tokens"],
            reason=reason,
            result=result,
            stale_thinking=raw.get("stale_thinking", 0),
        )


class ContextManager:
    """The agent-loop glue: before each request ``prepare`` (counts the request, compacts
    when needed, records the pass); after each response ``record_response`` (feeds the
    billed usage to the calibrated counter, appends the new messages). The transcript at
    ``path`` is created when absent and resumed otherwise.

    ``prepare``: with a model summarizer (a callable, ``openai``, ``anthropic``, ``exec``)
    passes are prepared in the background by default, so that ``prepare`` never waits for a
    summary below the hard limit; ``prepare=False`` runs every pass inline (the call then
    waits for the summary), ``prepare=True`` prepares with any summarizer."""

    def __init__(
        self,
        compactor: Compactor,
        path: str,
        *,
        format: str = "openai",
        window: Optional[int] = None,
        completion_reserve: int = 0,
        safety_margin: int = 0,
        max_forced_compactions: Optional[int] = None,
        prepare: Optional[bool] = None,
    ) -> None:
        self._compactor = compactor
        self._core = _core.ContextManager(
            compactor._core, path, format, window, completion_reserve, safety_margin, max_forced_compactions,
            prepare,
        )

    def push(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Appends messages (the user's, the harness's)."""
        self._core.push(_json(list(messages)))

    def begin_run(self) -> None:
        """Starts a run: the forced-pass allowance is renewed."""
        self._core.begin_run()

    def prepare(
        self, *, tools: Optional[Sequence[Mapping[str, Any]]] = None, context: str = "",
        cancel: Optional[CancelToken] = None,
    ) -> Prepared:
        """The conversation to send (compacted first when needed)."""
        raw = self._core.prepare(None if tools is None else _json(list(tools)), context, cancel)
        return Prepared._from_json(raw)

    async def prepare_async(
        self, *, tools: Optional[Sequence[Mapping[str, Any]]] = None, context: str = ""
    ) -> Prepared:
        """``prepare`` without blocking the event loop."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._compactor._loop = loop
        token = CancelToken()
        payload = None if tools is None else _json(list(tools))
        try:
            raw = await loop.run_in_executor(None, self._core.prepare, payload, context, token)
        except asyncio.CancelledError:
            token.cancel()
            raise
        return Prepared._from_json(raw)

    def on_context_length_exceeded(
        self, *, tools: Optional[Sequence[Mapping[str, Any]]] = None, context: str = ""
    ) -> Prepared:
        """After the provider refused the request as too long: a forced pass."""
        raw = self._core.on_context_length_exceeded(None if tools is None else _json(list(tools)), context, None)
        return Prepared._from_json(raw)

    def record_response(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        usage: Optional[Mapping[str, int]] = None,
        model: str = "",
    ) -> None:
        """Records the response's usage and appends its messages (the assistant turn,
        then its tool results)."""
        self._core.record_response(None if usage is None else _json(dict(usage)), model, _json(list(messages)))

    @property
    def messages(self) -> List[Dict[str, Any]]:
        """The conversation as it stands."""
        messages: List[Dict[str, Any]] = json.loads(self._core.messages())
        return messages
