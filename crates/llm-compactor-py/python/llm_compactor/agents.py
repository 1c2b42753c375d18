"""OpenAI Agents SDK: a ``Session`` that keeps the history it hands the runner inside the
budget (``pip install llm-compactor[agents]``).

```python
from agents import Agent, Runner, SQLiteSession
from llm_compactor.agents import CompactingSession

session = CompactingSession(SQLiteSession("user-42"), budget=16_000)
result = await Runner.run(agent, "next step", session=session,
                          run_config=RunConfig(call_model_input_filter=session.model_input_filter))
```

``get_items`` reads the wrapped session's items (Responses input items), and when a pass
is due returns the compacted items: the middle replaced by one summary message, tool
calls kept with their outputs. With ``rewrite=True`` (the default) the compacted items
also replace the wrapped session's, so the summary is kept and the next read starts from
it. The runner reads the session once per ``Runner.run``; a run with many tool rounds
grows its input in memory, which ``model_input_filter`` (for
``RunConfig.call_model_input_filter``) compacts before each model call. Every rule is the
Rust core's.
"""

from __future__ import annotations

from typing import Any, List, Optional, cast

from agents.memory.session import Session
from agents.run_config import CallModelData, ModelInputData

from . import CompactionResult, Compactor

__all__ = ["CompactingSession"]


class CompactingSession:
    """A ``Session`` wrapping ``inner`` that returns compacted items.

    ``compactor`` is a configured ``llm_compactor.Compactor``; without one, the keyword
    options build one (``Compactor``'s keywords). ``last_result`` is the last pass's
    result.
    """

    def __init__(
        self, inner: Session, *, compactor: Optional[Compactor] = None, rewrite: bool = True, **options: Any
    ) -> None:
        if compactor is None:
            compactor = Compactor(**options)
        elif options:
            raise TypeError("pass either a compactor or its options, not both")
        self.inner = inner
        self.compactor = compactor
        self.rewrite = rewrite
        self.session_id: str = inner.session_id
        self.session_settings = getattr(inner, "session_settings", None)
        self.last_result: Optional[CompactionResult] = None
        self.compactions = 0

    async def _compact(self, items: List[Any], instructions: Optional[str] = None) -> Optional[CompactionResult]:
        request: Any = items if instructions is None else {"instructions": instructions, "input": items}
        if not items or not self.compactor.needs_compaction(request, format="responses"):
            return None
        result = await self.compactor.compact_async(request, format="responses")
        if result.noop:
            return None
        self.last_result = result
        self.compactions += 1
        return result

    async def get_items(self, limit: Optional[int] = None) -> List[Any]:
        items: List[Any] = list(await self.inner.get_items())
        result = await self._compact(items)
        if result is not None:
            items = result.messages
            if self.rewrite:
                await self.inner.clear_session()
                await self.inner.add_items(cast(Any, items))
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: List[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()

    async def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """For ``RunConfig.call_model_input_filter``: the model input, compacted when a
        pass is due (the instructions count, and are kept)."""
        model_data = data.model_data
        result = await self._compact(list(model_data.input), model_data.instructions)
        if result is None:
            return model_data
        return ModelInputData(input=cast(Any, result.messages), instructions=model_data.instructions)
