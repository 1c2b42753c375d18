"""Issue 44: every ```python block of the guides (docs/guide/*.md) runs as written, so the
book cannot rot. A block marked ``<!-- not run: REASON -->`` on the line before its fence
is not run (the Rust gauge, crates/compactor-cli/tests/docs_blocks.rs, requires the
reason); every other block is.

A page's blocks run in order, in one namespace (a page is one growing example), in a fresh
interpreter: this venv's, or target/py-sdks' when only that one has what the page imports
(the Anthropic SDK); top-level ``await`` is allowed. Against a scripted upstream on
127.0.0.1 that answers chat completions, Messages and Responses requests, and, when a
page names the proxy, the built ``compactor proxy`` in front of it (COMPACTOR_BIN, else
$CARGO_TARGET_DIR or target, then debug/compactor). What is substituted, and nothing else:

- ``127.0.0.1:8787`` (the proxy's default address) becomes the address of that proxy;
- names a block uses but no block of its page defines come from a prelude: ``messages``
  (the repo's example session, examples/sessions/long-agent-session.json), ``model`` (a
  LangChain ``ChatOpenAI`` on the scripted upstream), ``tools`` (``[]``) and ``agent`` (an
  Agents SDK ``Agent`` whose model is the scripted upstream); any other free name fails
  the test;
- the environment has ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` set to test keys,
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` set to the scripted upstream (a client built
  with no base URL reaches it, never the provider; one given the proxy's address goes
  through the proxy), and ``OPENAI_AGENTS_DISABLE_TRACING=1`` (no trace export leaves the
  machine).

A page whose blocks send a model request (``.create(``, ``.invoke(``, ``.run(``) must have
reached the upstream (through the proxy where the block names it).
Without the built binary or the page's SDKs the page is skipped with a notice, and fails
under CI=true.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
GUIDE = REPO / "docs" / "guide"
MARKER = "<!-- not run:"
PROXY_ADDR = "127.0.0.1:8787"
ANSWER = "upstream says hi"


def python_blocks(text: str) -> List[Tuple[int, str]]:
    """The page's unmarked ```python blocks: (line of the fence, source)."""
    out: List[Tuple[int, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            body: List[str] = []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            previous = lines[start - 1].strip() if start > 0 else ""
            if not previous.startswith(MARKER):
                out.append((start + 1, "\n".join(body) + "\n"))
        i += 1
    return out


def pages() -> List[pathlib.Path]:
    return sorted(p for p in GUIDE.glob("*.md") if python_blocks(p.read_text(encoding="utf-8")))


# -- the names a page uses but does not define ---------------------------------------

PRELUDE = {
    "messages": "import json as _json\nmessages = _json.loads(open({example!r}, encoding='utf-8').read())\n",
    "model": "from langchain_openai import ChatOpenAI as _Chat\nmodel = _Chat(model='gpt-4o-mini', base_url={upstream!r}, max_retries=0)\n",
    "tools": "tools = []\n",
    "agent": (
        "from openai import AsyncOpenAI as _AsyncOpenAI\n"
        "from agents import Agent as _Agent, OpenAIChatCompletionsModel as _Model\n"
        "agent = _Agent(name='coder', instructions='You are a careful coding agent.',\n"
        "               model=_Model(model='gpt-4o-mini', openai_client=_AsyncOpenAI(base_url={upstream!r}, max_retries=0)))\n"
    ),
}


def bound_by(node: ast.AST) -> set[str]:
    """The names a statement binds (its inner scopes' own names included)."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
            names.add(sub.id)
        elif isinstance(sub, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in sub.names)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(sub.name)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
    return names


def free_names(sources: List[str]) -> List[str]:
    """Names the blocks load before any of them binds them (builtins excepted), statement
    by statement in page order; a function's body is not searched."""
    bound = set(dir(builtins))
    free: set[str] = set()
    for source in sources:
        for stmt in ast.parse(source).body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(stmt.name)
                continue
            inner = {n for sub in ast.walk(stmt) if isinstance(sub, (ast.comprehension, ast.Lambda)) for n in bound_by(sub)}
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in bound | inner:
                    free.add(sub.id)
            bound |= bound_by(stmt)
    return sorted(free)


def imported_modules(sources: List[str]) -> List[str]:
    mods = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods.add(node.module.split(".")[0])
    return sorted(mods)


def test_free_names_and_markers_are_found() -> None:
    """The harness's own rules: a marked block is left out, free names are found."""
    page = "```python\nx = compact(messages)\n```\n\n<!-- not run: a reason -->\n```python\nboom()\n```\n"
    blocks = python_blocks(page)
    assert blocks == [(1, "x = compact(messages)\n")]
    assert free_names([b for _, b in blocks]) == ["compact", "messages"]
    assert free_names(["import os\ndef f(a):\n    return a + os.sep\n"]) == []
    # Used before it is bound (a later block rebinds it): still the prelude's.
    assert free_names(["r = f(messages)\n", "messages = r\nprint([m for m in messages])\n"]) == ["f", "messages"]


# -- the servers ------------------------------------------------------------------------


class Upstream:
    """Answers each route with the smallest valid reply and records the request."""

    def __init__(self) -> None:
        self.seen: List[Tuple[str, Dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                path = self.path.split("?")[0]
                outer.seen.append((path, body))
                data = json.dumps(outer.reply(path, body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @staticmethod
    def reply(path: str, body: Dict[str, Any]) -> Dict[str, Any]:
        model = body.get("model", "m")
        if path.endswith("/messages"):
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": ANSWER}], "stop_reason": "end_turn",
                    "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3}}
        if path.endswith("/responses"):
            return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": model,
                    "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                                "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}],
                    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                    "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13,
                              "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens_details": {"reasoning_tokens": 0}}}
        return {"id": "c", "object": "chat.completion", "created": 1, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def unavailable(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    print(f"NOTICE: skipping: {message}")
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start_proxy(upstream: str) -> Tuple[subprocess.Popen[bytes], str]:
    target = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", str(REPO / "target")))
    binary = pathlib.Path(os.environ.get("COMPACTOR_BIN", str(target / "debug" / "compactor")))
    if not binary.is_file():
        unavailable(f"no built compactor at {binary} (cargo build -p compactor-cli, or set COMPACTOR_BIN)")
    addr = f"127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.Popen(
        [str(binary), "proxy", "--listen", addr, "--upstream", upstream, "--store", "memory:", "--summarizer", "ledger"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the proxy exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", int(addr.split(":")[1])), timeout=1).close()
            return proc, addr
        except OSError:
            time.sleep(0.05)
    proc.kill()
    pytest.fail("the proxy did not listen within 60 s")
    raise AssertionError  # unreachable


def interpreter(modules: List[str]) -> str:
    """This venv's python, else target/py-sdks', whichever imports all of `modules`."""
    if all(importlib.util.find_spec(m) is not None for m in modules):
        return sys.executable
    for python in [str(REPO / "target" / "py-sdks" / "bin" / "python")]:
        if pathlib.Path(python).is_file():
            probe = subprocess.run([python, "-c", "import " + ", ".join(modules)], capture_output=True, check=False)
            if probe.returncode == 0:
                return python
    unavailable(f"no interpreter imports {modules} (scripts/python-package.sh, scripts/python-sdks.sh)")
    raise AssertionError  # unreachable


RUNNER = r"""
import ast, asyncio, inspect, json, sys
job = json.loads(sys.stdin.read())
loop = asyncio.new_event_loop()
namespace = {"__name__": "__guide__"}
exec(compile(job["prelude"], "prelude", "exec"), namespace)
for block in job["blocks"]:
    code = compile(block["source"], block["label"], "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        loop.run_until_complete(result)
    print(f"== ran {block['label']}", flush=True)
"""


@pytest.fixture()
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_the_guide_page_python_blocks_run(page: pathlib.Path, upstream: Upstream) -> None:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    sources = [source for _, source in blocks]
    missing = [n for n in free_names(sources) if n not in PRELUDE]
    assert not missing, f"{page.name}: the blocks use {missing}, which no block defines and the harness does not provide"
    proxy: Optional[subprocess.Popen[bytes]] = None
    addr = PROXY_ADDR
    if any(PROXY_ADDR in s for s in sources):
        proxy, addr = start_proxy(upstream.origin)
    try:
        python = interpreter(imported_modules(sources))
        values = {"example": str(REPO / "examples" / "sessions" / "long-agent-session.json"), "upstream": upstream.origin + "/v1"}
        prelude = "".join(PRELUDE[n].format(**values) for n in free_names(sources))
        job = {
            "prelude": prelude,
            "blocks": [{"label": f"docs/guide/{page.name}:{line}", "source": s.replace(PROXY_ADDR, addr)} for line, s in blocks],
        }
        env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
        env.update(OPENAI_API_KEY="sk-guide", ANTHROPIC_API_KEY="sk-ant-guide", OPENAI_AGENTS_DISABLE_TRACING="1",
                   OPENAI_BASE_URL=upstream.origin + "/v1", ANTHROPIC_BASE_URL=upstream.origin)
        done = subprocess.run([python, "-c", RUNNER], input=json.dumps(job), capture_output=True, text=True,
                              env=env, cwd=str(REPO), timeout=300, check=False)
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=30)
    assert done.returncode == 0, f"{page.name}:\n{done.stdout}\n{done.stderr}"
    assert done.stdout.count("== ran ") == len(blocks), done.stdout
    calls = re.compile(r"\.(create|invoke|run)\(")
    if any(calls.search(s) for s in sources):
        assert upstream.seen, f"{page.name}: a block sent a model request, and the upstream saw none"
    print(f"{page.name}: {len(blocks)} python blocks ran ({len(upstream.seen)} upstream requests)\n{done.stdout}")
