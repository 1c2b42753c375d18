"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the adapters'
tests: the real SDKs (langchain-openai, openai-agents) talk HTTP to it.

Each request is recorded (its messages, its tools, and its o200k count by the real
library) and answered by the test's ``script(request, round)`` callable, which returns
an assistant message dict (``content`` and/or ``tool_calls``). The usage it reports is
the request's real o200k count, as a provider would bill it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List

import llm_compactor

Script = Callable[[Dict[str, Any], int], Dict[str, Any]]


@dataclass
class Recorded:
    messages: List[Dict[str, Any]]
    tools: List[Dict[str, Any]]
    tokens: int


@dataclass
class ScriptedServer:
    script: Script
    requests: List[Recorded] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    reply = outer.answer(body)
                    data = json.dumps(reply).encode()
                    self.send_response(200)
                except Exception as e:  # the test sees it in `errors`
                    outer.errors.append(repr(e))
                    data = json.dumps({"error": {"message": repr(e)}}).encode()
                    self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        messages = body["messages"]
        tools = body.get("tools", [])
        tokens = llm_compactor.count_tokens(messages, format="openai")
        if tools:
            tokens += llm_compactor.count_tokens([{"role": "system", "content": json.dumps(tools)}], format="openai")
        self.requests.append(Recorded(messages, tools, tokens))
        message = self.script(body, len(self.requests) - 1)
        message.setdefault("role", "assistant")
        message.setdefault("content", None)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 10, "total_tokens": tokens + 10},
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def orphans(messages: List[Dict[str, Any]]) -> List[str]:
    """Tool results without their call, and calls without their result, in one request."""
    problems: List[str] = []
    open_calls: Dict[str, int] = {}
    answered = set()
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or []:
            open_calls[call["id"]] = i
        if m.get("role") == "tool":
            cid = m.get("tool_call_id")
            if cid not in open_calls:
                problems.append(f"message {i}: tool result {cid} has no call before it")
            answered.add(cid)
    for cid, i in open_calls.items():
        if cid not in answered:
            problems.append(f"message {i}: call {cid} has no result")
    return problems
