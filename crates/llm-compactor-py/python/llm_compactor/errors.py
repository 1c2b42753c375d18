"""The exceptions of llm_compactor, mirroring the Rust library's typed errors.

``CompactorError`` is the root. Each exception carries ``index`` (the message index in
the list you passed, when one message is at fault) and ``field`` (the option at fault,
when one is), besides its message.

- ``InvalidInputError`` (also a ``ValueError``): the conversation cannot be read or is
  malformed (``index`` names the message).
- ``UnsupportedInputError`` (an ``InvalidInputError``): a well-formed request that the
  codec does not model (a Responses ``previous_response_id``, an ``item_reference``):
  send it unchanged.
- ``ConfigError`` (also a ``ValueError``): an invalid option (``field`` names it).
- ``SessionError`` (also an ``OSError``): a transcript could not be created, read or
  appended to (locked, malformed line, I/O).
- ``ContextExhaustedError``: nothing more can make the conversation fit; the transcript
  holds the best conversation there was.

A failing summarizer is not an error: the pass ends in the hard trim with
``result.fallback`` set, and every failed call is in ``result.attempts``.
"""

from __future__ import annotations

from typing import Optional

__all__ = [
    "CompactorError",
    "InvalidInputError",
    "UnsupportedInputError",
    "ConfigError",
    "SessionError",
    "ContextExhaustedError",
]


class CompactorError(Exception):
    """The root of llm_compactor's exceptions."""

    index: Optional[int]
    field: Optional[str]

    def __init__(self, message: str, *, index: Optional[int] = None, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.index = index
        self.field = field


class InvalidInputError(CompactorError, ValueError):
    """The conversation cannot be read, or is malformed at ``index``."""


class UnsupportedInputError(InvalidInputError):
    """A well-formed request with parts the codec does not model: pass it through."""


class ConfigError(CompactorError, ValueError):
    """An invalid option; ``field`` names it."""


class SessionError(CompactorError, OSError):
    """A session transcript could not be created, read or appended to."""


class ContextExhaustedError(CompactorError):
    """Even the best pass does not fit; the transcript holds the best conversation."""
