"""A Python callable as the summarizer: the one glue the Rust side calls.

The callable is ``fn(instruction, transcript, max_output_tokens) -> str`` (or a dict with
``text`` and optionally ``truncated: bool`` and ``usage: {input_tokens, output_tokens,
cache_read_tokens, cache_write_tokens}``), sync or ``async``. It may also take only
``(instruction, transcript)``. Rust calls it on a worker thread with the GIL held for the
call only. An ``async`` callable runs on the event loop that awaits ``compact_async`` (so
it can use that loop's clients), or in a fresh loop from the sync API.

Failures: ``ValueError`` / ``TypeError`` are abort-class (a bug that will not heal on
retry: the pass goes straight to the hard trim); any other exception is retried after a
backoff, up to ``max_attempts`` failed calls in all.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

if TYPE_CHECKING:
    import asyncio

SummaryAnswer = Union[str, "dict[str, Any]"]
SummarizerFn = Callable[..., Any]


def _arity(fn: SummarizerFn) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 3
    if any(p.kind in (p.VAR_POSITIONAL,) for p in params):
        return 3
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return 2 if len(positional) == 2 else 3


def adapt(
    fn: SummarizerFn, loop_of: Callable[[], Optional[asyncio.AbstractEventLoop]] = lambda: None
) -> Callable[[str, str, int], Any]:
    """The plain function Rust calls: runs ``fn``, awaiting it when it is async (on the
    loop ``loop_of()`` names when it is running, else in a fresh one)."""
    arity = _arity(fn)

    def call(instruction: str, transcript: str, max_output_tokens: int) -> Any:
        answer = fn(instruction, transcript) if arity == 2 else fn(instruction, transcript, max_output_tokens)
        if inspect.isawaitable(answer):
            import asyncio

            loop = loop_of()
            if loop is not None and loop.is_running():
                return asyncio.run_coroutine_threadsafe(_await(answer), loop).result()
            return asyncio.run(_await(answer))
        return answer

    call.__name__ = getattr(fn, "__name__", "callable")
    return call


async def _await(awaitable: Any) -> Any:  # a coroutine for run_coroutine_threadsafe
    return await awaitable
