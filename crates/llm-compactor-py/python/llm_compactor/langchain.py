"""LangChain v1 agent middleware: compacts the agent state's messages before each model
call (``pip install llm-compactor[langchain]``).

```python
from langchain.agents import create_agent
from llm_compactor.langchain import CompactorMiddleware

agent = create_agent(model, tools, middleware=[CompactorMiddleware(budget=16_000)])
```

Before each model call, when the compactor says a pass is due, the state's messages are
replaced by the compacted conversation: the system messages kept, the middle replaced by
one summary message (a ``HumanMessage`` starting with the summary header), the recent turns
kept, no tool call separated from its result. After each call, the model's
``usage_metadata`` (what the provider billed) is fed to the calibrated counter, so the
next decision counts what the provider counts. The conversion to and from OpenAI chat
dicts is LangChain's own (``convert_to_openai_messages`` / ``convert_to_messages``); every
rule is the Rust core's.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from langchain.agents.middleware import AgentMiddleware, AgentState
from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, convert_to_messages
from langchain_core.messages.utils import convert_to_openai_messages
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.runtime import Runtime

from . import CompactionResult, Compactor

__all__ = ["CompactorMiddleware"]


class CompactorMiddleware(AgentMiddleware):
    """Keeps a ``create_agent`` agent inside ``budget`` tokens.

    ``compactor`` is a configured ``llm_compactor.Compactor``; without one, the keyword
    options build one (``Compactor``'s keywords; ``calibrated=True`` by default here, so
    that billed usage anchors the counts). ``last_result`` is the last pass's result.
    """

    def __init__(self, *, compactor: Optional[Compactor] = None, **options: Any) -> None:
        super().__init__()
        if compactor is None:
            options.setdefault("calibrated", True)
            compactor = Compactor(**options)
        elif options:
            raise TypeError("pass either a compactor or its options, not both")
        self.compactor = compactor
        self.last_result: Optional[CompactionResult] = None
        self.compactions = 0

    @staticmethod
    def _as_openai(messages: List[AnyMessage]) -> List[Dict[str, Any]]:
        converted: List[Dict[str, Any]] = convert_to_openai_messages(messages)
        return converted

    def _compacted(self, messages: List[AnyMessage], result: CompactionResult) -> Dict[str, Any]:
        self.last_result = result
        self.compactions += 1
        new_messages = convert_to_messages(result.messages)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *new_messages]}

    def before_model(self, state: AgentState, runtime: Runtime[Any]) -> Optional[Dict[str, Any]]:
        messages: List[AnyMessage] = list(state["messages"])
        wire = self._as_openai(messages)
        if not self.compactor.needs_compaction(wire, format="openai"):
            return None
        result = self.compactor.compact(wire, format="openai")
        if result.noop:
            return None
        return self._compacted(messages, result)

    async def abefore_model(self, state: AgentState, runtime: Runtime[Any]) -> Optional[Dict[str, Any]]:
        messages: List[AnyMessage] = list(state["messages"])
        wire = self._as_openai(messages)
        if not self.compactor.needs_compaction(wire, format="openai"):
            return None
        result = await self.compactor.compact_async(wire, format="openai")
        if result.noop:
            return None
        return self._compacted(messages, result)

    def after_model(self, state: AgentState, runtime: Runtime[Any]) -> Optional[Dict[str, Any]]:
        self._record_usage(list(state["messages"]))
        return None

    async def aafter_model(self, state: AgentState, runtime: Runtime[Any]) -> Optional[Dict[str, Any]]:
        self._record_usage(list(state["messages"]))
        return None

    def _record_usage(self, messages: List[AnyMessage]) -> None:
        """Feeds the model's billed input tokens for the messages it was sent (all but
        its own answer) to the calibrated counter."""
        if not self.compactor.calibrated or not messages or not isinstance(messages[-1], AIMessage):
            return
        answer = messages[-1]
        usage = answer.usage_metadata
        if not usage or not usage.get("input_tokens"):
            return
        details: Dict[str, Any] = dict(usage.get("input_token_details") or {})
        billed = {
            "input_tokens": int(usage["input_tokens"]),
            "output_tokens": int(usage.get("output_tokens", 0)),
            "cache_read_tokens": int(details.get("cache_read", 0) or 0),
            "cache_write_tokens": int(details.get("cache_creation", 0) or 0),
        }
        model = str(answer.response_metadata.get("model_name", ""))
        self.compactor.record_usage(self._as_openai(messages[:-1]), billed, model=model, format="openai")
